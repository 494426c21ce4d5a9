#ifndef DSP_MEMCALLS_H
#define DSP_MEMCALLS_H

#include <stddef.h>
#include <stdint.h>

/* memcalls.c: the program's own memory calls on arena memory (munlock,
 * munlockall, mprotect, madvise). The exception to the core's -errno: each
 * dsp_mem_* call but dsp_mem_in_arena returns 0, or -1 and errno, as the
 * system call. */
int dsp_mem_in_arena(const void *addr, size_t len);         /* 1 on any overlap, else 0 */
int dsp_mem_mlock(const void *addr, size_t len, int flags); /* flags < 0: mlock, else mlock2 */
int dsp_mem_munlock(const void *addr, size_t len);
int dsp_mem_munlockall(void);
int dsp_mem_mprotect(void *addr, size_t len, int prot);
int dsp_mem_madvise(void *addr, size_t len, int advice);

#endif
