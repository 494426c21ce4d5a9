/* The program's signal-mask calls, seen so that the libaio hooks know whether
 * the calling thread blocks SIGSEGV or SIGBUS without asking the kernel at
 * every io_submit (issue 29: that one rt_sigprocmask was the hook's whole
 * cost). Each hook updates the thread's dsp_guard_mask (io/guard.h) and calls
 * the real function:
 * - a call that may block either sets CLOSED before the real call, so a
 *   signal handler that runs in between never sees OPEN while one is blocked;
 * - a call that may unblock either, or that fails, sets UNKNOWN after it: the
 *   next io_submit asks the kernel once. Never OPEN: a handler that unblocks
 *   and returns gets its thread's old mask back from the kernel (sigreturn),
 *   which no hook sees.
 * Calls that change the mask and are no hook's (a raw rt_sigprocmask system
 * call) are not seen: docs/io.md lists them. A call that names neither signal
 * costs one or two branches. Where another definition is reached before these
 * (a sanitizer runtime), dsp_sigcalls_bound() says so and the hooks ask the
 * kernel every time, as before. */
/* Compiled without _FORTIFY_SOURCE whatever the build flags say (Debian's
 * dpkg-buildflags and Ubuntu's compiler turn it on): <setjmp.h> then renames
 * longjmp, _longjmp and siglongjmp to __longjmp_chk at the assembly level,
 * so the hooks below would all be emitted as one symbol, which the assembler
 * refuses (issue 31, the Debian package's build). */
#undef _FORTIFY_SOURCE
#include "guard.h"
#include "internal.h"
#include "real.h"
#include "symbols.h"

#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <ucontext.h>

#ifndef DSP_NO_LIBC_HOOKS
typedef void (*longjmp_chk_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
typedef int (*int_fn)(int);
typedef int (*int2_fn)(int, int);
typedef __sighandler_t (*sigset_fn)(int, __sighandler_t);
typedef int (*ppoll_chk_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *,
                            size_t);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
                               const sigset_t *);
// clang-format off
#define SIG_HOOKS(X)                                                                               \
    X(__typeof__(&pthread_sigmask), pthread_sigmask) X(__typeof__(&sigprocmask), sigprocmask)      \
    X(__typeof__(&sigaction), sigaction) X(__typeof__(&siglongjmp), siglongjmp)                    \
    X(__typeof__(&longjmp), longjmp) X(__typeof__(&longjmp), _longjmp)                             \
    X(longjmp_chk_fn, __longjmp_chk)                                                               \
    X(__typeof__(&setcontext), setcontext) X(__typeof__(&swapcontext), swapcontext)                \
    X(int_fn, sigblock) X(int_fn, sigsetmask) X(int_fn, sighold) X(int_fn, sigrelse)               \
    X(sigset_fn, sigset) X(__typeof__(&sigsuspend), sigsuspend) X(__typeof__(&ppoll), ppoll)       \
    X(ppoll_chk_fn, __ppoll_chk) X(__typeof__(&pselect), pselect)                                  \
    X(__typeof__(&epoll_pwait), epoll_pwait) X(epoll_pwait2_fn, epoll_pwait2)                      \
    X(int_fn, sigpause) X(int2_fn, __sigpause) X(int_fn, __xpg_sigpause)
// clang-format on
SIG_HOOKS(DSP_REAL_DECL)

/* glibc's sigset_t: signal n is bit n-1 of the first word. */
#define TRACKED ((1ul << (SIGSEGV - 1)) | (1ul << (SIGBUS - 1)))

static inline unsigned long tracked_bits(const sigset_t *s) {
    return s->__val[0] & TRACKED;
}

static inline void set_mask(int m) {
    __atomic_store_n(&dsp_guard_mask, m, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* before the real call, for a handler */
}

/* Before a mask change (how, set): 1 when it may unblock one of the two. */
static inline int mask_before(int how, const sigset_t *set) {
    if (!set) return 0;
    unsigned long bits = tracked_bits(set);
    if (bits && how != SIG_UNBLOCK) set_mask(DSP_MASK_CLOSED);
    return how == SIG_UNBLOCK ? bits != 0 : how == SIG_SETMASK && bits != TRACKED;
}

static inline void mask_after(int unblocks, int failed) {
    if (unblocks || failed) set_mask(DSP_MASK_UNKNOWN);
}

/* The mask a context switch or a long jump installs. */
static inline void mask_install(const sigset_t *m) {
    set_mask(tracked_bits(m) ? DSP_MASK_CLOSED : DSP_MASK_UNKNOWN);
}

DSP_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
    int unblocks = mask_before(how, set);
    int r = real_pthread_sigmask()(how, set, old);
    if (set) mask_after(unblocks, r != 0);
    return r;
}

DSP_API int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    int unblocks = mask_before(how, set);
    int r = real_sigprocmask()(how, set, old);
    if (set) mask_after(unblocks, r != 0);
    return r;
}

/* A handler that runs with SIGSEGV or SIGBUS blocked makes every later
 * io_submit ask the kernel (dsp_guard_ask): a hook called from it would see
 * the interrupted code's mask. */
DSP_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    dsp_guard_note_handler(sig, act);
    return real_sigaction()(sig, act, old);
}

DSP_API void siglongjmp(sigjmp_buf env, int val) {
    if (env->__mask_was_saved) mask_install(&env->__saved_mask);
    real_siglongjmp()(env, val);
    __builtin_unreachable();
}

DSP_API void longjmp(jmp_buf env, int val) {
    if (env->__mask_was_saved) mask_install(&env->__saved_mask);
    real_longjmp()(env, val);
    __builtin_unreachable();
}

/* glibc's alias of longjmp: it restores a saved mask too. */
DSP_API void _longjmp(struct __jmp_buf_tag env[1], int val) {
    if (env->__mask_was_saved) mask_install(&env->__saved_mask);
    real__longjmp()(env, val);
    __builtin_unreachable();
}

/* longjmp under _FORTIFY_SOURCE. */
DSP_API __attribute__((noreturn)) void __longjmp_chk(struct __jmp_buf_tag *env, int val);
DSP_API void __longjmp_chk(struct __jmp_buf_tag *env, int val) {
    if (env->__mask_was_saved) mask_install(&env->__saved_mask);
    real___longjmp_chk()(env, val);
}

DSP_API int setcontext(const ucontext_t *ucp) {
    mask_install(&ucp->uc_sigmask);
    int r = real_setcontext()(ucp);
    set_mask(DSP_MASK_UNKNOWN); /* returns only on failure */
    return r;
}

DSP_API int swapcontext(ucontext_t *oucp, const ucontext_t *ucp) {
    mask_install(&ucp->uc_sigmask);
    int r = real_swapcontext()(oucp, ucp);
    set_mask(DSP_MASK_UNKNOWN); /* back, perhaps on another thread */
    return r;
}

/* The BSD and System V forms (deprecated, still exported): conservatively,
 * CLOSED before and UNKNOWN after any that names SIGSEGV or SIGBUS. */
static inline int legacy_before(int touches) {
    if (touches) set_mask(DSP_MASK_CLOSED);
    return touches;
}

DSP_API int sigblock(int mask) {
    int t = legacy_before(((unsigned long)(unsigned)mask & TRACKED) != 0);
    int r = real_sigblock()(mask);
    mask_after(t, 0);
    return r;
}

DSP_API int sigsetmask(int mask) {
    int t = legacy_before(1);
    int r = real_sigsetmask()(mask);
    mask_after(t, 0);
    return r;
}

DSP_API int sighold(int sig) {
    int t = legacy_before(sig == SIGSEGV || sig == SIGBUS);
    int r = real_sighold()(sig);
    mask_after(t, 0);
    return r;
}

DSP_API int sigrelse(int sig) {
    int t = sig == SIGSEGV || sig == SIGBUS;
    int r = real_sigrelse()(sig);
    mask_after(t, 0);
    return r;
}

DSP_API __sighandler_t sigset(int sig, __sighandler_t disp) {
    int t = legacy_before(sig == SIGSEGV || sig == SIGBUS);
    __sighandler_t r = real_sigset()(sig, disp);
    mask_after(t, 0);
    return r;
}

/* The calls that wait under a temporary mask: a handler that runs meanwhile
 * has that mask, and the thread's own comes back after. One that blocks
 * SIGSEGV or SIGBUS marks the thread CLOSED for the call, UNKNOWN after. */
int dsp_sigcalls_temp_begin(const sigset_t *m) {
    return m && tracked_bits(m) ? (set_mask(DSP_MASK_CLOSED), 1) : 0;
}
void dsp_sigcalls_temp_end(int t) {
    mask_after(t, 0);
}
#define UNDER_TEMP(m, call)                                                                        \
    ({                                                                                             \
        int t_ = dsp_sigcalls_temp_begin(m);                                                       \
        int r_ = (call);                                                                           \
        dsp_sigcalls_temp_end(t_);                                                                 \
        r_;                                                                                        \
    })

DSP_API int sigsuspend(const sigset_t *m) {
    return UNDER_TEMP(m, real_sigsuspend()(m));
}

DSP_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *m) {
    return UNDER_TEMP(m, real_ppoll()(fds, n, tmo, m));
}

/* ppoll under _FORTIFY_SOURCE. */
DSP_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *m,
                        size_t fdslen);
DSP_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *m,
                        size_t fdslen) {
    return UNDER_TEMP(m, real___ppoll_chk()(fds, n, tmo, m, fdslen));
}

DSP_API int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *tmo,
                    const sigset_t *m) {
    return UNDER_TEMP(m, real_pselect()(n, rd, wr, ex, tmo, m));
}

DSP_API int epoll_pwait(int fd, struct epoll_event *ev, int n, int tmo, const sigset_t *m) {
    return UNDER_TEMP(m, real_epoll_pwait()(fd, ev, n, tmo, m));
}

DSP_API int epoll_pwait2(int fd, struct epoll_event *ev, int n, const struct timespec *tmo,
                         const sigset_t *m) {
    return UNDER_TEMP(m, real_epoll_pwait2()(fd, ev, n, tmo, m));
}

/* sigpause in its three exported forms (BSD: a mask; X/Open: a signal to
 * unblock; __sigpause: either), which wait under a temporary mask:
 * conservatively, CLOSED for the call and UNKNOWN after. The C name of the
 * first differs: <signal.h> renames sigpause to __xpg_sigpause. */
DSP_API int sigpause_hook(int m) __asm__("sigpause");
DSP_API int sigpause_hook(int m) {
    int t = legacy_before(1);
    int r = real_sigpause()(m);
    mask_after(t, 0);
    return r;
}

DSP_API int __sigpause(int m, int is_sig) {
    int t = legacy_before(1);
    int r = real___sigpause()(m, is_sig);
    mask_after(t, 0);
    return r;
}

DSP_API int __xpg_sigpause(int sig);
DSP_API int __xpg_sigpause(int sig) {
    int t = legacy_before(1);
    int r = real___xpg_sigpause()(sig);
    mask_after(t, 0);
    return r;
}

/* Every real function found now, from the constructor: a program's signal
 * handler must not be the first to call one (dlsym is not async-signal-safe). */
void dsp_sigcalls_init(void) {
    SIG_HOOKS(DSP_REAL_FIND)
}

int dsp_sigcalls_bound(void) {
    static const char *const names[] = {SIG_HOOKS(DSP_REAL_NAME)};
    return dsp_real_all_ours(names, sizeof names / sizeof *names);
}

#else
int dsp_sigcalls_bound(void) {
    return 0;
}
int dsp_sigcalls_temp_begin(const sigset_t *m) {
    (void)m;
    return 0;
}
void dsp_sigcalls_temp_end(int t) {
    (void)t;
}
void dsp_sigcalls_init(void) {}
#endif
