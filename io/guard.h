/* Reading and writing the caller's memory without crashing on a bad pointer.
 *
 * Without the shim, a bad iocb array or buffer address makes the kernel return
 * -EFAULT; the shim reads the same memory first, in user space, and must give
 * the same answer instead of a segmentation fault. A system call that checks
 * addresses (process_vm_readv) costs 2 us here, more than io_submit itself, so
 * the guarded regions run plain loads under a SIGSEGV/SIGBUS handler that
 * jumps out of them; every other fault goes on to the handler that was there
 * before (or the default action), unchanged. docs/io.md lists the limit: a
 * handler the application installs later without chaining replaces ours. */
#ifndef DSP_GUARD_H
#define DSP_GUARD_H

#include <setjmp.h>
#include <stddef.h>

#include "../src/internal.h"

/* Installs the handler once: 0, or -errno. Call before the first guarded region. */
int dsp_guard_install(void);

extern DSP_TLS sigjmp_buf *dsp_guard_jmp;

/* DSP_GUARDED(failed) { loads and stores of caller memory } : the block runs
 * with faults turned into a jump that sets `failed` to 1. The block must take
 * no lock, allocate nothing and leave nothing half-done that matters (it is
 * abandoned at the faulting access). Not nestable. */
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
 * (NULL and small integers) and addresses past the user half. The guard cannot
 * catch faults in a thread that blocks SIGSEGV (the kernel then kills the
 * process outright); this check catches the common bad pointers even there. */
static inline int dsp_guard_plausible(uintptr_t p, size_t n) {
    return p >= 65536 && p + n >= p && p + n <= (uintptr_t)1 << 56;
}

/* memcpy that answers -EFAULT (with dst partly written) instead of faulting. */
int dsp_guard_copy(void *dst, const void *src, size_t n);

/* 0 when the first and the last byte of [p, p+n) can be read, else -EFAULT. */
int dsp_guard_probe_ends(const void *p, size_t n);

#endif
