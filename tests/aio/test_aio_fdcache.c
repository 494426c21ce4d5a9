/* The libaio hooks keep each fd's O_DIRECT flag and alignment across calls
 * (io/dio.h, issue 29). Each test makes the cache hold an answer, then makes
 * the fd number name a file with the other answer, and checks that a read
 * from a buffer at page + 1 is handled for the file the number names now: on
 * an O_DIRECT fd bounced (the kernel refuses it: a stale "buffered" answer
 * gives -EINVAL), on a buffered fd sent as it is. */
#include "aio_test.h"

#include "syscall_window.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/wait.h>

static const char *disk = "/tmp"; /* ext4: 512-byte DIO alignment */

/* A misaligned 64 KiB read at off on fd: its result, checked data when whole. */
static long misaligned_read(io_context_t ctx, int fd, long long off) {
    static char *buf;
    if (!buf) buf = misaligned(65536);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 65536, off);
    long r = run_one(ctx, &cb);
    if (r == 65536) check_pattern(buf, (uint64_t)off, 65536);
    return r;
}

/* Reads through fd, which must be O_DIRECT now: bounced, every byte right. */
static void expect_bounced(io_context_t ctx, int fd) {
    long long before = stat_of("aio_bounced");
    long r = misaligned_read(ctx, fd, 4096);
    cr_assert_eq(r, 65536, "a read on an O_DIRECT fd was not bounced: %ld (%s)", r,
                 r < 0 ? strerror((int)-r) : "short");
    cr_assert_eq(stat_of("aio_bounced"), before + 1);
}

/* Reads through fd, which must be buffered now: sent as it is. */
static void expect_direct(io_context_t ctx, int fd) {
    long long before = stat_of("aio_bounced");
    cr_assert_eq(misaligned_read(ctx, fd, 8192), 65536);
    cr_assert_eq(stat_of("aio_bounced"), before, "a read on a buffered fd was bounced");
}

/* A test file (a path that reopens it: make_file's is static) and a context. */
static io_context_t setup(char *copy, size_t n) {
    snprintf(copy, n, "%s", make_file(disk, FILE_SIZE));
    return new_ctx(4);
}

Test(aio_fdcache, fd_closed_and_reopened_with_o_direct_is_asked_again) {
    char copy[64];
    io_context_t ctx = setup(copy, sizeof copy);
    int fd = open(copy, O_RDONLY);
    expect_direct(ctx, fd); /* cached: buffered */
    close(fd);
    int again = open(copy, O_RDONLY | O_DIRECT);
    cr_assert_eq(again, fd, "the number was not reused (%d, %d)", again, fd);
    expect_bounced(ctx, again);
    close(again);
    again = open(copy, O_RDONLY);
    cr_assert_eq(again, fd);
    expect_direct(ctx, again);
}

Test(aio_fdcache, f_setfl_toggling_o_direct_is_seen) {
    io_context_t ctx = new_ctx(4);
    int fd = open(make_file(disk, FILE_SIZE), O_RDONLY);
    expect_direct(ctx, fd);
    cr_assert_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT), 0);
    expect_bounced(ctx, fd);
    cr_assert_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT), 0);
    expect_direct(ctx, fd);
}

/* F_SETFL on a duplicate changes the open file both numbers name. */
Test(aio_fdcache, f_setfl_on_a_duplicate_is_seen_through_the_original) {
    io_context_t ctx = new_ctx(4);
    int fd = open(make_file(disk, FILE_SIZE), O_RDONLY);
    int dup_fd = dup(fd);
    expect_direct(ctx, fd);
    cr_assert_eq(fcntl(dup_fd, F_SETFL, O_DIRECT), 0);
    expect_bounced(ctx, fd);
}

Test(aio_fdcache, dup2_over_a_cached_fd_is_asked_again) {
    const char *path = make_file(disk, FILE_SIZE);
    io_context_t ctx = new_ctx(4);
    int buffered = open(path, O_RDONLY);
    int direct = open_direct(path, O_RDONLY);
    expect_direct(ctx, buffered);
    expect_bounced(ctx, direct);
    cr_assert_eq(dup2(direct, buffered), buffered);
    expect_bounced(ctx, buffered);
    int other = open(path, O_RDONLY);
    cr_assert_eq(dup3(other, direct, 0), direct);
    expect_direct(ctx, direct);
}

/* A number freed where no hook sees it (the raw system call) is forgotten
 * when open hands it out again. */
Test(aio_fdcache, fd_freed_by_a_raw_close_and_reused_by_open_is_asked_again) {
    char copy[64];
    io_context_t ctx = setup(copy, sizeof copy);
    int fd = open(copy, O_RDONLY);
    expect_direct(ctx, fd);
    cr_assert_eq(syscall(SYS_close, fd), 0);
    cr_assert_eq(open(copy, O_RDONLY | O_DIRECT), fd);
    expect_bounced(ctx, fd);
}

Test(aio_fdcache, fd_freed_by_close_range_is_asked_again) {
    char copy[64];
    io_context_t ctx = setup(copy, sizeof copy);
    int fd = open(copy, O_RDONLY | O_DIRECT);
    expect_bounced(ctx, fd);
    cr_assert_eq(close_range((unsigned)fd, (unsigned)fd, 0), 0);
    /* Reused by a call no hook sees: only close_range's forgetting helps. */
    cr_assert_eq(syscall(SYS_openat, AT_FDCWD, copy, O_RDONLY), fd);
    expect_direct(ctx, fd);
}

/* The child shares the open file with its parent, whose fcntl it cannot
 * see: it starts with nothing cached. */
Test(aio_fdcache, fork_child_asks_again_for_an_fd_its_parent_cached) {
    io_context_t ctx = new_ctx(4);
    int fd = open(make_file(disk, FILE_SIZE), O_RDONLY);
    expect_direct(ctx, fd);
    pid_t pid = fork();
    if (pid == 0) {
        /* Unseen by any hook: the raw system call. */
        if (syscall(SYS_fcntl, fd, F_SETFL, O_DIRECT) != 0) _exit(2);
        io_context_t c = 0;
        if (io_setup(4, &c) != 0) _exit(3);
        long long before = stat_of("aio_bounced");
        long r = misaligned_read(c, fd, 4096);
        _exit(r == 65536 && stat_of("aio_bounced") == before + 1 ? 0 : 1);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child read stale: status %#x", st);
}

/* Another thread closes the fd and opens the file again, with the other
 * flag, between two io_submit: its forget must reach the thread that asks
 * (the first answer kept makes every thread's forget count: io/dio.c). The
 * other thread runs already when the first answer is kept. */
static struct {
    pthread_barrier_t go, done;
    const char *path;
    int fd, flags;
} other;

static void *reopen_in_other_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 2; i++) {
        pthread_barrier_wait(&other.go);
        close(other.fd);
        other.fd = open(other.path, O_RDONLY | other.flags);
        pthread_barrier_wait(&other.done);
    }
    return NULL;
}

static void reopened_by_another_thread(void) {
    char copy[64];
    io_context_t ctx = setup(copy, sizeof copy);
    other.path = copy;
    pthread_barrier_init(&other.go, NULL, 2);
    pthread_barrier_init(&other.done, NULL, 2);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, reopen_in_other_thread, NULL), 0);
    int fd = open_direct(copy, O_RDONLY);
    other.fd = fd;
    expect_bounced(ctx, fd); /* the first answer kept: O_DIRECT */
    other.flags = 0;
    pthread_barrier_wait(&other.go);
    pthread_barrier_wait(&other.done);
    cr_assert_eq(other.fd, fd, "the number was not reused (%d, %d)", other.fd, fd);
    expect_direct(ctx, fd);
    other.flags = O_DIRECT;
    pthread_barrier_wait(&other.go);
    pthread_barrier_wait(&other.done);
    cr_assert_eq(other.fd, fd);
    expect_bounced(ctx, fd);
    pthread_join(t, NULL);
}

Test(aio_fdcache, fd_reopened_with_the_other_flag_by_another_thread_is_asked_again) {
    reopened_by_another_thread();
}

/* Where membarrier is refused (a seccomp profile, here one that answers
 * EPERM), the cache still forgets: the first answer kept turns forgetting on
 * with a barrier on its own side. */
Test(aio_fdcache, membarrier_refused_still_forgets_a_reopened_fd) {
    refuse_syscall(SYS_membarrier);
    cr_assert_eq(syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0), -1);
    reopened_by_another_thread();
}

/* --- what forgetting costs -------------------------------------------------
 * Every open, close and dup of every process forgets (preload/fdcalls.c).
 * The barrier that lets that be a plain load is made once, by the first
 * answer the cache keeps (a membarrier system call): a process that never
 * keeps one, because it makes no libaio call or no misaligned one, makes
 * none. Counted with ptrace. */

/* Opens, duplicates and closes files, in the window. */
static void fd_churn(const char *path) {
    for (int i = 0; i < 16; i++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) _exit(2);
        int d = dup(fd);
        if (d < 0 || dup2(fd, d) != d || fcntl(fd, F_SETFL, O_DIRECT) != 0) _exit(3);
        close(d);
        close(fd);
    }
}

static void child_without_libaio(void *arg) {
    window_mark();
    fd_churn(arg);
    window_mark();
}

Test(aio_fdcache, process_that_never_io_submits_makes_no_membarrier) {
    static struct window w;
    window_count(child_without_libaio, (void *)make_file(disk, 65536), &w);
    cr_assert_geq(w.by_nr[SYS_close], 32, "the window missed the closes");
    cr_assert_eq(w.by_nr[SYS_membarrier], 0, "%ld membarrier", w.by_nr[SYS_membarrier]);
}

/* A child's misaligned reads of path, buffered, through one context. */
struct child_reads {
    io_context_t ctx;
    int fd;
    char *buf;
};

static void child_reads_open(struct child_reads *r, const char *path) {
    r->ctx = 0;
    if (io_setup(4, &r->ctx) != 0) _exit(4);
    r->fd = open(path, O_RDONLY);
    r->buf =
        (char *)mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) + 1;
}

/* One misaligned 4 KiB read, whole, or the child exits 5. */
static void child_read(struct child_reads *r) {
    struct iocb cb, *list[1] = {&cb};
    struct io_event ev[1];
    io_prep_pread(&cb, r->fd, r->buf, 4096, 0);
    if (io_submit(r->ctx, 1, list) != 1 || io_getevents(r->ctx, 1, 1, ev, NULL) != 1 ||
        (long)ev[0].res != 4096)
        _exit(5);
}

/* A misaligned read on a buffered fd: the cache keeps its first answer. */
static void child_keeping_an_answer(void *arg) {
    struct child_reads r;
    child_reads_open(&r, arg);
    window_mark();
    for (int i = 0; i < 3; i++) {
        child_read(&r);
        fd_churn(arg);
    }
    window_mark();
}

/* The counterpart, which shows the window sees membarrier: register and
 * barrier, once (one refused call where a seccomp profile refuses it). */
Test(aio_fdcache, first_answer_kept_makes_the_membarrier_once) {
    static struct window w;
    window_count(child_keeping_an_answer, (void *)make_file(disk, 65536), &w);
    cr_assert_eq(w.by_nr[SYS_io_submit], 3);
    long n = w.by_nr[SYS_membarrier];
    cr_assert(n == 1 || n == 2, "%ld membarrier", n);
}

/* A misaligned read on a buffered fd, the manager's own files read (a new
 * block, then a trim: /proc/self/maps), and the same read again inside the
 * window. */
static void child_between_the_shims_own_files(void *arg) {
    struct child_reads r;
    child_reads_open(&r, arg);
    void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
    int (*release)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "dsp_free");
    void (*trim)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "dsp_trim");
    if (!alloc || !release || !trim) _exit(6);
    release(alloc(1 << 20)); /* the first pin's one-time files: plan, node ledger */
    trim();                  /* so that the pin below is a new one, which counts the maps again */
    child_read(&r);
    void *p = alloc(1 << 20);
    if (!p) _exit(7);
    release(p);
    trim();
    window_mark();
    child_read(&r);
    window_mark();
}

/* Regression (review of issue 29's fd cache): the library's own open and
 * close bound to its fd hooks, so every file it read (the memory cgroup's at
 * each new pin, /proc/self/maps) threw the cached answers away, and the next
 * misaligned io_submit asked the kernel again. */
Test(aio_fdcache, the_shims_own_files_keep_the_cached_answers) {
    static struct window w;
    window_count(child_between_the_shims_own_files, (void *)make_file(disk, 65536), &w);
    cr_assert_eq(w.by_nr[SYS_io_submit], 1);
    cr_assert_eq(w.by_nr[SYS_fcntl], 0, "the fd was asked again: %ld fcntl", w.by_nr[SYS_fcntl]);
}
