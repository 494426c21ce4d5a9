/* Reading and writing the caller's memory without crashing on a bad pointer.
 *
 * Without the shim, a bad iocb array or buffer address makes the kernel return
 * -EFAULT; the shim reads the same memory first, in user space, and must give
 * the same answer instead of a segmentation fault. A system call that checks
 * addresses (process_vm_readv) costs more than io_submit's hook (io.md, "Bad
 * pointers"), so in a thread where a fault can reach our handler the guarded
 * regions run plain loads under a SIGSEGV/SIGBUS handler that jumps out of
 * them; every other fault and every sent signal goes on to the handler that
 * was there before, called as the kernel would have called it, or gets the
 * action that was there before (ignored, default). A thread that blocks
 * SIGSEGV or SIGBUS cannot take a fault (the kernel kills the process), so
 * there the copies go through process_vm_readv and the regions do not run.
 * docs/io.md lists the limits: a handler the application installs later
 * without chaining replaces ours. */
#ifndef DSP_GUARD_H
#define DSP_GUARD_H

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Installs the handler once: 0, or -errno. Call before the first guarded region. */
int dsp_guard_install(void);

extern DSP_TLS sigjmp_buf *dsp_guard_jmp;

/* 1 while the calling thread is known to take faults in our handler (neither
 * SIGSEGV nor SIGBUS blocked): only then may a DSP_GUARDED block run. 0 (the
 * default, and in a thread that blocks either) means checked copies only. */
extern DSP_TLS int dsp_guard_faults_ok;

/* The calling thread's SIGSEGV and SIGBUS as the shim knows them without
 * asking the kernel (issue 29: one rt_sigprocmask per io_submit was the hook's
 * whole cost), kept by the rules of io/sigmask.h: only a query of the kernel
 * sets OPEN, so OPEN is never stale towards "blocked" for any change made
 * through the hooked calls, a signal handler that interrupts them included.
 * 0 (UNKNOWN) in a new thread. */
enum { DSP_MASK_UNKNOWN = 0, DSP_MASK_OPEN = 1, DSP_MASK_CLOSED = 2 };
extern DSP_TLS int dsp_guard_mask;

/* Non-zero when the tracked mask cannot be trusted, so that every
 * dsp_guard_enter asks the kernel: the interposers are not the ones the
 * program reaches (a sanitizer runtime or another preload in front of ours),
 * or some signal handler runs with SIGSEGV or SIGBUS blocked (its sa_mask),
 * where a hook it calls would see the interrupted code's mask. Set at
 * dsp_guard_install and by the sigaction hook; never cleared. */
extern int dsp_guard_ask;

/* Sets dsp_guard_faults_ok from the calling thread's signal mask (tracked;
 * one system call in a thread's first call, or each call with dsp_guard_ask)
 * and returns the previous value, for dsp_guard_leave. Every hook that
 * reads or writes caller memory brackets that work with the two, except
 * io_submit's fast path, which only reads iocbs with dsp_guard_iocb_words
 * where the tracked mask is open and trusted (io/aio_classify.h,
 * dsp_aio_fast_thread); the mask cannot change in between (a signal handler
 * that runs meanwhile restores it on return, and brackets its own calls). */
int dsp_guard_enter_slow(int prev);
static inline int dsp_guard_enter(void) {
    int prev = dsp_guard_faults_ok;
    int m = __atomic_load_n(&dsp_guard_mask, __ATOMIC_RELAXED);
    /* Inline, the query out of line: as a call, the query's frame made every
     * io_submit save and restore six registers (issue 29, fio on tmpfs). */
    if (__builtin_expect(m == DSP_MASK_UNKNOWN || __atomic_load_n(&dsp_guard_ask, __ATOMIC_RELAXED),
                         0))
        return dsp_guard_enter_slow(prev);
    dsp_guard_faults_ok = m == DSP_MASK_OPEN;
    return prev;
}
static inline void dsp_guard_leave(int prev) {
    dsp_guard_faults_ok = prev;
}

/* For the sigaction hook and the check at install (of the signals the kernel
 * lists with a handler, SigCgt): sets dsp_guard_ask when a
 * handler for sig would run with SIGSEGV or SIGBUS blocked. SIGSEGV's and
 * SIGBUS's own are not counted: ours stands in their place and calls them
 * through pthread_sigmask (chain), which the tracking sees. */
void dsp_guard_note_handler(int sig, const struct sigaction *act);

/* 1 when the program reaches the shim's signal-mask interposers
 * (preload/sigcalls.c) and not another definition in front of them. */
int dsp_sigcalls_bound(void);

/* DSP_GUARDED(failed) { loads and stores of caller memory } : the block runs
 * with faults turned into a jump that sets `failed` to 1. The block must take
 * no lock, allocate nothing and leave nothing half-done that matters (it is
 * abandoned at the faulting access). Not nestable. Only where faults reach
 * the handler: dsp_guard_faults_ok set, or the tracked mask open and trusted
 * (dsp_guard_iocb_words). */
#define DSP_GUARD_BEGIN(failed)                                                                    \
    do {                                                                                           \
        sigjmp_buf dsp_guard_env_;                                                                 \
        (failed) = 0;                                                                              \
        if (sigsetjmp(dsp_guard_env_, 0) != 0) {                                                   \
            (failed) = 1;                                                                          \
        } else {                                                                                   \
            __atomic_store_n(&dsp_guard_jmp, &dsp_guard_env_, __ATOMIC_RELAXED);                   \
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
#define DSP_GUARD_END()                                                                            \
    }                                                                                              \
    __atomic_signal_fence(__ATOMIC_SEQ_CST);                                                       \
    __atomic_store_n(&dsp_guard_jmp, NULL, __ATOMIC_RELAXED);                                      \
    }                                                                                              \
    while (0)

/* Rules out, without touching it, memory no process can map: the first 64 KiB
 * (NULL and small integers) and addresses past the user half. 1 when [p, p+n)
 * may be mapped, else 0. */
static inline int dsp_guard_plausible(uintptr_t p, size_t n) {
    return p >= 65536 && p + n >= p && p + n <= DSP_USER_VA_END;
}

/* memcpy that answers -EFAULT (with dst partly written) instead of faulting:
 * either side may be the caller's. Guarded loads, or process_vm_readv when
 * dsp_guard_faults_ok is 0. */
int dsp_guard_copy(void *dst, const void *src, size_t n);

/* 0 when the first and the last byte of [p, p+n) can be read, else -EFAULT. */
int dsp_guard_probe_ends(const void *p, size_t n);

/* Checked copies of many pieces at once (process_vm_readv): piece i of size
 * `each` from src[i] to dst + i * each, in order, stopping at the first that
 * cannot be read whole. Returns how many were copied whole. For
 * dsp_guard_faults_ok == 0; n at most 256. */
long dsp_guard_gather(void *dst, const void *const *src, size_t each, long n);

/* For io_submit's fast path (issue 29: sigsetjmp and the guard's set-up were
 * a third of the hook's instructions): for each of n iocb pointers in ios,
 * the four words at byte 16 of the iocb (opcode and fd, as opcode | fd << 32;
 * buf; nbytes; offset) into out[4 * i ...]. Returns how many iocbs were read
 * whole: fewer than n where a load faults or an iocb pointer fails
 * dsp_guard_plausible (not loaded; the caller checks the array itself). Only
 * in a thread that takes its faults in the guard's handler (SIGSEGV and
 * SIGBUS not blocked). On x86-64 (DSP_GUARD_IOCB_WORDS) a routine in
 * assembly whose faults the handler resumes at its exit, by the faulting
 * instruction's address: no jump buffer; elsewhere C under DSP_GUARD_BEGIN. */
#if defined(__x86_64__)
#define DSP_GUARD_IOCB_WORDS 1
#else
#define DSP_GUARD_IOCB_WORDS 0
#endif
long dsp_guard_iocb_words(void *const *ios, long n, uint64_t *out);

/* 1 when process_vm_readv works on our own memory (seccomp may refuse it),
 * else 0: without it a thread that blocks SIGSEGV or SIGBUS cannot examine
 * caller memory at all, and its I/O passes through unexamined. */
int dsp_guard_checked_ok(void);

#endif
