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

#include "syscall_window.h"

#include <sys/mman.h>

#define ROUNDS 64
#define PER    4 /* iocbs per io_submit */

static const char *disk = "/tmp"; /* ext4: 512-byte DIO alignment */

struct kind {
    const char *path;
    int direct;
    int misaligned;
};

/* PER reads at round r's offsets, submitted at once and reaped. */
static void one_round(io_context_t ctx, int fd, char *mem, struct kind *k, int round) {
    struct iocb cb[PER], *list[PER];
    struct io_event ev[PER];
    for (int i = 0; i < PER; i++) {
        io_prep_pread(&cb[i], fd, mem + i * 8192 + (k->misaligned ? 1 : 0), 4096,
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

/* The file, a context and buffers: the child's set-up, before any libaio hook runs. */
static int child_setup(struct kind *k, io_context_t *ctx, char **mem) {
    int fd = open(k->path, O_RDONLY | (k->direct ? O_DIRECT : 0));
    if (fd < 0) _exit(10);
    *ctx = 0;
    if (io_setup(PER, ctx) != 0) _exit(11);
    *mem =
        mmap(NULL, PER * 8192 + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (*mem == MAP_FAILED) _exit(12);
    return fd;
}

/* The child's part: ROUNDS io_submit + io_getevents of PER reads in the
 * window, after a warm-up; exits 0 when every read returned its bytes. */
static void child_io(void *arg) {
    struct kind *k = arg;
    io_context_t ctx;
    char *mem;
    int fd = child_setup(k, &ctx, &mem);
    for (int round = -3; round < ROUNDS; round++) {
        if (round == 0) window_mark();
        one_round(ctx, fd, mem, k, round);
    }
    window_mark();
}

static void no_added_system_call(struct kind k) {
    k.path = make_file(disk, FILE_SIZE);
    static struct window w;
    window_count(child_io, &k, &w);
    cr_assert_eq(w.by_nr[SYS_io_submit], ROUNDS, "io_submit calls in the window: %ld",
                 w.by_nr[SYS_io_submit]);
    long others = w.total - w.by_nr[SYS_io_submit] - w.by_nr[SYS_io_getevents];
    if (others) {
        char list[256];
        window_list(&w, (const long[]){SYS_io_submit, SYS_io_getevents, -1}, list, sizeof list);
        cr_assert_fail("%ld system calls besides io_submit and io_getevents in %d rounds "
                       "(direct=%d misaligned=%d), number:count:%s",
                       others, ROUNDS, k.direct, k.misaligned, list);
    }
}

Test(aio_syscalls, io_submit_adds_no_system_call_aligned_direct) {
    no_added_system_call((struct kind){NULL, 1, 0});
}

/* Bounced: the pool's buffers are kept, the fd's alignment cached. */
Test(aio_syscalls, io_submit_adds_no_system_call_misaligned_direct) {
    no_added_system_call((struct kind){NULL, 1, 1});
}

Test(aio_syscalls, io_submit_adds_no_system_call_aligned_buffered) {
    no_added_system_call((struct kind){NULL, 0, 0});
}

/* Before: an fcntl(F_GETFL) per io_submit to learn the fd has no O_DIRECT. */
Test(aio_syscalls, io_submit_adds_no_system_call_misaligned_buffered) {
    no_added_system_call((struct kind){NULL, 0, 1});
}

/* --- the first libaio call ------------------------------------------------
 * It installs the fault guard (two rt_sigaction to read SIGSEGV's and
 * SIGBUS's dispositions, two to install) and checks that no handler the
 * sigaction hook could not see runs with either blocked. That check read the
 * disposition of every signal: 64 rt_sigaction in the first io_submit of
 * every process (68 under fio against 4 without the shim, issue 29's
 * review). Only a signal with a handler can run one: the kernel lists them. */

static void handled(int sig) {
    (void)sig;
}

/* A program with a few handlers of its own: its first io_submit in the window. */
static void child_first_submit(void *arg) {
    struct kind *k = arg;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handled;
    for (int sig = SIGUSR1; sig; sig = sig == SIGUSR1 ? SIGUSR2 : sig == SIGUSR2 ? SIGTERM : 0)
        if (sigaction(sig, &sa, NULL) != 0) _exit(16);
    io_context_t ctx;
    char *mem;
    int fd = child_setup(k, &ctx, &mem);
    window_mark();
    one_round(ctx, fd, mem, k, 0);
    window_mark();
}

static int popcount_ll(unsigned long long v) {
    return __builtin_popcountll(v);
}

Test(aio_syscalls, first_io_submit_reads_only_the_handled_signals_dispositions) {
    struct kind k = {make_file(disk, FILE_SIZE), 0, 1};
    static struct window w;
    window_count(child_first_submit, &k, &w);
    cr_assert_eq(w.by_nr[SYS_io_submit], 1);
    /* The guard's four, and one per signal with a handler (the three above,
     * and any glibc installed for itself), SIGSEGV's and SIGBUS's aside. */
    unsigned long long others = w.caught & ~((1ull << (SIGSEGV - 1)) | (1ull << (SIGBUS - 1)));
    cr_assert_geq(popcount_ll(others), 3, "SigCgt %#llx: the handlers are not listed", w.caught);
    long allowed = 4 + popcount_ll(others);
    cr_assert_leq(w.by_nr[SYS_rt_sigaction], allowed,
                  "%ld rt_sigaction in the first io_submit, %ld needed (SigCgt %#llx)",
                  w.by_nr[SYS_rt_sigaction], allowed, w.caught);
}
