/* The rules that keep a thread's SIGSEGV and SIGBUS without asking the kernel
 * (io/sigmask.h, issue 29), checked against every mask: whatever the thread
 * blocked before, whatever a call asks, the state the shim keeps is never
 * OPEN while either signal is blocked, before the call, during it (where a
 * signal handler may read it) or after. A stale OPEN makes the libaio hooks
 * load from a bad pointer with SIGSEGV blocked, which kills the process. */
#include "sigmask.h"

#include "harness.h"
#include <string.h>

DSP_TLS int dsp_guard_mask;

#define SEGV (1ul << (SIGSEGV - 1))
#define BUS  (1ul << (SIGBUS - 1))
#define USR1 (1ul << (SIGUSR1 - 1))

/* The two tracked signals of a mask, as sigset_t's first word has them. */
static sigset_t set_of(unsigned long bits) {
    sigset_t s;
    sigemptyset(&s);
    if (bits & SEGV) sigaddset(&s, SIGSEGV);
    if (bits & BUS) sigaddset(&s, SIGBUS);
    if (bits & USR1) sigaddset(&s, SIGUSR1);
    return s;
}

/* What the kernel's mask becomes. */
static unsigned long applied(int how, unsigned long old, unsigned long set) {
    return how == SIG_BLOCK ? old | set : how == SIG_UNBLOCK ? old & ~set : set;
}

/* The state is true to mask: OPEN only with neither blocked; where it lasts
 * (after a call), CLOSED only with one, or the kernel is never asked again
 * and the thread reads caller memory the slow way for good. */
static void true_to(int state, unsigned long mask, const char *when, int how, unsigned long old,
                    unsigned long set) {
    unsigned long tracked = mask & (SEGV | BUS);
    cr_assert(state != DSP_MASK_OPEN || !tracked,
              "%s: OPEN with %#lx blocked (how %d, old %#lx, set %#lx)", when, tracked, how, old,
              set);
    cr_assert(strncmp(when, "after", 5) != 0 || state != DSP_MASK_CLOSED || tracked,
              "%s: CLOSED with neither blocked (how %d, old %#lx, set %#lx): the kernel is never "
              "asked again",
              when, how, old, set);
}

/* The state the thread may start a call in, for its old mask: what a query
 * of the kernel answers, or UNKNOWN. */
static int states_of(unsigned long old, int *out) {
    out[0] = DSP_MASK_UNKNOWN;
    out[1] = old & (SEGV | BUS) ? DSP_MASK_CLOSED : DSP_MASK_OPEN;
    return 2;
}

static const unsigned long subsets[] = {0, SEGV, BUS, SEGV | BUS, USR1, SEGV | USR1, BUS | USR1};
#define NSUB (sizeof subsets / sizeof *subsets)

Test(sigmask, pthread_sigmask_and_sigprocmask_keep_the_state_true_for_every_mask) {
    const int hows[] = {SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK};
    for (int h = 0; h < 3; h++)
        for (size_t o = 0; o < NSUB; o++)
            for (size_t n = 0; n < NSUB; n++) {
                int how = hows[h], starts[2];
                unsigned long old = subsets[o], set = subsets[n], now = applied(how, old, set);
                sigset_t s = set_of(set);
                for (int k = 0, ns = states_of(old, starts); k < ns; k++) {
                    dsp_guard_mask = starts[k];
                    int rule = dsp_sigmask_change(how, &s);
                    dsp_sigmask_before(rule);
                    /* A handler may run with either mask meanwhile. */
                    true_to(dsp_guard_mask, old, "before the call", how, old, set);
                    true_to(dsp_guard_mask, now, "during the call", how, old, set);
                    dsp_sigmask_after(rule, 0);
                    true_to(dsp_guard_mask, now, "after the call", how, old, set);
                }
            }
}

/* A failed call leaves the old mask: the CLOSED stored before it must not stay. */
Test(sigmask, a_failed_call_is_asked_again) {
    sigset_t s = set_of(SEGV);
    dsp_guard_mask = DSP_MASK_OPEN;
    int rule = dsp_sigmask_change(12345, &s); /* EINVAL */
    dsp_sigmask_before(rule);
    cr_assert_eq(dsp_guard_mask, DSP_MASK_CLOSED);
    dsp_sigmask_after(rule, 1);
    cr_assert_eq(dsp_guard_mask, DSP_MASK_UNKNOWN);
}

/* A query, and calls that name neither signal, leave the state alone: no
 * store in the common case. */
Test(sigmask, calls_that_name_neither_signal_change_nothing) {
    sigset_t usr1 = set_of(USR1);
    cr_assert_eq(dsp_sigmask_change(SIG_BLOCK, NULL), 0);
    cr_assert_eq(dsp_sigmask_change(SIG_BLOCK, &usr1) & ~DSP_SIGMASK_ASK_FAILED, 0);
    cr_assert_eq(dsp_sigmask_change(SIG_UNBLOCK, &usr1) & ~DSP_SIGMASK_ASK_FAILED, 0);
    cr_assert_eq(dsp_sigmask_temp(&usr1), 0);
    cr_assert_eq(dsp_sigmask_temp(NULL), 0);
    cr_assert_eq(dsp_sigmask_names(dsp_sigmask_bsd_touches((int)USR1)), 0);
    cr_assert_eq(dsp_sigmask_names(dsp_sigmask_sig_touches(SIGUSR1)), 0);
    cr_assert_eq(dsp_sigmask_release(SIGUSR1), 0);
    dsp_guard_mask = DSP_MASK_OPEN;
    dsp_sigmask_before(DSP_SIGMASK_ASK_FAILED);
    dsp_sigmask_after(DSP_SIGMASK_ASK_FAILED, 0);
    cr_assert_eq(dsp_guard_mask, DSP_MASK_OPEN);
}

/* sigsuspend, ppoll, io_pgetevents...: a handler runs under the temporary
 * mask; the thread's own comes back after, and is asked again. */
Test(sigmask, a_temporary_mask_is_closed_during_and_asked_after) {
    for (size_t t = 0; t < NSUB; t++) {
        sigset_t m = set_of(subsets[t]);
        dsp_guard_mask = DSP_MASK_OPEN;
        int rule = dsp_sigmask_temp(&m);
        dsp_sigmask_before(rule);
        true_to(dsp_guard_mask, subsets[t], "during the wait", 0, 0, subsets[t]);
        dsp_sigmask_after(rule, 0);
        cr_assert(subsets[t] & (SEGV | BUS) ? dsp_guard_mask == DSP_MASK_UNKNOWN
                                            : dsp_guard_mask == DSP_MASK_OPEN);
    }
}

/* The BSD and System V forms: any that may block either signal closes the
 * state before; any that may unblock one asks after. */
Test(sigmask, bsd_and_system_v_forms) {
    cr_assert_eq(dsp_sigmask_names(dsp_sigmask_bsd_touches((int)BUS)),
                 DSP_SIGMASK_CLOSE | DSP_SIGMASK_ASK);
    cr_assert_eq(dsp_sigmask_names(dsp_sigmask_sig_touches(SIGSEGV)),
                 DSP_SIGMASK_CLOSE | DSP_SIGMASK_ASK);
    cr_assert_eq(dsp_sigmask_release(SIGBUS), DSP_SIGMASK_ASK);
}

/* A long jump or a context switch installs a saved mask: CLOSED where it
 * blocks either, else asked (never OPEN: the saved mask may be stale). */
Test(sigmask, a_jump_installs_closed_or_unknown_never_open) {
    for (size_t t = 0; t < NSUB; t++) {
        sigset_t m = set_of(subsets[t]);
        int st = dsp_sigmask_installed(&m);
        cr_assert_neq(st, DSP_MASK_OPEN);
        true_to(st, subsets[t], "after the jump", 0, 0, subsets[t]);
    }
}
