/* The system calls io_submit and io_getevents make under the shim, counted
 * with ptrace (issue 29): the hooks must add none to what libaio makes
 * without them (one io_submit and one io_getevents, as libaio's functions
 * wrap the system calls), whatever the buffer: aligned or not, on an O_DIRECT
 * or a buffered fd, bounced or sent as it is. Before, every io_submit asked
 * the kernel for the thread's signal mask (rt_sigprocmask), and one whose
 * buffer was not 4 KiB-aligned asked fcntl(F_GETFL), and statx for O_DIRECT.
 *
 * A forked child does the I/O: a warm-up round first (the first call of a
 * process or a thread sets up the guard, the bounce pool and the caches), then
 * ROUNDS rounds between two getppid() calls that mark the window. The parent
 * traces it and lists every system call made inside the window. */
#include "aio_test.h"

#include <sys/ptrace.h>
#include <sys/wait.h>

#define ROUNDS 64
#define PER    4 /* iocbs per io_submit */

static const char *disk = "/tmp"; /* ext4: 512-byte DIO alignment */

struct kind {
    int direct;
    int misaligned;
};

/* The child's part: ROUNDS io_submit + io_getevents of PER reads, after a
 * warm-up; exits 0 when every read returned its bytes. */
static void child_io(const char *path, struct kind k) {
    int fd = open(path, O_RDONLY | (k.direct ? O_DIRECT : 0));
    if (fd < 0) _exit(10);
    io_context_t ctx = 0;
    if (io_setup(PER, &ctx) != 0) _exit(11);
    char *mem =
        mmap(NULL, PER * 8192 + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) _exit(12);
    struct iocb cb[PER], *list[PER];
    struct io_event ev[PER];
    for (int round = -3; round < ROUNDS; round++) {
        if (round == 0) syscall(SYS_getppid); /* the window opens */
        for (int i = 0; i < PER; i++) {
            io_prep_pread(&cb[i], fd, mem + i * 8192 + (k.misaligned ? 1 : 0), 4096,
                          (long long)(i * 4096 + (round & 7) * 65536));
            list[i] = &cb[i];
        }
        if (io_submit(ctx, PER, list) != PER) _exit(13);
        for (int got = 0; got < PER;) {
            int n = io_getevents(ctx, 1, PER - got, ev, NULL);
            if (n <= 0) _exit(14);
            for (int i = 0; i < n; i++)
                if ((long)ev[i].res != 4096) _exit(15);
            got += n;
        }
    }
    syscall(SYS_getppid); /* the window closes */
    _exit(0);
}

/* Runs child_io under ptrace: how many system calls the window held other
 * than io_submit and io_getevents (their numbers into others[]), and how many
 * io_submit calls. */
static int traced(const char *path, struct kind k, long *others, int cap, int *submits) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) _exit(20);
        raise(SIGSTOP);
        child_io(path, k);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSTOPPED(st), "the child did not stop for the tracer");
    cr_assert_eq(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL), 0);
    int in_window = 0, n = 0, sig = 0;
    *submits = 0;
    for (;;) {
        cr_assert_eq(ptrace(PTRACE_SYSCALL, pid, 0, sig), 0);
        sig = 0;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        if (WIFEXITED(st) || WIFSIGNALED(st)) break;
        if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
            sig = WSTOPSIG(st); /* a signal for the child: delivered */
            continue;
        }
        struct __ptrace_syscall_info info;
        cr_assert(ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info) > 0);
        if (info.op != PTRACE_SYSCALL_INFO_ENTRY) continue;
        long nr = (long)info.entry.nr;
        if (nr == SYS_getppid) {
            in_window = !in_window;
            continue;
        }
        if (!in_window) continue;
        if (nr == SYS_io_submit)
            ++*submits;
        else if (nr != SYS_io_getevents && n < cap)
            others[n++] = nr;
        else if (nr != SYS_io_getevents)
            n++;
    }
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed: status %#x", st);
    return n;
}

static void no_added_system_call(struct kind k) {
    const char *path = make_file(disk, FILE_SIZE);
    long others[16];
    int submits;
    int n = traced(path, k, others, 16, &submits);
    cr_assert_eq(submits, ROUNDS, "io_submit calls in the window: %d", submits);
    if (n) {
        char list[256] = "";
        for (int i = 0; i < n && i < 16; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), " %ld", others[i]);
        cr_assert_fail("%d system calls besides io_submit and io_getevents in %d rounds "
                       "(direct=%d misaligned=%d), numbers:%s",
                       n, ROUNDS, k.direct, k.misaligned, list);
    }
}

Test(aio_syscalls, io_submit_adds_no_system_call_aligned_direct) {
    no_added_system_call((struct kind){1, 0});
}

/* Bounced: the pool's buffers are kept, the fd's alignment cached. */
Test(aio_syscalls, io_submit_adds_no_system_call_misaligned_direct) {
    no_added_system_call((struct kind){1, 1});
}

Test(aio_syscalls, io_submit_adds_no_system_call_aligned_buffered) {
    no_added_system_call((struct kind){0, 0});
}

/* Before: an fcntl(F_GETFL) per io_submit to learn the fd has no O_DIRECT. */
Test(aio_syscalls, io_submit_adds_no_system_call_misaligned_buffered) {
    no_added_system_call((struct kind){0, 1});
}
