/* The libaio hooks keep each fd's O_DIRECT flag and alignment across calls
 * (io/dio.h, issue 29). Each test makes the cache hold an answer, then makes
 * the fd number name a file with the other answer, and checks that a read
 * from a buffer at page + 1 is handled for the file the number names now: on
 * an O_DIRECT fd bounced (the kernel refuses it: a stale "buffered" answer
 * gives -EINVAL), on a buffered fd sent as it is. */
#include "aio_test.h"

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
