/* Facts about the machine and the process, read at init or on slow paths
 * (never on hot paths). */
#ifndef DSP_SYS_H
#define DSP_SYS_H

#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

/* The pid that ran the library's constructors (the program's, or a fork
 * child's whose parent forked inside an earlier constructor). One getpid
 * there, shared by every part that needs the pid at start-up: the
 * constructor added three (issue 29). */
extern pid_t dsp_loaded_pid;
/* getpid(), without the system call on the thread that runs the library's
 * constructor between dsp_sys_in_constructor(1) and (0): that thread is in
 * the process that loaded the library. Per thread, so that the child of a
 * fork by another thread at that moment asks the kernel. */
pid_t dsp_sys_pid(void);
void dsp_sys_in_constructor(int on);

size_t dsp_sys_ram(void);       /* physical memory in bytes */
int dsp_sys_cpus(void);         /* CPUs this process may run on, at least 1 */
int dsp_sys_has_ipc_lock(void); /* 1 with CAP_IPC_LOCK in the effective set, else 0 */
/* RLIMIT_MEMLOCK soft limit in bytes, (size_t)-1 when unlimited. */
size_t dsp_sys_memlock_limit(void);

/* Small files of /proc and /sys, without allocating (these run inside
 * malloc): the file's first cap-1 bytes, NUL-terminated; their length, or
 * -errno of open (buf untouched then). */
long dsp_sys_read(const char *path, char *buf, size_t cap);
/* The shim's own files, opened (O_CLOEXEC added; -1 and errno) and closed
 * with the system calls, past its fd hooks (sys.c says why). */
int dsp_sys_open(const char *path, int flags);
void dsp_sys_close(int fd);
/* The number a file starts with: 1 and *v (SIZE_MAX for "max", as cgroup v2
 * writes no limit, or for an overflow), 0 when the file is missing or does
 * not start with one. */
int dsp_sys_read_size(const char *path, size_t *v);

/* NUMA (numa.c, pin.c), each a function of its own so that the unit tests
 * can replace it (--wrap) and simulate a machine of several nodes.
 * dsp_sys_cpu: the CPU the calling thread runs on (sched_getcpu: rseq or
 * the vDSO, no system call), -1 when unknown. dsp_sys_bind_node: binds
 * [base, base+len), mapped and not yet populated, to node with
 * MPOL_PREFERRED (mbind, the raw system call: no libnuma), 0 or -errno.
 * dsp_sys_page_node: the node holding the populated page at p
 * (get_mempolicy MPOL_F_NODE | MPOL_F_ADDR), or -errno. */
int dsp_sys_cpu(void);
int dsp_sys_bind_node(void *base, size_t len, int node);
int dsp_sys_page_node(const void *p);

/* CPU time of the calling thread in nanoseconds (CLOCK_THREAD_CPUTIME_ID):
 * what populating a huge page costs, without the time another process had
 * the CPU (pin.c). A function of its own so that the unit tests can replace
 * the clock (--wrap) and force a huge page slow. */
uint64_t dsp_sys_thread_ns(void);
/* CLOCK_MONOTONIC in ns (the vDSO: no system call). */
uint64_t dsp_sys_mono_ns(void);

#endif
