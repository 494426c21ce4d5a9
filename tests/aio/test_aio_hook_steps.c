/* The instructions the libaio hooks add to one aligned read, counted with
 * ptrace single steps (issue 29): fio's randread 4 KiB QD32 on tmpfs, one
 * iocb per io_submit, ran at 0.944x with the shim though it made no system
 * call of ours; the hooks added 376 instructions to each I/O (a registry
 * lookup per iocb with nothing registered, dsp_guard_enter's frame saving six
 * registers, errno kept around a path that cannot change it). At a million
 * IOPS each of them is paid once per I/O.
 *
 * A traced child submits and reaps one aligned O_DIRECT read of 4 KiB from a
 * tmpfs file (after a warm-up: a process's and a thread's first call set up
 * the guard and the caches), once through the hooks and once through
 * libaio's own functions (dlsym of the loaded libaio, which the shim does not
 * see), each between two getppid() marks. The parent single-steps both
 * windows: the difference is what the hooks add. An instruction count is
 * exact for a given build, unlike a time. */
#include "aio_test.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

/* Budget for io_submit + io_getevents of one iocb: 376 before the first fix,
 * 220 after it, 132 once the fast path no longer entered the guard, kept its
 * classes in one OR and left resolving out of line. */
#define BUDGET 160
/* The same where the mask is asked at each call (one rt_sigprocmask, one
 * step, included): 299 before issue 29's fast path, 634 in its first form,
 * 321 since. */
#define ASK_BUDGET 360

#if defined(__x86_64__) /* the steps are read from x86-64 registers and opcodes */
typedef int (*submit_fn)(io_context_t, long, struct iocb **);
typedef int (*getevents_fn)(io_context_t, long, long, struct io_event *, struct timespec *);

static void mark(void) {
    syscall(SYS_getppid);
}

static void one_read(submit_fn sub, getevents_fn get, io_context_t ctx, int fd, char *buf) {
    struct iocb cb, *list[1] = {&cb};
    struct io_event ev[1];
    io_prep_pread(&cb, fd, buf, 4096, 8192);
    if (sub(ctx, 1, list) != 1) _exit(13);
    if (get(ctx, 1, 1, ev, NULL) != 1 || (long)ev[0].res != 4096) _exit(14);
}

static void on_usr1(int sig) {
    (void)sig;
}

static void child(const char *path, int ask) {
    if (ask) {
        /* A handler whose mask blocks SIGSEGV: the guard cannot trust the
         * tracked mask and asks the kernel at every call (io/guard.h,
         * dsp_guard_ask), as under a sanitizer runtime. */
        struct sigaction sa = {.sa_handler = on_usr1};
        sigfillset(&sa.sa_mask);
        if (sigaction(SIGUSR1, &sa, NULL) != 0) _exit(17);
    }
    int fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0) _exit(10);
    io_context_t ctx = 0;
    if (io_setup(4, &ctx) != 0) _exit(11);
    char *buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) _exit(12);
    void *aio = dlopen("libaio.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!aio) _exit(15);
    submit_fn raw_sub = (submit_fn)dlvsym(aio, "io_submit", "LIBAIO_0.1");
    getevents_fn raw_get = (getevents_fn)dlvsym(aio, "io_getevents", "LIBAIO_0.4");
    if (!raw_sub || !raw_get) _exit(16);
    for (int i = 0; i < 4; i++) { /* warm-up: first calls, lazy binding */
        one_read(io_submit, io_getevents, ctx, fd, buf);
        one_read(raw_sub, raw_get, ctx, fd, buf);
    }
    mark();
    one_read(io_submit, io_getevents, ctx, fd, buf);
    mark();
    mark();
    one_read(raw_sub, raw_get, ctx, fd, buf);
    mark();
    _exit(0);
}

/* Whether the child stopped at a getppid system call (not yet made). */
static int at_mark(pid_t pid) {
    struct user_regs_struct r;
    cr_assert_eq(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
    errno = 0;
    long word = ptrace(PTRACE_PEEKTEXT, pid, (void *)r.rip, 0);
    cr_assert(errno == 0);
    return (word & 0xffff) == 0x050f && r.rax == SYS_getppid; /* syscall */
}

/* Single steps from just after one mark to the next one. */
static long steps_to_mark(pid_t pid) {
    long n = 0;
    int st;
    for (;;) {
        cr_assert_eq(ptrace(PTRACE_SINGLESTEP, pid, 0, 0), 0);
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "status %#x", st);
        n++;
        if (at_mark(pid)) return n;
        cr_assert(n < 1000000, "no closing mark");
    }
}

/* Runs to the next mark with system-call stops, and steps over it. */
static void run_past_mark(pid_t pid) {
    int st;
    for (;;) {
        cr_assert_eq(ptrace(PTRACE_SYSCALL, pid, 0, 0), 0);
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFSTOPPED(st), "the child ended early: status %#x", st);
        if (WSTOPSIG(st) != (SIGTRAP | 0x80)) continue;
        struct __ptrace_syscall_info info;
        cr_assert(ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info) > 0);
        if (info.op == PTRACE_SYSCALL_INFO_EXIT) {
            struct user_regs_struct r;
            cr_assert_eq(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
            if (r.orig_rax == SYS_getppid) return;
        }
    }
}

/* What the hooks add to one aligned read, in a child traced from the start. */
static long added(int ask) {
    const char *path = make_file("/dev/shm", 1 << 20);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) _exit(20);
        raise(SIGSTOP);
        child(path, ask);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSTOPPED(st));
    cr_assert_eq(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL), 0);
    run_past_mark(pid);
    long hooked = steps_to_mark(pid);
    run_past_mark(pid); /* the closing mark */
    run_past_mark(pid); /* the next opening one */
    long raw = steps_to_mark(pid);
    cr_assert_eq(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed: status %#x", st);
    cr_log_info("one read%s: %ld instructions through the hooks, %ld through libaio: +%ld",
                ask ? " (mask asked at each call)" : "", hooked, raw, hooked - raw);
    return hooked - raw;
}

Test(aio_hook, one_aligned_read_adds_under_160_instructions) {
    long n = added(0);
    cr_assert(n <= BUDGET, "the hooks add %ld instructions to one aligned read, more than %d", n,
              BUDGET);
}

/* Where the mask is asked at every call, the general path still classifies
 * the fast way after asking (issue 29's review: it went through the planned
 * path, +634 instructions). */
Test(aio_hook, one_aligned_read_where_the_mask_is_asked_adds_under_360_instructions) {
    long n = added(1);
    cr_assert(n <= ASK_BUDGET,
              "with the mask asked at each call the hooks add %ld instructions to one aligned "
              "read, more than %d",
              n, ASK_BUDGET);
}
#else
Test(aio_hook, one_aligned_read_adds_under_160_instructions) {
    cr_skip_test("x86-64 only: the steps are read from its registers and opcodes");
}
Test(aio_hook, one_aligned_read_where_the_mask_is_asked_adds_under_360_instructions) {
    cr_skip_test("x86-64 only: the steps are read from its registers and opcodes");
}
#endif
