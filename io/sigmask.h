/* The rules that keep a thread's SIGSEGV and SIGBUS (dsp_guard_mask,
 * io/guard.h) across the program's signal-mask calls without asking the
 * kernel at every io_submit (issue 29: that one rt_sigprocmask was the
 * hook's whole cost). preload/sigcalls.c hooks the calls and applies them;
 * tests/unit/test_sigmask.c checks them against every mask.
 *
 * Each call gets a rule: CLOSE sets the state CLOSED before the real call, so
 * that a signal handler running in between never sees OPEN while either
 * signal is blocked; ASK sets it UNKNOWN after, so that the next io_submit
 * asks the kernel once. Never OPEN: a handler that unblocks and returns gets
 * its thread's old mask back from the kernel (sigreturn), which no hook sees;
 * only a question to the kernel sets OPEN. A call that names neither signal
 * gets no rule (one or two branches). */
#ifndef DSP_SIGMASK_H
#define DSP_SIGMASK_H

#include "guard.h"

#include <signal.h>

enum {
    DSP_SIGMASK_CLOSE = 1,      /* CLOSED before the real call */
    DSP_SIGMASK_ASK = 2,        /* UNKNOWN after it */
    DSP_SIGMASK_ASK_FAILED = 4, /* UNKNOWN after it if it failed */
};

/* glibc's sigset_t: signal n is bit n-1 of the first word. */
#define DSP_SIGMASK_TRACKED ((1ul << (SIGSEGV - 1)) | (1ul << (SIGBUS - 1)))

static inline unsigned long dsp_sigmask_bits(const sigset_t *s) {
    return s->__val[0] & DSP_SIGMASK_TRACKED;
}

/* pthread_sigmask and sigprocmask (how, set). A failed call may have left the
 * mask as it was, with CLOSED already stored: asked again. */
static inline int dsp_sigmask_change(int how, const sigset_t *set) {
    if (!set) return 0;
    unsigned long bits = dsp_sigmask_bits(set);
    int unblocks =
        how == SIG_UNBLOCK ? bits != 0 : how == SIG_SETMASK && bits != DSP_SIGMASK_TRACKED;
    return (bits && how != SIG_UNBLOCK ? DSP_SIGMASK_CLOSE : 0) | (unblocks ? DSP_SIGMASK_ASK : 0) |
           DSP_SIGMASK_ASK_FAILED;
}

/* A call that waits under the temporary mask m (sigsuspend, ppoll, pselect,
 * epoll_pwait, io_pgetevents...): a handler that runs meanwhile has m, and
 * the thread's own mask comes back after. */
static inline int dsp_sigmask_temp(const sigset_t *m) {
    return m && dsp_sigmask_bits(m) ? DSP_SIGMASK_CLOSE | DSP_SIGMASK_ASK : 0;
}

/* The BSD and System V forms (sigblock, sigsetmask, sighold, sigset, the
 * sigpause family): conservatively, CLOSED before and UNKNOWN after any call
 * that may name either signal. */
static inline int dsp_sigmask_names(int touches) {
    return touches ? DSP_SIGMASK_CLOSE | DSP_SIGMASK_ASK : 0;
}

/* A BSD mask (sigblock): signal n is bit n-1. */
static inline int dsp_sigmask_bsd_touches(int mask) {
    return ((unsigned long)(unsigned)mask & DSP_SIGMASK_TRACKED) != 0;
}

/* One signal (sighold, sigrelse, sigset). */
static inline int dsp_sigmask_sig_touches(int sig) {
    return sig == SIGSEGV || sig == SIGBUS;
}

/* sigrelse(sig), which only unblocks: nothing before, asked after. */
static inline int dsp_sigmask_release(int sig) {
    return dsp_sigmask_sig_touches(sig) ? DSP_SIGMASK_ASK : 0;
}

/* The state a long jump or a context switch that installs mask m leaves. */
static inline int dsp_sigmask_installed(const sigset_t *m) {
    return dsp_sigmask_bits(m) ? DSP_MASK_CLOSED : DSP_MASK_UNKNOWN;
}

/* The calling thread's state: the store, then a compiler barrier, so that a
 * signal handler that interrupts the real call after it sees it. */
static inline void dsp_sigmask_set(int state) {
    __atomic_store_n(&dsp_guard_mask, state, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void dsp_sigmask_before(int rule) {
    if (rule & DSP_SIGMASK_CLOSE) dsp_sigmask_set(DSP_MASK_CLOSED);
}

/* failed: whether the real call failed (looked at where the rule says). */
static inline void dsp_sigmask_after(int rule, int failed) {
    if ((rule & DSP_SIGMASK_ASK) || ((rule & DSP_SIGMASK_ASK_FAILED) && failed))
        dsp_sigmask_set(DSP_MASK_UNKNOWN);
}

/* rule's state around call, an expression of type T; failed(r) says whether
 * its result r is a failure (DSP_SIGMASK_NEVER where no result is one). */
#define DSP_SIGMASK_NEVER(r) 0
#define DSP_SIGMASK_AROUND(rule, T, call, failed)                                                  \
    ({                                                                                             \
        int rule_ = (rule);                                                                        \
        dsp_sigmask_before(rule_);                                                                 \
        T r_ = (call);                                                                             \
        dsp_sigmask_after(rule_, failed(r_));                                                      \
        r_;                                                                                        \
    })

#endif
