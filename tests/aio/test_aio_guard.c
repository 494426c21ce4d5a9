/* The fault guard (io/guard.c) and the answers io_submit gives for what it
 * cannot read: the program's signal behaviour is kept as it was without the
 * shim, a thread that blocks SIGSEGV or SIGBUS gets -EFAULT instead of being
 * killed, and the kernel's own order of checks (the context first). The
 * guard is installed at the first libaio call: each test sets the
 * dispositions it needs before that, in a process of its own. */
#include "aio_test.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <ucontext.h>

static const char *disk = "/tmp"; /* ext4: 512-byte DIO alignment */

/* The first libaio call installs the guard (here: one the kernel refuses). */
static void install_guard(void) {
    io_context_t ctx = new_ctx(4);
    struct iocb *none[1] = {NULL};
    cr_assert_eq(io_submit(ctx, 1, none), -EFAULT);
    io_destroy(ctx);
    struct sigaction sa;
    cr_assert_eq(sigaction(SIGSEGV, NULL, &sa), 0);
    cr_assert(sa.sa_flags & SA_SIGINFO, "the guard is not installed");
    cr_assert_eq(sigaction(SIGBUS, NULL, &sa), 0);
    cr_assert(sa.sa_flags & SA_SIGINFO, "the guard is not installed");
}

/* An address that faults: a page unmapped again (SIGSEGV). */
static char *gone_page(void) {
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(p != MAP_FAILED);
    munmap(p, 4096);
    return p;
}

/* An address that raises SIGBUS: a shared mapping past the end of an empty file. */
static char *sigbus_page(void) {
    char path[] = "/tmp/dsp-guard-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    unlink(path);
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    cr_assert(p != MAP_FAILED);
    close(fd);
    return p;
}

static void block_all(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
}

/* How a child ended: its signal, or 1000 + its exit status. */
static int ended(pid_t pid) {
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFSIGNALED(st) ? WTERMSIG(st) : 1000 + WEXITSTATUS(st);
}

/* --- item: the program's signal behaviour is its own ---------------------- */

Test(aio_guard, sent_sigbus_and_sigsegv_stay_ignored) {
    signal(SIGBUS, SIG_IGN);
    signal(SIGSEGV, SIG_IGN);
    install_guard();
    errno = 1234;
    cr_assert_eq(kill(getpid(), SIGBUS), 0);
    cr_assert_eq(kill(getpid(), SIGSEGV), 0);
    cr_assert_eq(pthread_kill(pthread_self(), SIGBUS), 0);
    cr_assert_eq(errno, 1234, "errno changed by the guard: %d", errno);
}

/* SIG_DFL and SIG_IGN are handler values whatever SA_SIGINFO says. */
Test(aio_guard, sig_ign_set_with_sa_siginfo_stays_ignored) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
    install_guard();
    cr_assert_eq(kill(getpid(), SIGBUS), 0);
}

/* The kernel forces the default action on a fault of an ignored signal. */
Test(aio_guard, real_fault_under_sig_ign_ends_the_process_as_without_the_shim) {
    for (int sig = SIGBUS; sig; sig = sig == SIGBUS ? SIGSEGV : 0) {
        char *bad = sig == SIGBUS ? sigbus_page() : gone_page();
        pid_t pid = fork();
        if (pid == 0) {
            signal(sig, SIG_IGN);
            install_guard();
            *(volatile char *)bad = 1;
            _exit(0);
        }
        cr_assert_eq(ended(pid), sig, "signal %d: the child ended by %d", sig, ended(pid));
    }
}

static volatile sig_atomic_t calls;
static void count(int sig) {
    (void)sig;
    calls++;
}

/* One-shot: the disposition is SIG_DFL once the handler has run. */
Test(aio_guard, one_shot_handler_runs_once_then_the_default_action) {
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = count;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGSEGV, &sa, NULL);
        install_guard();
        raise(SIGSEGV);
        char n = (char)calls;
        if (write(p[1], &n, 1) != 1) _exit(3);
        raise(SIGSEGV); /* the default action now: the child ends here */
        n = (char)calls;
        if (write(p[1], &n, 1) != 1) _exit(3);
        _exit(0);
    }
    close(p[1]);
    char n[2];
    cr_assert_eq(read(p[0], n, 2), 1, "the second signal did not end the child");
    cr_assert_eq(n[0], 1);
    cr_assert_eq(ended(pid), SIGSEGV);
}

static sigset_t seen_mask;
static int seen_code;
static void record_plain(int sig) {
    (void)sig;
    pthread_sigmask(SIG_BLOCK, NULL, &seen_mask);
    calls++;
    errno = 77;
}
static void record_info(int sig, siginfo_t *info, void *uc) {
    (void)sig, (void)uc;
    pthread_sigmask(SIG_BLOCK, NULL, &seen_mask);
    seen_code = info->si_code;
    calls++;
}

Test(aio_guard, chained_handler_runs_with_its_own_mask_flags_and_errno) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = record_plain;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR1);
    sigaction(SIGSEGV, &sa, NULL);
    sa.sa_sigaction = record_info;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    sigaction(SIGBUS, &sa, NULL);
    install_guard();

    errno = 5;
    raise(SIGSEGV);
    cr_assert_eq(calls, 1);
    cr_assert(sigismember(&seen_mask, SIGUSR1), "its sa_mask was not blocked");
    cr_assert(sigismember(&seen_mask, SIGSEGV), "the signal was not blocked (no SA_NODEFER)");
    cr_assert_eq(errno, 77, "errno is not what the handler left");

    raise(SIGBUS);
    cr_assert_eq(calls, 2);
    cr_assert_eq(seen_code, SI_TKILL, "not called with its siginfo");
    cr_assert(sigismember(&seen_mask, SIGUSR2));
    cr_assert(!sigismember(&seen_mask, SIGBUS), "blocked despite SA_NODEFER");

    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    cr_assert(!sigismember(&now, SIGUSR1) && !sigismember(&now, SIGUSR2) &&
                  !sigismember(&now, SIGSEGV) && !sigismember(&now, SIGBUS),
              "the mask was not restored");
}

static char *repair_page;
static void *seen_addr;
static void repair(int sig, siginfo_t *info, void *uc) {
    (void)sig, (void)uc;
    seen_addr = info->si_addr;
    mprotect(repair_page, 4096, PROT_READ | PROT_WRITE);
}

Test(aio_guard, real_fault_reaches_a_handler_that_repairs_it) {
    repair_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(repair_page != MAP_FAILED);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = repair;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    install_guard();
    *(volatile char *)(repair_page + 10) = 5;
    cr_assert_eq(repair_page[10], 5);
    cr_assert_eq(seen_addr, repair_page + 10);
}

struct kicker {
    pthread_t target;
    int wfd;
};
static void *kick(void *arg) {
    struct kicker *k = arg;
    usleep(100 * 1000);
    pthread_kill(k->target, SIGBUS);
    usleep(600 * 1000);
    if (write(k->wfd, "x", 1) != 1) return NULL;
    return NULL;
}

/* A handler installed without SA_RESTART: a sent signal makes a blocking
 * read fail with EINTR, as without the shim (not restarted). */
Test(aio_guard, sent_signal_interrupts_a_system_call_as_the_program_asked) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count;
    sigaction(SIGBUS, &sa, NULL);
    install_guard();
    int p[2];
    cr_assert_eq(pipe(p), 0);
    struct kicker k = {pthread_self(), p[1]};
    pthread_t t;
    pthread_create(&t, NULL, kick, &k);
    char c;
    ssize_t n = read(p[0], &c, 1);
    int e = errno;
    pthread_join(t, NULL);
    cr_assert_eq(calls, 1);
    cr_assert(n == -1 && e == EINTR, "read: %zd (%s): restarted", n, strerror(e));
}

/* --- item: a thread that blocks SIGSEGV or SIGBUS ------------------------- */

static long kernel_submit(io_context_t ctx, long nr, struct iocb **l) {
    long r = syscall(SYS_io_submit, ctx, nr, l);
    return r < 0 ? -errno : r;
}

Test(aio_guard, unmapped_pointers_with_sigsegv_blocked_give_efault_not_death) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = misaligned(1 << 20);
    char *gone = gone_page();
    install_guard();
    block_all();
    /* An iocb pointer, the array itself, an iovec array: all plausible. */
    struct iocb *lgone[1] = {(struct iocb *)gone};
    cr_assert_eq(io_submit(ctx, 1, lgone), -EFAULT);
    cr_assert_eq(io_submit(ctx, 1, (struct iocb **)gone), -EFAULT);
    struct iocb cb;
    io_prep_preadv(&cb, fd, (struct iovec *)gone, 2, 0);
    struct iocb *l[1] = {&cb};
    cr_assert_eq(io_submit(ctx, 1, l), kernel_submit(ctx, 1, l));
    /* A good bounced read then a bad pointer: the first is submitted, and
     * its data comes back through checked copies. */
    io_prep_pread(&cb, fd, buf, 1 << 20, 8192);
    cb.data = &cb;
    struct iocb *l2[2] = {&cb, (struct iocb *)gone};
    cr_assert_eq(io_submit(ctx, 2, l2), 1);
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq((long)ev.res, 1 << 20);
    cr_assert_eq(ev.obj, &cb);
    check_pattern(buf, 8192, 1 << 20);
    cr_assert_eq(stat_of("aio_bounced"), 1);
}

Test(aio_guard, bounced_vectored_write_with_only_sigbus_blocked) {
    const char *path = make_file(disk, FILE_SIZE);
    int fd = open_direct(path, O_RDWR);
    io_context_t ctx = new_ctx(8);
    install_guard();
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_BLOCK, &bus, NULL);
    char *a = misaligned(8192), *b = misaligned(8192);
    memset(a, 'a', 4096);
    memset(b, 'b', 4096);
    struct iovec v[2] = {{a, 4096}, {b, 4096}};
    struct iocb cb;
    io_prep_pwritev(&cb, fd, v, 2, 65536);
    cr_assert_eq(run_one(ctx, &cb), 8192);
    cr_assert_eq(stat_of("aio_bounced"), 1);
    char *back = pinned_alloc(8192);
    io_prep_pread(&cb, fd, back, 8192, 65536);
    cr_assert_eq(run_one(ctx, &cb), 8192);
    cr_assert(back[0] == 'a' && back[4095] == 'a' && back[4096] == 'b' && back[8191] == 'b');
}

Test(aio_guard, read_into_a_buffer_unmapped_before_completion_with_sigsegv_blocked) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *map = plain_alloc(1 << 20);
    struct iocb cb;
    io_prep_pread(&cb, fd, map + 1, 65536, 0);
    struct iocb *l[1] = {&cb};
    cr_assert_eq(io_submit(ctx, 1, l), 1);
    cr_assert_eq(stat_of("aio_bounced"), 1);
    munmap(map, (1 << 20) + 8192);
    block_all();
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq((long)ev.res, -EFAULT);
    cr_assert_eq(ev.obj, &cb);
}

/* Unblocking SIGSEGV around the reads would deliver this one early. */
Test(aio_guard, pending_sigsegv_is_not_delivered_while_blocked) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    signal(SIGSEGV, count);
    install_guard();
    block_all();
    raise(SIGSEGV);
    char *buf = misaligned(65536);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 65536, 512);
    cr_assert_eq(run_one(ctx, &cb), 65536);
    struct iocb *lgone[1] = {(struct iocb *)gone_page()};
    cr_assert_eq(io_submit(ctx, 1, lgone), -EFAULT);
    cr_assert_eq(calls, 0, "a blocked SIGSEGV was delivered");
    sigset_t pend;
    sigpending(&pend);
    cr_assert(sigismember(&pend, SIGSEGV));
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    pthread_sigmask(SIG_UNBLOCK, &segv, NULL);
    cr_assert_eq(calls, 1);
}

/* process_vm_readv refused (EPERM), as some container profiles do; before
 * the guard is installed, which then finds it refused. */
static void refuse_process_vm_readv(void) {
    refuse_syscall(SYS_process_vm_readv);
}

Test(aio_guard, refused_process_vm_readv_passes_blocked_threads_io_through) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    refuse_process_vm_readv();
    install_guard();
    block_all();
    struct iocb *lgone[1] = {(struct iocb *)gone_page()};
    cr_assert_eq(io_submit(ctx, 1, lgone), -EFAULT);
    /* Unexamined: the kernel's own answer to a misaligned O_DIRECT read. */
    struct iocb cb;
    io_prep_pread(&cb, fd, misaligned(65536), 65536, 0);
    cr_assert_eq(run_one(ctx, &cb), -EINVAL);
    cr_assert_eq(stat_of("aio_bounced"), 0);
}

/* --- item: the kernel's order of checks ----------------------------------- */

static void bad_context_checks(void) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t good = new_ctx(8);
    io_context_t stale = new_ctx(8);
    cr_assert_eq(io_destroy(stale), 0);
    io_context_t bogus = (io_context_t)(uintptr_t)0x12345000;
    struct iocb cb;
    io_prep_pread(&cb, fd, misaligned(4096), 4096, 0);
    struct iocb *lgood[1] = {&cb}, *lnull[1] = {NULL};
    io_context_t bad[2] = {stale, bogus};
    for (int i = 0; i < 2; i++) {
        /* The context is looked up before any iocb is read. */
        cr_assert_eq(io_submit(bad[i], 1, NULL), -EINVAL);
        cr_assert_eq(kernel_submit(bad[i], 1, NULL), -EINVAL);
        cr_assert_eq(io_submit(bad[i], 1, lnull), -EINVAL);
        cr_assert_eq(io_submit(bad[i], 1, (struct iocb **)gone_page()), -EINVAL);
        cr_assert_eq(io_submit(bad[i], 1, lgood), -EINVAL);
        cr_assert_eq(io_submit(bad[i], 0, NULL), -EINVAL);
        cr_assert_eq(io_submit(bad[i], -1, NULL), -EINVAL);
    }
    cr_assert_eq(io_submit(good, -1, NULL), -EINVAL);
    cr_assert_eq(io_submit(good, 0, NULL), 0);
    cr_assert_eq(io_submit(good, 1, NULL), -EFAULT);
    cr_assert_eq(stat_of("aio_bounced"), 0);
}

Test(aio_guard, bad_context_gives_einval_before_the_iocbs_are_read) {
    bad_context_checks();
}

Test(aio_guard, bad_context_gives_einval_with_sigsegv_blocked) {
    install_guard();
    block_all();
    bad_context_checks();
}

/* --- item: the tracked mask (issue 29) -------------------------------------
 * The hooks no longer ask the kernel for the mask at each io_submit: the
 * shim's pthread_sigmask, sigprocmask, siglongjmp, setcontext, sigblock ...
 * keep it (preload/sigcalls.c). Each test lets an io_submit see SIGSEGV and
 * SIGBUS unblocked first, then blocks one by another way, and passes a bad
 * pointer: a stale "unblocked" would make a plain load that kills the
 * process instead of -EFAULT. */

/* The context and the guard first: io_setup's ring could take the address
 * of a page unmapped before it. */
static io_context_t seen_open(struct iocb **bad, char *(*make)(void)) {
    io_context_t ctx = new_ctx(4);
    install_guard();
    bad[0] = (struct iocb *)make();
    cr_assert_eq(io_submit(ctx, 1, bad), -EFAULT);
    return ctx;
}

static void block_one(int how, int sig) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    cr_assert_eq(sigprocmask(how, &s, NULL), 0);
}

Test(aio_guard, sigprocmask_blocking_sigsegv_after_an_io_submit_is_seen) {
    struct iocb *bad[1];
    io_context_t ctx = seen_open(bad, gone_page);
    block_one(SIG_BLOCK, SIGSEGV);
    cr_assert_eq(io_submit(ctx, 1, bad), -EFAULT);
}

Test(aio_guard, sigblock_blocking_sigbus_after_an_io_submit_is_seen) {
    struct iocb *bad[1];
    io_context_t ctx = seen_open(bad, sigbus_page);
    int (*block)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "sigblock"); /* deprecated */
    block(1 << (SIGBUS - 1));
    cr_assert_eq(io_submit(ctx, 1, bad), -EFAULT);
}

/* A jump back to where SIGSEGV was blocked, by jump (which restores the
 * mask sigsetjmp saved). */
static void jump_back_to_a_blocked_mask(void (*jump)(struct __jmp_buf_tag *, int)) {
    static sigjmp_buf env;
    io_context_t ctx = new_ctx(4);
    install_guard();
    static struct iocb *bad[1];
    bad[0] = (struct iocb *)gone_page();
    block_one(SIG_BLOCK, SIGSEGV);
    if (sigsetjmp(env, 1) == 0) {
        block_one(SIG_UNBLOCK, SIGSEGV);
        cr_assert_eq(io_submit(ctx, 1, bad), -EFAULT);
        jump(env, 1);
    }
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    cr_assert(sigismember(&now, SIGSEGV), "the jump did not restore the mask");
    cr_assert_eq(io_submit(ctx, 1, bad), -EFAULT);
}

Test(aio_guard, siglongjmp_back_to_a_blocked_mask_is_seen) {
    jump_back_to_a_blocked_mask(siglongjmp);
}

/* Regression (review of issue 29's change): glibc's _longjmp, an alias of
 * longjmp that restores the mask too, was not hooked. */
Test(aio_guard, underscore_longjmp_back_to_a_blocked_mask_is_seen) {
    jump_back_to_a_blocked_mask(_longjmp);
}

Test(aio_guard, setcontext_back_to_a_blocked_mask_is_seen) {
    static ucontext_t uc;
    static volatile int back;
    io_context_t ctx = new_ctx(4);
    install_guard();
    static struct iocb *bad[1];
    bad[0] = (struct iocb *)gone_page();
    block_one(SIG_BLOCK, SIGSEGV);
    cr_assert_eq(getcontext(&uc), 0);
    if (!back) {
        back = 1;
        block_one(SIG_UNBLOCK, SIGSEGV);
        cr_assert_eq(io_submit(ctx, 1, bad), -EFAULT);
        setcontext(&uc);
    }
    cr_assert_eq(io_submit(ctx, 1, bad), -EFAULT);
}

static io_context_t handler_ctx;
static struct iocb **handler_bad;
static volatile long handler_res;
static void submit_from_handler(int sig) {
    (void)sig;
    handler_res = io_submit(handler_ctx, 1, handler_bad);
}

/* The handler runs with SIGSEGV blocked (its sa_mask): the interrupted
 * code's tracked mask says unblocked. */
/* After an io_submit that saw the mask open: SIGUSR1's handler submits a bad
 * pointer, with SIGSEGV in its sa_mask or not. */
static void submit_from_sigusr1(int block_segv) {
    static struct iocb *bad[1];
    handler_bad = bad;
    handler_ctx = seen_open(bad, gone_page);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = submit_from_handler;
    sigemptyset(&sa.sa_mask);
    if (block_segv) sigaddset(&sa.sa_mask, SIGSEGV);
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

Test(aio_guard, handler_that_blocks_sigsegv_gets_efault_from_io_submit) {
    submit_from_sigusr1(1);
    raise(SIGUSR1);
    cr_assert_eq(handler_res, -EFAULT);
}

/* A thread starts with its creator's mask, which it has not asked for. */
static void *submit_bad(void *arg) {
    struct iocb *bad[1] = {(struct iocb *)arg};
    return (void *)(intptr_t)io_submit(handler_ctx, 1, bad);
}

Test(aio_guard, thread_created_with_sigsegv_blocked_gets_efault) {
    struct iocb *bad[1];
    handler_ctx = seen_open(bad, gone_page);
    block_one(SIG_BLOCK, SIGSEGV);
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, submit_bad, bad[0]);
    pthread_join(t, &r);
    cr_assert_eq((long)(intptr_t)r, -EFAULT);
}

/* A SIGUSR1 handler that submits runs while wait waits under a temporary
 * mask that blocks everything else, SIGSEGV included. */
static void handler_in_a_wait_that_blocks_sigsegv(int (*wait)(void)) {
    submit_from_sigusr1(0);
    block_one(SIG_BLOCK, SIGUSR1);
    raise(SIGUSR1); /* pending until the wait */
    cr_assert_eq(wait(), -1);
    cr_assert_eq(handler_res, -EFAULT);
}

static int wait_sigsuspend(void) {
    sigset_t m;
    sigfillset(&m);
    sigdelset(&m, SIGUSR1);
    return sigsuspend(&m);
}

/* sigsuspend's temporary mask blocks SIGSEGV while the handler runs. */
Test(aio_guard, handler_run_in_sigsuspend_that_blocks_sigsegv_gets_efault) {
    handler_in_a_wait_that_blocks_sigsegv(wait_sigsuspend);
}

/* BSD sigpause (__sigpause with a mask): every signal but SIGUSR1 blocked. */
static int wait_bsd_sigpause(void) {
    int (*sp)(int, int) = (int (*)(int, int))dlsym(RTLD_DEFAULT, "__sigpause");
    return sp(~(1 << (SIGUSR1 - 1)), 0);
}

/* Regression (review of issue 29's change): the sigpause family waits under a
 * temporary mask as sigsuspend does, and was not hooked. */
Test(aio_guard, handler_run_in_sigpause_that_blocks_sigsegv_gets_efault) {
    handler_in_a_wait_that_blocks_sigsegv(wait_bsd_sigpause);
}

/* A handler the sigaction hook never saw: installed before the first libaio
 * call by the rt_sigaction system call itself (as a statically linked runtime
 * does), with SIGSEGV in its sa_mask. The first libaio call reads the
 * disposition of each signal the kernel lists with a handler (SigCgt), so it
 * is found: an io_submit from it gets -EFAULT, not a fault while blocked. */
Test(aio_guard, handler_installed_unseen_that_blocks_sigsegv_gets_efault) {
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } k;
    /* glibc's own flags and return trampoline, from a handler it installed. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count;
    cr_assert_eq(sigaction(SIGUSR2, &sa, NULL), 0);
    cr_assert_eq(syscall(SYS_rt_sigaction, SIGUSR2, NULL, &k, sizeof k.mask), 0);
    k.handler = (void *)submit_from_handler;
    k.mask |= 1ull << (SIGSEGV - 1);
    cr_assert_eq(syscall(SYS_rt_sigaction, SIGUSR1, &k, NULL, sizeof k.mask), 0);
    static struct iocb *bad[1];
    handler_bad = bad;
    handler_ctx = seen_open(bad, gone_page);
    raise(SIGUSR1);
    cr_assert_eq(handler_res, -EFAULT);
}

/* io_submit's fast path reads the iocbs with a routine that the fault
 * handler resumes at its exit (io/guard.c, dsp_guard_iocb_words; issue 29):
 * an iocb whose fields run into a page that faults, with SIGSEGV or with
 * SIGBUS, and an array whose second pointer is bad, answer as the kernel
 * does, and the thread's next call goes through as before. */
Test(aio_guard, iocb_read_that_faults_midway_answers_as_the_kernel) {
    install_guard();
    int fd = open(make_file(disk, FILE_SIZE), O_RDONLY);
    cr_assert(fd >= 0);
    io_context_t ctx = new_ctx(4);
    for (int sig = 0; sig < 2; sig++) {
        /* Two pages: the first readable, the second faulting. The iocb's
         * first 24 bytes in the first page, its fd/opcode word straddling. */
        char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cr_assert(two != MAP_FAILED);
        char *second = sig ? sigbus_page() : gone_page();
        (void)second;
        cr_assert_eq(munmap(two + 4096, 4096), 0);
        if (sig) {
            cr_assert(mremap(second, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, two + 4096) !=
                      MAP_FAILED);
        }
        struct iocb *cb = (struct iocb *)(two + 4096 - 20);
        memset(cb, 0, 20);
        struct iocb *l[1] = {cb};
        errno = 4321;
        int want = (int)syscall(SYS_io_submit, ctx, 1, l);
        cr_assert_eq(want, -1);
        errno = 4321;
        cr_assert_eq(io_submit(ctx, 1, l), -EFAULT, "with %s", sig ? "SIGBUS" : "SIGSEGV");
        cr_assert_eq(errno, 4321);
        /* A good iocb, then a bad pointer: the good one goes. */
        char *buf = plain_alloc(4096);
        struct iocb good;
        io_prep_pread(&good, fd, buf, 4096, 0);
        struct iocb *l2[2] = {&good, cb};
        cr_assert_eq(io_submit(ctx, 2, l2), 1);
        struct io_event ev;
        cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
        cr_assert_eq((long)ev.res, 4096);
        munmap(two, 8192);
    }
    io_destroy(ctx);
    close(fd);
}

/* A program that replaces the guard with its own SIGSEGV handler after the
 * first libaio call (docs/io.md, "Bad pointers": what cannot be promised) still gets
 * -EFAULT for a NULL or low iocb pointer or array: those are answered
 * without a load, as before dsp_guard_iocb_words (issue 29's review: the
 * routine loaded every pointer, so a NULL one ran the program's handler). */
static void exit_99(int sig) {
    (void)sig;
    _exit(99);
}

Test(aio_guard, null_iocb_pointer_after_the_program_replaced_the_guard_gives_efault) {
    install_guard();
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = exit_99;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        io_context_t ctx = new_ctx(4);
        struct iocb *none[2] = {NULL, (struct iocb *)4096};
        /* Opaque to the compiler, which would warn of a bad array. */
        struct iocb **volatile low = (struct iocb **)8, **volatile null = NULL;
        int bad = 0;
        bad |= io_submit(ctx, 1, none) != -EFAULT;
        bad |= (io_submit(ctx, 1, none + 1) != -EFAULT) << 1;
        bad |= (io_submit(ctx, 1, null) != -EFAULT) << 2;
        bad |= (io_submit(ctx, 2, low) != -EFAULT) << 3;
        _exit(bad);
    }
    int how = ended(pid);
    cr_assert_eq(how, 1000, "the child ended with %d (1099: the program's handler ran)", how);
}

/* An asynchronous SIGBUS (a machine check's "action optional" report,
 * BUS_MCEERR_AO: si_code > 0, yet not the fault of the instruction it
 * interrupts) that arrives while io_submit's fast path reads an iocb is the
 * program's, as any sent signal: its handler runs. Issue 29's review: the
 * handler took every si_code > 0 inside dsp_guard_iocb_words for one of the
 * routine's faults and swallowed it. The read is held in the fault with
 * userfaultfd, so that the signal lands there. */
static volatile sig_atomic_t ao_calls;
static void ao_handler(int sig, siginfo_t *info, void *uc) {
    (void)sig, (void)uc;
    if (info->si_code == BUS_MCEERR_AO) ao_calls++;
}

struct ao_submit {
    io_context_t ctx;
    struct iocb **l;
    _Atomic int done;
};
static void *ao_submit_main(void *arg) {
    struct ao_submit *a = arg;
    io_submit(a->ctx, 1, a->l); /* whatever the zeroed iocb gives */
    atomic_store(&a->done, 1);
    return NULL;
}

/* In a child of its own, whose main thread is the leader: only the leader
 * may queue a signal with si_code > 0 to its process (rt_sigqueueinfo); it
 * blocks SIGBUS, so the submitting thread takes it. Exits 0 when the
 * program's handler ran once, 77 without userfaultfd. */
static int ao_child(void) {
    int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (uffd < 0) return 77;
    struct uffdio_api api = {.api = UFFD_API};
    if (ioctl(uffd, UFFDIO_API, &api) != 0) return 77;
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct uffdio_register reg = {.range = {(uintptr_t)page, 4096},
                                  .mode = UFFDIO_REGISTER_MODE_MISSING};
    if (page == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) return 77;
    struct iocb *l[1] = {(struct iocb *)page};
    struct ao_submit a = {.l = l};
    if (io_setup(4, &a.ctx) != 0) return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, ao_submit_main, &a) != 0) return 3;
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_BLOCK, &bus, NULL);
    /* The thread is held in its first read of the iocb. */
    struct uffd_msg msg;
    struct pollfd first = {.fd = uffd, .events = POLLIN};
    if (poll(&first, 1, 10000) != 1 || read(uffd, &msg, sizeof msg) != (ssize_t)sizeof msg)
        return 4;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGBUS;
    si.si_code = BUS_MCEERR_AO;
    si.si_addr = page;
    if (syscall(SYS_rt_sigqueueinfo, getpid(), SIGBUS, &si) != 0) return 5;
    /* Each fault after the signal is answered with a page of zeros. */
    for (int i = 0; i < 500 && !atomic_load(&a.done); i++) {
        struct pollfd p = {.fd = uffd, .events = POLLIN};
        if (poll(&p, 1, 10) == 1 && read(uffd, &msg, sizeof msg) == (ssize_t)sizeof msg) {
            struct uffdio_zeropage z = {.range = {(uintptr_t)page, 4096}};
            ioctl(uffd, UFFDIO_ZEROPAGE, &z);
        }
    }
    if (!atomic_load(&a.done)) return 6;
    pthread_join(t, NULL);
    return ao_calls == 1 ? 0 : 10 + (int)ao_calls;
}

Test(aio_guard, async_sigbus_during_an_iocb_read_reaches_the_programs_handler) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ao_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGBUS, &sa, NULL), 0);
    install_guard();
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) _exit(ao_child());
    int how = ended(pid);
    if (how == 1077) cr_skip_test("userfaultfd refused");
    cr_assert_eq(how, 1000, "the child ended with %d (1010: the program's handler did not run)",
                 how);
}
