#include "guard.h"

#include "errname.h"
#include "log.h"
#include "sigcgt.h"
#include "sigmask.h"
#include "sys.h"

#include <errno.h>
#include <linux/aio_abi.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

DSP_TLS sigjmp_buf *dsp_guard_jmp;
DSP_TLS int dsp_guard_faults_ok;
DSP_TLS int dsp_guard_mask;
int dsp_guard_ask;

/* What SIGSEGV ([0]) and SIGBUS ([1]) did before us, and whether a one-shot
 * (SA_RESETHAND) handler among them has had its one call. */
static struct sigaction old_act[2];
static int oneshot_spent[2];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;
static int checked_ok;

/* Signal n's bit in a kernel signal set (SigCgt). */
#define DSP_SIGBIT(n) ((uint64_t)1 << ((n)-1))

/* Whether the kernel raised sig at an instruction that faults again when the
 * handler returns: not sent with kill() or sigqueue() (si_code <= 0), and not
 * an asynchronous machine-check report. */
static int synchronous(int sig, const siginfo_t *info) {
    if (info->si_code <= 0) return 0;
#ifdef BUS_MCEERR_AO
    if (sig == SIGBUS && info->si_code == BUS_MCEERR_AO) return 0;
#endif
    return 1;
}

static void set_default(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
}

/* A fault or signal that is not ours: what the kernel would have done with the
 * disposition the program had before us. Returns the errno to leave. */
static int chain(int sig, siginfo_t *info, void *uc, int err) {
    int k = sig == SIGBUS;
    struct sigaction old = old_act[k];
    /* SIG_DFL and SIG_IGN are handler values whatever SA_SIGINFO says. */
    void (*h)(int) = old.sa_handler;
    int fn = h != SIG_DFL && h != SIG_IGN;
    /* One-shot: the kernel resets the disposition before the call, so a
     * second signal (in any thread) gets the default action. */
    if (fn && (old.sa_flags & SA_RESETHAND) &&
        __atomic_exchange_n(&oneshot_spent[k], 1, __ATOMIC_ACQ_REL))
        fn = 0, h = SIG_DFL;
    if (fn) {
        /* As the kernel would have run it: its own mask, and the signal
         * blocked unless it asked for SA_NODEFER; the mask back afterwards. */
        sigset_t mask = old.sa_mask, saved;
        if (!(old.sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
        pthread_sigmask(SIG_BLOCK, &mask, &saved);
        errno = err;
        if (old.sa_flags & SA_SIGINFO)
            old.sa_sigaction(sig, info, uc);
        else
            h(sig);
        err = errno; /* what the handler left, as without us */
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        return err;
    }
    if (h == SIG_IGN) {
        if (!synchronous(sig, info)) return err; /* ignored, as without us */
        /* The kernel forces the default action on a fault of an ignored
         * signal: with the program's own disposition back the instruction
         * faults again and the process ends as without us (core included). */
        sigaction(sig, &old, NULL);
        return err;
    }
    /* Default action: restore it. A fault repeats when the instruction runs
     * again; a sent signal is raised again. Either ends the process. */
    set_default(sig);
    if (!synchronous(sig, info)) raise(sig);
    return err;
}

#if DSP_GUARD_IOCB_WORDS
/* rdi: ios, rsi: n, rdx: out; rax counts the iocbs read whole. Every load
 * from caller memory lies between iocb_words_loads and iocb_words_done: a
 * fault there resumes at iocb_words_done with rax as it was, the count so
 * far. The stores go to the caller's own stack array. An iocb pointer that
 * dsp_guard_plausible refuses (NULL, the first 64 KiB, past the user address
 * space) ends the read unloaded, as the guarded C path did: where the
 * program replaced our handler, or blocked SIGSEGV unseen, the commonest bad
 * pointer still gets -EFAULT from the general path instead of a fault
 * (issue 29's review). iocb_words_limit: the highest p - 64 KiB for which
 * [p, p + sizeof(struct iocb)) ends by DSP_USER_VA_END. */
__asm__(".pushsection .text\n"
        ".globl dsp_guard_iocb_words\n"
        ".hidden dsp_guard_iocb_words\n"
        ".type dsp_guard_iocb_words, @function\n"
        "dsp_guard_iocb_words:\n"
        "  xorl %eax, %eax\n"
        "  testq %rsi, %rsi\n"
        "  jle iocb_words_done\n"
        "iocb_words_loads:\n"
        "  movq (%rdi,%rax,8), %rcx\n"
        "  leaq -65536(%rcx), %r8\n"
        "  cmpq iocb_words_limit(%rip), %r8\n"
        "  ja iocb_words_done\n"
        "  movq 16(%rcx), %r8\n"
        "  movq 24(%rcx), %r9\n"
        "  movq 32(%rcx), %r10\n"
        "  movq 40(%rcx), %r11\n"
        "iocb_words_loads_end:\n"
        "  movq %r8, (%rdx)\n"
        "  movq %r9, 8(%rdx)\n"
        "  movq %r10, 16(%rdx)\n"
        "  movq %r11, 24(%rdx)\n"
        "  addq $32, %rdx\n"
        "  incq %rax\n"
        "  cmpq %rsi, %rax\n"
        "  jl iocb_words_loads\n"
        "iocb_words_done:\n"
        "  ret\n"
        ".size dsp_guard_iocb_words, .-dsp_guard_iocb_words\n"
        ".section .rodata\n"
        ".p2align 3\n"
        "iocb_words_limit:\n"
        "  .quad 0x00fffffffffeffc0\n"
        ".popsection\n");
_Static_assert(DSP_USER_VA_END - 65536 - 64 == 0x00fffffffffeffc0,
               "iocb_words_limit is DSP_USER_VA_END - 64 KiB - sizeof(struct iocb)");
extern const char iocb_words_loads[] __attribute__((visibility("hidden"))),
    iocb_words_loads_end[] __attribute__((visibility("hidden"))),
    iocb_words_done[] __attribute__((visibility("hidden")));

/* 1 when the fault was one of dsp_guard_iocb_words' loads: resumed at its exit. */
static int iocb_words_fault(void *uc) {
    greg_t *ip = &((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    if ((uintptr_t)*ip < (uintptr_t)iocb_words_loads ||
        (uintptr_t)*ip >= (uintptr_t)iocb_words_loads_end)
        return 0;
    *ip = (greg_t)(uintptr_t)iocb_words_done;
    return 1;
}
#else
/* Elsewhere the same reads in C, under a jump buffer. */
long dsp_guard_iocb_words(void *const *ios, long n, uint64_t *out) {
    volatile long i = 0;
    int failed;
    DSP_GUARD_BEGIN(failed)
    for (; i < n; i++) {
        const struct iocb *cb = ios[i];
        if (!dsp_guard_plausible((uintptr_t)cb, sizeof *cb)) break;
        uint64_t *x = out + 4 * i;
        x[0] = cb->aio_lio_opcode | (uint64_t)cb->aio_fildes << 32;
        x[1] = cb->aio_buf;
        x[2] = cb->aio_nbytes;
        x[3] = (uint64_t)cb->aio_offset;
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* counted only once read whole */
    }
    DSP_GUARD_END();
    (void)failed; /* i counts the iocbs read whole either way */
    return i;
}
#endif

/* Only a fault of the instruction that runs is ours to resume or jump out
 * of (synchronous): a signal that merely lands in a guarded read, sent or an
 * asynchronous machine-check report (si_code > 0 too), is the program's
 * (issue 29's review: aio_guard.async_sigbus_during_an_iocb_read_...). */
static void on_fault(int sig, siginfo_t *info, void *uc) {
    int ours = synchronous(sig, info);
#if DSP_GUARD_IOCB_WORDS
    if (ours && iocb_words_fault(uc)) return; /* errno untouched */
#endif
    int err = errno;
    sigjmp_buf *jmp = __atomic_load_n(&dsp_guard_jmp, __ATOMIC_RELAXED);
    if (jmp && ours) {
        __atomic_store_n(&dsp_guard_jmp, NULL, __ATOMIC_RELAXED);
        errno = err;
        siglongjmp(*jmp, 1);
    }
    errno = chain(sig, info, uc, err);
}

/* Our handler for sig, the program's kept in old: 0, or -errno of sigaction. */
static int install_one(int sig, struct sigaction *old) {
    struct sigaction cur, sa;
    if (sigaction(sig, NULL, &cur) != 0) return -errno;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    /* SA_NODEFER: the jump out leaves the signal mask as it was. SA_ONSTACK
     * and SA_RESTART as the program's handler had them: a stack overflow
     * reaches its alternate stack if it asked for one (and ends the process
     * if it did not), and a sent signal interrupts a system call as it would
     * have. An ignored or default disposition interrupted nothing: restart. */
    int fn = cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | (cur.sa_flags & SA_ONSTACK) |
                  (fn ? cur.sa_flags & SA_RESTART : SA_RESTART);
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, old) != 0 ? -errno : 0;
}

void dsp_guard_note_handler(int sig, const struct sigaction *act) {
    if (!act || sig == SIGSEGV || sig == SIGBUS || act->sa_handler == SIG_DFL ||
        act->sa_handler == SIG_IGN)
        return;
    /* The set's own bits (sigmask.h), not sigismember: the program's first
     * sigaction bound libc's lazily, a symbol lookup at start-up (issue 29). */
    if (dsp_sigmask_bits(&act->sa_mask)) __atomic_store_n(&dsp_guard_ask, 1, __ATOMIC_RELAXED);
}

/* The signals that have a handler now (io/sigcgt.h): 1 with *caught set, 0
 * where /proc/self/status cannot be read. One open, one read (more after a
 * long Groups line) and a close, where asking every signal's disposition
 * took 64 rt_sigaction. */
static int caught_signals(uint64_t *caught) {
    int fd = dsp_sys_open("/proc/self/status", O_RDONLY);
    if (fd < 0) return 0;
    int ok = dsp_sigcgt_read(fd, caught);
    dsp_sys_close(fd);
    return ok;
}

/* Whether the tracked mask can be trusted: the interposers are reached, and
 * no handler installed where the sigaction hook could not see it runs with
 * SIGSEGV or SIGBUS blocked. The hook is reached from the program's start
 * (before any constructor, ours included), so such a handler came through
 * another path: a raw rt_sigaction system call (a statically linked runtime),
 * glibc's own __sigaction, another link-map namespace (dlmopen, LD_AUDIT).
 * Only a signal with a handler can have one: the kernel lists them (SigCgt),
 * and only those are asked (issue 29's review: the first libaio call asked
 * all 64, strace showed 68 rt_sigaction for fio's 4). Once, at the first
 * libaio call; handlers installed later through those paths are not seen
 * (docs/io.md). */
static void check_tracking(void) {
    if (!dsp_sigcalls_bound()) {
        __atomic_store_n(&dsp_guard_ask, 1, __ATOMIC_RELAXED);
        dsp_info("libaio: the program's signal-mask calls do not reach the shim's hooks "
                 "(another definition first, or a sanitizer build): each io_submit asks the "
                 "kernel for the signal mask");
        return;
    }
    uint64_t caught = ~(uint64_t)0;
    if (!caught_signals(&caught))
        dsp_debug("libaio: /proc/self/status has no SigCgt: every signal's disposition is read");
    /* SIGSEGV's and SIGBUS's own handlers are not counted (note_handler). */
    caught &=
        ~(DSP_SIGBIT(SIGKILL) | DSP_SIGBIT(SIGSTOP) | DSP_SIGBIT(SIGSEGV) | DSP_SIGBIT(SIGBUS));
    for (int sig = 1; sig <= 64; sig++) {
        struct sigaction cur;
        if (((caught >> (sig - 1)) & 1) && sigaction(sig, NULL, &cur) == 0)
            dsp_guard_note_handler(sig, &cur);
    }
}

static void install(void) {
    int e0 = errno;
    check_tracking();
    errno = e0;
    int rc = install_one(SIGSEGV, &old_act[0]);
    if (rc == 0) rc = install_one(SIGBUS, &old_act[1]);
    if (rc != 0) {
        install_err = rc;
        dsp_warn("libaio: cannot install the fault handler that turns bad pointers into -EFAULT "
                 "(%s): I/O passes through unexamined",
                 dsp_errname(-rc));
        return;
    }
    int e = errno;
    char a = 1, b = 0;
    struct iovec l = {&b, 1}, r = {&a, 1};
    checked_ok = process_vm_readv(getpid(), &l, 1, &r, 1, 0) == 1 && b == 1;
    if (!checked_ok)
        dsp_info("libaio: process_vm_readv is refused (%s): threads that block SIGSEGV or "
                 "SIGBUS pass their I/O through unexamined",
                 dsp_errname(errno));
    errno = e;
}

int dsp_guard_install(void) {
    pthread_once(&once, install);
    return install_err;
}

int dsp_guard_checked_ok(void) {
    return checked_ok;
}

/* The kernel's answer: DSP_MASK_OPEN or DSP_MASK_CLOSED. */
static int ask_kernel(void) {
    int e = errno;
    sigset_t cur;
    int open = pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && !dsp_sigmask_bits(&cur);
    errno = e;
    return open ? DSP_MASK_OPEN : DSP_MASK_CLOSED;
}

int dsp_guard_enter_slow(int prev) {
    /* A handler that changes the mask between the query and the store
     * returns to the mask the query saw (sigreturn restores it). */
    int m = ask_kernel();
    __atomic_store_n(&dsp_guard_mask, m, __ATOMIC_RELAXED);
    dsp_guard_faults_ok = m == DSP_MASK_OPEN;
    return prev;
}

/* process_vm_readv on our own pid: both sides checked, -EFAULT for any byte
 * that cannot be copied. */
static int checked_copy(void *dst, const void *src, size_t n) {
    if (!n) return 0;
    if (!checked_ok) return -EFAULT;
    int e = errno;
    struct iovec l = {dst, n}, r = {(void *)src, n};
    ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
    errno = e;
    return got == (ssize_t)n ? 0 : -EFAULT;
}

int dsp_guard_copy(void *dst, const void *src, size_t n) {
    if (!dsp_guard_faults_ok) return checked_copy(dst, src, n);
    int failed;
    DSP_GUARD_BEGIN(failed)
    memcpy(dst, src, n);
    DSP_GUARD_END();
    return failed ? -EFAULT : 0;
}

int dsp_guard_probe_ends(const void *p, size_t n) {
    if (!n) return 0;
    const volatile char *c = p;
    if (!dsp_guard_faults_ok) {
        char two[2];
        return checked_copy(two, p, 1) == 0 &&
                       checked_copy(two + 1, (const char *)p + n - 1, 1) == 0
                   ? 0
                   : -EFAULT;
    }
    int failed;
    DSP_GUARD_BEGIN(failed)
    (void)c[0];
    (void)c[n - 1];
    DSP_GUARD_END();
    return failed ? -EFAULT : 0;
}

long dsp_guard_gather(void *dst, const void *const *src, size_t each, long n) {
    if (n <= 0 || !checked_ok) return 0;
    struct iovec r[256];
    if (n > 256) n = 256;
    for (long i = 0; i < n; i++) r[i] = (struct iovec){(void *)src[i], each};
    struct iovec l = {dst, each * (size_t)n};
    int e = errno;
    /* Pieces are copied in order and the copy stops at the first byte that
     * cannot be read: what came back whole is a prefix. */
    ssize_t got = process_vm_readv(getpid(), &l, 1, r, (unsigned long)n, 0);
    errno = e;
    return got > 0 ? (long)((size_t)got / each) : 0;
}
