/* Facts about the machine and the process, read at init (never on hot paths). */
#ifndef DSP_SYS_H
#define DSP_SYS_H

#include <stddef.h>

size_t dsp_sys_ram(void);       /* physical memory in bytes */
int dsp_sys_cpus(void);         /* CPUs this process may run on, at least 1 */
int dsp_sys_has_ipc_lock(void); /* CAP_IPC_LOCK in the effective set */
/* RLIMIT_MEMLOCK soft limit in bytes, (size_t)-1 when unlimited. */
size_t dsp_sys_memlock_limit(void);

#endif
