#ifndef DSP_MEMLOCK_H
#define DSP_MEMLOCK_H

#include <stddef.h>
#include <stdint.h>

/* memlock.c: the program's own mlockall/mlock with the shim present. The
 * exception to the core's -errno: each returns 0, or -1 and errno, as the
 * system call. */
/* mlockall(flags) that never counts reserved-only address space as locked
 * (the kernel's MCL_CURRENT check compares all of VmSize with RLIMIT_MEMLOCK)
 * and, refused for the limit while the pool holds blocks, gives the pool back
 * (dsp_trim) and tries once more. 0, or -1 and errno, as the system call. */
int dsp_arena_mlockall(int flags);
/* mlock (mlock2 when two) with the same retry: the program's quota comes
 * first. 0, or -1 and errno, as the system call. */
int dsp_mlock_with_room(const void *addr, size_t len, int two, unsigned flags);

#endif
