#include "guard.h"

#include "../src/errname.h"
#include "../src/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

DSP_TLS sigjmp_buf *dsp_guard_jmp;

static struct sigaction old_segv, old_bus;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;

/* A fault that is not ours: hand it to whoever handled it before. */
static void chain(int sig, siginfo_t *info, void *uc) {
    struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
    int is_fn = (old->sa_flags & SA_SIGINFO)
                    ? old->sa_sigaction != NULL
                    : old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN;
    if (is_fn) {
        /* As the kernel would have run it: its own mask, and the signal
         * blocked unless it asked for SA_NODEFER. */
        sigset_t mask = old->sa_mask, saved;
        if (!(old->sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
        pthread_sigmask(SIG_BLOCK, &mask, &saved);
        if (old->sa_flags & SA_SIGINFO)
            old->sa_sigaction(sig, info, uc);
        else
            old->sa_handler(sig);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        return;
    }
    /* Default action: restore it. A real fault repeats when the faulting
     * instruction runs again and kills the process as without the shim (core
     * dump included); a signal sent with kill() is raised again. */
    signal(sig, SIG_DFL);
    if (info->si_code <= 0) raise(sig);
}

static void on_fault(int sig, siginfo_t *info, void *uc) {
    sigjmp_buf *jmp = __atomic_load_n(&dsp_guard_jmp, __ATOMIC_RELAXED);
    if (jmp && info->si_code > 0) {
        __atomic_store_n(&dsp_guard_jmp, NULL, __ATOMIC_RELAXED);
        siglongjmp(*jmp, 1);
    }
    chain(sig, info, uc);
}

static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    /* SA_NODEFER: the jump out leaves the signal mask as it was. SA_ONSTACK:
     * a stack overflow of the application still reaches its own alternate stack. */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv) != 0 || sigaction(SIGBUS, &sa, &old_bus) != 0) {
        install_err = -errno;
        dsp_warn("libaio: cannot install the fault handler that turns bad pointers into -EFAULT "
                 "(%s): I/O passes through unexamined",
                 dsp_errname(errno));
    }
}

int dsp_guard_install(void) {
    pthread_once(&once, install);
    return install_err;
}

int dsp_guard_copy(void *dst, const void *src, size_t n) {
    int failed;
    DSP_GUARD_BEGIN(failed)
    memcpy(dst, src, n);
    DSP_GUARD_END();
    return failed ? -EFAULT : 0;
}

int dsp_guard_probe_ends(const void *p, size_t n) {
    if (!n) return 0;
    const volatile char *c = p;
    int failed;
    DSP_GUARD_BEGIN(failed)
    (void)c[0];
    (void)c[n - 1];
    DSP_GUARD_END();
    return failed ? -EFAULT : 0;
}
