/* The program's signal-mask calls, seen so that the libaio hooks know whether
 * the calling thread blocks SIGSEGV or SIGBUS without asking the kernel at
 * every io_submit (issue 29: that one rt_sigprocmask was the hook's whole
 * cost). Each hook calls the real function under the rule io/sigmask.h gives
 * it, which keeps the thread's dsp_guard_mask (io/guard.h). Calls that change
 * the mask and are no hook's (a raw rt_sigprocmask system call) are not seen:
 * docs/io.md lists them. Where another definition is reached before these (a
 * sanitizer runtime), dsp_sigcalls_bound() says so and the hooks ask the
 * kernel every time, as before. */
/* Compiled without _FORTIFY_SOURCE whatever the build flags say (Debian's
 * dpkg-buildflags and Ubuntu's compiler turn it on): <setjmp.h> then renames
 * longjmp, _longjmp and siglongjmp to __longjmp_chk at the assembly level,
 * so the hooks below would all be emitted as one symbol, which the assembler
 * refuses (issue 31, the Debian package's build). */
#undef _FORTIFY_SOURCE
#include "guard.h"
#include "internal.h"
#include "sigmask.h"
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

#define WAITS(m, call) DSP_SIGMASK_AROUND(dsp_sigmask_temp(m), int, call, DSP_SIGMASK_NEVER)

/* pthread_sigmask and sigprocmask differ only in how they report an error:
 * a non-zero result either way (an error number, or -1). */
#define FAILED(r) ((r) != 0)
static inline int change_mask(int (*real)(int, const sigset_t *, sigset_t *), int how,
                              const sigset_t *set, sigset_t *old) {
    return DSP_SIGMASK_AROUND(dsp_sigmask_change(how, set), int, real(how, set, old), FAILED);
}

DSP_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
    return change_mask(real_pthread_sigmask(), how, set, old);
}

DSP_API int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    return change_mask(real_sigprocmask(), how, set, old);
}

/* A handler that runs with SIGSEGV or SIGBUS blocked makes every later
 * io_submit ask the kernel (dsp_guard_ask): a hook called from it would see
 * the interrupted code's mask. */
DSP_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    dsp_guard_note_handler(sig, act);
    return real_sigaction()(sig, act, old);
}

/* A long jump restores the mask sigsetjmp saved, if it saved one. */
#define JUMPS(env)                                                                                 \
    do {                                                                                           \
        if ((env)->__mask_was_saved) dsp_sigmask_set(dsp_sigmask_installed(&(env)->__saved_mask)); \
    } while (0)

DSP_API void siglongjmp(sigjmp_buf env, int val) {
    JUMPS(env);
    real_siglongjmp()(env, val);
    __builtin_unreachable();
}

DSP_API void longjmp(jmp_buf env, int val) {
    JUMPS(env);
    real_longjmp()(env, val);
    __builtin_unreachable();
}

/* glibc's alias of longjmp: it restores a saved mask too. */
DSP_API void _longjmp(struct __jmp_buf_tag env[1], int val) {
    JUMPS(env);
    real__longjmp()(env, val);
    __builtin_unreachable();
}

/* longjmp under _FORTIFY_SOURCE. */
DSP_API __attribute__((noreturn)) void __longjmp_chk(struct __jmp_buf_tag *env, int val);
DSP_API void __longjmp_chk(struct __jmp_buf_tag *env, int val) {
    JUMPS(env);
    real___longjmp_chk()(env, val);
}

/* A context switch installs ucp's mask; back (perhaps on another thread) or
 * failed, the mask is asked again. */
#define SWITCHES(ucp, call)                                                                        \
    ({                                                                                             \
        dsp_sigmask_set(dsp_sigmask_installed(&(ucp)->uc_sigmask));                                \
        int r_ = (call);                                                                           \
        dsp_sigmask_set(DSP_MASK_UNKNOWN);                                                         \
        r_;                                                                                        \
    })

DSP_API int setcontext(const ucontext_t *ucp) {
    return SWITCHES(ucp, real_setcontext()(ucp)); /* returns only on failure */
}

DSP_API int swapcontext(ucontext_t *oucp, const ucontext_t *ucp) {
    return SWITCHES(ucp, real_swapcontext()(oucp, ucp));
}

/* The BSD and System V forms (deprecated, still exported). */
#define NAMES(touches, T, call)                                                                    \
    DSP_SIGMASK_AROUND(dsp_sigmask_names(touches), T, call, DSP_SIGMASK_NEVER)

DSP_API int sigblock(int mask) {
    return NAMES(dsp_sigmask_bsd_touches(mask), int, real_sigblock()(mask));
}

DSP_API int sigsetmask(int mask) {
    return NAMES(1, int, real_sigsetmask()(mask));
}

DSP_API int sighold(int sig) {
    return NAMES(dsp_sigmask_sig_touches(sig), int, real_sighold()(sig));
}

DSP_API int sigrelse(int sig) {
    return DSP_SIGMASK_AROUND(dsp_sigmask_release(sig), int, real_sigrelse()(sig),
                              DSP_SIGMASK_NEVER);
}

DSP_API __sighandler_t sigset(int sig, __sighandler_t disp) {
    return NAMES(dsp_sigmask_sig_touches(sig), __sighandler_t, real_sigset()(sig, disp));
}

/* The calls that wait under a temporary mask (io/sigmask.h). */
DSP_API int sigsuspend(const sigset_t *m) {
    return WAITS(m, real_sigsuspend()(m));
}

DSP_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *m) {
    return WAITS(m, real_ppoll()(fds, n, tmo, m));
}

/* ppoll under _FORTIFY_SOURCE. */
DSP_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *m,
                        size_t fdslen);
DSP_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *m,
                        size_t fdslen) {
    return WAITS(m, real___ppoll_chk()(fds, n, tmo, m, fdslen));
}

DSP_API int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *tmo,
                    const sigset_t *m) {
    return WAITS(m, real_pselect()(n, rd, wr, ex, tmo, m));
}

DSP_API int epoll_pwait(int fd, struct epoll_event *ev, int n, int tmo, const sigset_t *m) {
    return WAITS(m, real_epoll_pwait()(fd, ev, n, tmo, m));
}

DSP_API int epoll_pwait2(int fd, struct epoll_event *ev, int n, const struct timespec *tmo,
                         const sigset_t *m) {
    return WAITS(m, real_epoll_pwait2()(fd, ev, n, tmo, m));
}

/* sigpause in its three exported forms (BSD: a mask; X/Open: a signal to
 * unblock; __sigpause: either), which wait under a temporary mask:
 * conservatively, CLOSED for the call and UNKNOWN after. The C name of the
 * first differs: <signal.h> renames sigpause to __xpg_sigpause. */
DSP_API int sigpause_hook(int m) __asm__("sigpause");
DSP_API int sigpause_hook(int m) {
    return NAMES(1, int, real_sigpause()(m));
}

DSP_API int __sigpause(int m, int is_sig) {
    return NAMES(1, int, real___sigpause()(m, is_sig));
}

DSP_API int __xpg_sigpause(int sig);
DSP_API int __xpg_sigpause(int sig) {
    return NAMES(1, int, real___xpg_sigpause()(sig));
}

/* Every real function found now, from the constructor: a program's signal
 * handler must not be the first to call one (dlsym is not async-signal-safe). */
DSP_STARTUP_TEXT void dsp_sigcalls_init(void) {
    DSP_REAL_FIND_ALL(SIG_HOOKS);
}

int dsp_sigcalls_bound(void) {
    static const char *const names[] = {SIG_HOOKS(DSP_REAL_NAME)};
    return dsp_real_all_ours(names, sizeof names / sizeof *names);
}

#else
int dsp_sigcalls_bound(void) {
    return 0;
}
void dsp_sigcalls_init(void) {}
#endif
