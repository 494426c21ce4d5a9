/* The libaio layer with the default policy (DSP_AIO_BOUNCE=misaligned). */
#include "aio_test.h"

#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <sys/wait.h>

static const char *disk = "/tmp";    /* ext4 here: 512-byte DIO alignment */
static const char *mem = "/dev/shm"; /* tmpfs: reports no DIO alignment */

Test(aio, pinned_aligned_read_goes_direct) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = pinned_alloc(1 << 20);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 1 << 20, 4096);
    cb.data = (void *)0x1234;
    cr_assert_eq(run_one(ctx, &cb), 1 << 20);
    check_pattern(buf, 4096, 1 << 20);
    cr_assert_eq(stat_of("aio_direct_pinned"), 1);
    cr_assert_eq(stat_of("aio_bounced"), 0);
    cr_assert_eq(stat_of("aio_iocbs"), 1);
}

Test(aio, unpinned_aligned_read_goes_direct) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = plain_alloc(65536);
    struct iocb cb;
    read_checked(ctx, &cb, fd, buf, 65536, 0);
    cr_assert_eq(stat_of("aio_direct_unpinned"), 1);
    cr_assert_eq(stat_of("aio_bounced"), 0);
}

Test(aio, misaligned_buffer_read_is_bounced) {
    const char *path = make_file(disk, FILE_SIZE);
    int fd = open_direct(path, O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = misaligned(1 << 20);
    struct iocb cb;
    /* Without the shim the kernel refuses it. */
    io_prep_pread(&cb, fd, buf, 1 << 20, 8192);
    struct iocb *l[1] = {&cb};
    cr_assert_eq(syscall(SYS_io_submit, ctx, 1, l), 1);
    struct io_event ev;
    cr_assert_eq(syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq((long)ev.res, -EINVAL);
    /* Through the shim it succeeds, with the caller's iocb and data. */
    io_prep_pread(&cb, fd, buf, 1 << 20, 8192);
    cb.data = &cb;
    cr_assert_eq(run_one(ctx, &cb), 1 << 20);
    check_pattern(buf, 8192, 1 << 20);
    cr_assert_eq(stat_of("aio_bounced"), 1);
    cr_assert_eq(stat_of("aio_bounce_bytes"), 1 << 20);
    /* The caller's iocb is as it was given. */
    cr_assert_eq(cb.u.c.buf, buf);
    cr_assert_eq(cb.u.c.nbytes, 1 << 20);
    cr_assert_eq(cb.u.c.offset, 8192);
    cr_assert_eq(cb.aio_lio_opcode, IO_CMD_PREAD);
}

Test(aio, misaligned_offset_and_length_read_is_widened) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = plain_alloc(1 << 20);
    memset(buf, 0xEE, 1 << 20);
    struct iocb cb;
    /* Aligned buffer, offset 1000 and length 3000: widened to [512, 4096). */
    io_prep_pread(&cb, fd, buf, 3000, 1000);
    cr_assert_eq(run_one(ctx, &cb), 3000);
    check_pattern(buf, 1000, 3000);
    cr_assert_eq((unsigned char)buf[3000], 0xEE, "wrote past the requested length");
    cr_assert_eq(stat_of("aio_bounced"), 1);
}

Test(aio, widened_read_is_clamped_at_end_of_file) {
    size_t size = 10000; /* not a multiple of 512 */
    int fd = open_direct(make_file(disk, size), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = plain_alloc(65536);
    memset(buf, 0xEE, 65536);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 5000, 7000); /* asks for 5000, 3000 exist */
    cr_assert_eq(run_one(ctx, &cb), 3000);
    check_pattern(buf, 7000, 3000);
    cr_assert_eq((unsigned char)buf[3000], 0xEE);
    io_prep_pread(&cb, fd, buf, 100, 20001); /* wholly past the end */
    cr_assert_eq(run_one(ctx, &cb), 0);
}

Test(aio, misaligned_buffer_write_is_bounced) {
    const char *path = make_file(disk, FILE_SIZE);
    int fd = open_direct(path, O_RDWR);
    io_context_t ctx = new_ctx(8);
    char *src = misaligned(1 << 20);
    for (int i = 0; i < 1 << 20; i++) src[i] = (char)(i * 7 + 3);
    struct iocb cb;
    io_prep_pwrite(&cb, fd, src, 1 << 20, 1 << 20);
    cr_assert_eq(run_one(ctx, &cb), 1 << 20);
    cr_assert_eq(stat_of("aio_bounced"), 1);
    char *back = malloc(1 << 20);
    int plain = open(path, O_RDONLY);
    cr_assert_eq(pread(plain, back, 1 << 20, 1 << 20), 1 << 20);
    cr_assert_eq(memcmp(back, src, 1 << 20), 0, "written data differs");
}

Test(aio, misaligned_offset_write_passes_through) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDWR);
    io_context_t ctx = new_ctx(8);
    char *src = plain_alloc(4096);
    struct iocb cb;
    io_prep_pwrite(&cb, fd, src, 4096, 100);
    cr_assert_eq(run_one(ctx, &cb), -EINVAL);
    cr_assert_eq(stat_of("aio_bounced"), 0);
}

Test(aio, buffered_fd_is_not_bounced_until_o_direct_is_set) {
    const char *path = make_file(disk, FILE_SIZE);
    int fd = open(path, O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = misaligned(8192);
    struct iocb cb;
    read_checked(ctx, &cb, fd, buf, 8192, 100);
    cr_assert_eq(stat_of("aio_bounced"), 0);
    cr_assert_eq(fcntl(fd, F_SETFL, O_DIRECT), 0);
    memset(buf, 0, 8192);
    read_checked(ctx, &cb, fd, buf, 8192, 100);
    cr_assert_eq(stat_of("aio_bounced"), 1);
}

Test(aio, tmpfs_misaligned_read_is_correct) {
    int fd = open_direct(make_file(mem, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = misaligned(100000);
    struct iocb cb;
    read_checked(ctx, &cb, fd, buf, 100000, 12345);
}

Test(aio, vectored_requests_are_bounced_whole) {
    const char *path = make_file(disk, FILE_SIZE);
    int fd = open_direct(path, O_RDWR);
    io_context_t ctx = new_ctx(8);
    char *a = plain_alloc(8192), *b = misaligned(4096 + 512), *c = plain_alloc(4096);
    struct iovec rv[3] = {{a, 8192}, {b, 4096 + 512}, {c, 4096 - 512}};
    struct iocb cb;
    io_prep_preadv(&cb, fd, rv, 3, 4096);
    cr_assert_eq(run_one(ctx, &cb), 16384);
    check_pattern(a, 4096, 8192);
    check_pattern(b, 4096 + 8192, 4096 + 512);
    check_pattern(c, 4096 + 8192 + 4096 + 512, 4096 - 512);
    cr_assert_eq(stat_of("aio_bounced"), 1);
    /* Gathered on the way out. */
    memset(a, 'a', 8192);
    memset(b, 'b', 4608);
    memset(c, 'c', 3584);
    io_prep_pwritev(&cb, fd, rv, 3, 65536);
    cr_assert_eq(run_one(ctx, &cb), 16384);
    char *back = malloc(16384);
    int plain = open(path, O_RDONLY);
    cr_assert_eq(pread(plain, back, 16384, 65536), 16384);
    for (int i = 0; i < 16384; i++)
        cr_assert_eq(back[i], i < 8192 ? 'a' : i < 8192 + 4608 ? 'b' : 'c', "byte %d", i);
    cr_assert_eq(stat_of("aio_bounced"), 2);
}

Test(aio, eventfd_is_signalled_for_bounced_reads) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    int efd = eventfd(0, 0);
    char *buf = misaligned(4096);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 4096, 0);
    io_set_eventfd(&cb, efd);
    cr_assert_eq(run_one(ctx, &cb), 4096);
    uint64_t n = 0;
    cr_assert_eq(read(efd, &n, 8), 8);
    cr_assert_eq(n, 1);
    check_pattern(buf, 0, 4096);
    cr_assert_eq(stat_of("aio_bounced"), 1);
}

Test(aio, other_opcodes_pass_through) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDWR);
    io_context_t ctx = new_ctx(8);
    struct iocb cb;
    io_prep_fsync(&cb, fd);
    long r = run_one(ctx, &cb);
    cr_assert(r == 0 || r == -EINVAL, "fsync: %ld", r);
    io_prep_fdsync(&cb, fd);
    r = run_one(ctx, &cb);
    cr_assert(r == 0 || r == -EINVAL, "fdsync: %ld", r);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "x", 1), 1);
    io_prep_poll(&cb, p[0], POLLIN);
    cr_assert_eq(run_one(ctx, &cb) & POLLIN, POLLIN);
    cr_assert_eq(stat_of("aio_passthrough"), 3);
}

/* io_submit's fast path takes 1 to 32 iocbs at once, the general path
 * classifies up to 128 the same way a part at a time, and more go through
 * its plans (issue 29): every size on either side of those limits, each
 * batch mixing unpinned and pinned reads with an fsync, counted by class
 * and read whole. */
Test(aio, batches_of_every_size_are_counted_by_class) {
    int fd = open_direct(make_file(mem, FILE_SIZE), O_RDWR);
    io_context_t ctx = new_ctx(256);
    char *plain = plain_alloc(200 * 4096), *pinned = pinned_alloc(200 * 4096);
    static const long sizes[] = {1, 2, 31, 32, 33, 64, 127, 128, 129, 200};
    static struct iocb cb[200];
    struct iocb *l[200];
    long long want[3] = {0, 0, 0}; /* unpinned, pinned, passthrough */
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        long n = sizes[k];
        for (long i = 0; i < n; i++) {
            l[i] = &cb[i];
            if (i % 3 == 2)
                io_prep_fsync(&cb[i], fd);
            else
                io_prep_pread(&cb[i], fd, (i % 3 ? pinned : plain) + i * 4096, 4096, i * 4096);
            want[i % 3]++;
        }
        cr_assert_eq(io_submit(ctx, n, l), n, "a batch of %ld", n);
        struct io_event ev[200];
        for (long got = 0; got < n;) {
            int r = io_getevents(ctx, 1, n - got, ev + got, NULL);
            cr_assert_gt(r, 0);
            got += r;
        }
        for (long e = 0; e < n; e++) {
            long i = (struct iocb *)ev[e].obj - cb;
            cr_assert(i >= 0 && i < n, "event %ld of a batch of %ld: not one of its iocbs", e, n);
            if (i % 3 == 2) continue; /* fsync: 0, or -EINVAL where unsupported */
            cr_assert_eq((long)ev[e].res, 4096, "iocb %ld of a batch of %ld", i, n);
            check_pattern((i % 3 ? pinned : plain) + i * 4096, (uint64_t)i * 4096, 4096);
        }
        cr_assert_eq(stat_of("aio_direct_unpinned"), want[0], "after a batch of %ld", n);
        cr_assert_eq(stat_of("aio_direct_pinned"), want[1], "after a batch of %ld", n);
        cr_assert_eq(stat_of("aio_passthrough"), want[2], "after a batch of %ld", n);
        cr_assert_eq(stat_of("aio_iocbs"), want[0] + want[1] + want[2]);
    }
    cr_assert_eq(stat_of("aio_bounced"), 0);
    /* Accepted in part: only the iocbs before the bad one are counted. */
    struct iocb bad;
    io_prep_pread(&bad, 999, plain, 4096, 0);
    io_prep_pread(&cb[0], fd, pinned, 4096, 0);
    io_prep_pread(&cb[1], fd, plain, 4096, 4096);
    struct iocb *lp[4] = {&cb[0], &cb[1], &bad, &cb[2]};
    io_prep_pread(&cb[2], fd, pinned + 4096, 4096, 4096);
    cr_assert_eq(io_submit(ctx, 4, lp), 2);
    struct io_event ev[2];
    cr_assert_eq(io_getevents(ctx, 2, 2, ev, NULL), 2);
    cr_assert_eq(stat_of("aio_direct_pinned"), want[1] + 1);
    cr_assert_eq(stat_of("aio_direct_unpinned"), want[0] + 1);
    cr_assert_eq(stat_of("aio_iocbs"), want[0] + want[1] + want[2] + 2);
}

Test(aio, partial_submission_returns_the_count_and_releases_the_rest) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *b1 = misaligned(4096), *b2 = misaligned(4096);
    struct iocb c1, c2, bad;
    io_prep_pread(&c1, fd, b1, 4096, 0);
    io_prep_pread(&c2, fd, b2, 4096, 4096);
    io_prep_pread(&bad, 999, b2, 4096, 0); /* bad fd: the kernel stops here */
    struct iocb *l[3] = {&c1, &bad, &c2};
    cr_assert_eq(io_submit(ctx, 3, l), 1);
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq(ev.obj, &c1);
    cr_assert_eq((long)ev.res, 4096);
    check_pattern(b1, 0, 4096);
    /* The first one failing: its error, errno untouched. */
    struct iocb *l2[2] = {&bad, &c2};
    errno = 1234;
    cr_assert_eq(io_submit(ctx, 2, l2), -EBADF);
    cr_assert_eq(errno, 1234);
    /* Nothing left over: every bounce of the failed ones was released. */
    cr_assert_eq(stat_of("aio_iocbs"), 1);
    cr_assert_eq(stat_of("aio_bounced"), 1);
}

Test(aio, invalid_pointers_give_efault_not_a_crash) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    struct iocb **volatile bad_array = (struct iocb **)8;
    cr_assert_eq(io_submit(ctx, 1, bad_array), -EFAULT);
    struct iocb *lnull[1] = {NULL};
    cr_assert_eq(io_submit(ctx, 1, lnull), -EFAULT);
    char *buf = misaligned(4096); /* before the unmapping, which mmap would reuse */
    char *gone = plain_alloc(4096);
    munmap(gone, 4096 + 8192);
    struct iocb *lgone[1] = {(struct iocb *)gone};
    cr_assert_eq(io_submit(ctx, 1, lgone), -EFAULT);
    /* Good one then a bad pointer: the good one is submitted. */
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 4096, 0);
    struct iocb *l2[2] = {&cb, (struct iocb *)gone};
    cr_assert_eq(io_submit(ctx, 2, l2), 1);
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq((long)ev.res, 4096);
    /* A bad vectored array, and a bad buffer: as the kernel answers them. */
    io_prep_preadv(&cb, fd, (struct iovec *)gone, 2, 0);
    struct iocb *l3[1] = {&cb};
    cr_assert_eq(io_submit(ctx, 1, l3), (int)syscall(SYS_io_submit, ctx, 1, l3) < 0 ? -EFAULT : 1);
    io_prep_pread(&cb, fd, gone + 1, 4096, 0);
    long shim = run_one(ctx, &cb);
    cr_assert_eq(syscall(SYS_io_submit, ctx, 1, l3), 1);
    cr_assert_eq(syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq(shim, (long)ev.res, "shim %ld, kernel %ld", shim, (long)ev.res);
}

Test(aio, cancel_of_a_bounced_read_answers_as_the_kernel) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = misaligned(1 << 20);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 1 << 20, 0);
    cb.data = (void *)77;
    submit_one(ctx, &cb);
    struct io_event ev;
    int r = io_cancel(ctx, &cb, &ev);
    /* File reads cannot be cancelled (-EINVAL), or the request already completed. */
    cr_assert(r == -EINVAL || r == -EINPROGRESS || r == -EAGAIN || r == 0, "io_cancel: %d", r);
    if (r != 0) {
        cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
        cr_assert_eq((long)ev.res, 1 << 20);
    }
    cr_assert_eq(ev.obj, &cb);
    cr_assert_eq(ev.data, (void *)77);
    /* An iocb the context never saw: the kernel's answer. */
    struct iocb other;
    io_prep_pread(&other, fd, buf, 4096, 0);
    cr_assert_eq(io_cancel(ctx, &other, &ev), (int)-EINVAL);
}

Test(aio, old_abi_io_getevents_and_io_cancel) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    int (*ge01)(io_context_t, long, struct io_event *, struct timespec *) =
        (int (*)(io_context_t, long, struct io_event *, struct timespec *))dlvsym(
            RTLD_DEFAULT, "io_getevents", "LIBAIO_0.1");
    int (*cancel01)(io_context_t, struct iocb *) =
        (int (*)(io_context_t, struct iocb *))dlvsym(RTLD_DEFAULT, "io_cancel", "LIBAIO_0.1");
    cr_assert(ge01 && cancel01);
    char *buf = misaligned(8192);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 8192, 512);
    submit_one(ctx, &cb);
    int r = cancel01(ctx, &cb);
    cr_assert(r == -EINVAL || r == -EINPROGRESS || r == -EAGAIN, "io_cancel 0.1: %d", r);
    struct io_event ev;
    cr_assert_eq(ge01(ctx, 1, &ev, NULL), 1);
    cr_assert_eq(ev.obj, &cb);
    cr_assert_eq((long)ev.res, 8192);
    check_pattern(buf, 512, 8192);
}

static int queue_done;
static void queue_cb(io_context_t ctx, struct iocb *cb, long res, long res2) {
    (void)ctx;
    (void)res2;
    cr_assert_eq(res, 4096);
    check_pattern(cb->u.c.buf, 100, 4096);
    queue_done++;
}

Test(aio, io_queue_run_reaches_the_hooks) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = misaligned(4096);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 4096, 100);
    io_set_callback(&cb, queue_cb);
    submit_one(ctx, &cb);
    while (!queue_done) cr_assert_geq(io_queue_run(ctx), 0);
    cr_assert_eq(stat_of("aio_bounced"), 1);
}

struct req {
    struct iocb cb;
    char *buf;
    uint64_t off;
    size_t n;
    int done;
    long res;
};

struct worker {
    io_context_t ctx;
    int fd, id, own_reaping;
};

static void *submitter(void *arg) {
    struct worker *w = arg;
    struct req r = {.buf = misaligned(70000)};
    unsigned seed = (unsigned)w->id * 7919u + 1;
    for (int i = 0; i < 200; i++) {
        r.off = rand_r(&seed) % (FILE_SIZE - 70000);
        r.n = 1 + rand_r(&seed) % 69999;
        __atomic_store_n(&r.done, 0, __ATOMIC_RELAXED);
        io_prep_pread(&r.cb, w->fd, r.buf, r.n, (long long)r.off);
        r.cb.data = &r;
        struct iocb *l[1] = {&r.cb};
        int rc;
        while ((rc = io_submit(w->ctx, 1, l)) == -EAGAIN) sched_yield();
        cr_assert_eq(rc, 1);
        if (w->own_reaping) {
            struct io_event ev;
            cr_assert_eq(io_getevents(w->ctx, 1, 1, &ev, NULL), 1);
            cr_assert_eq(ev.obj, &r.cb);
            cr_assert_eq(ev.data, &r);
            r.res = (long)ev.res;
        } else {
            while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) sched_yield();
        }
        cr_assert_eq(r.res, (long)r.n);
        check_pattern(r.buf, r.off, r.n);
    }
    return NULL;
}

static io_context_t shared_ctx;
static void *reaper(void *arg) {
    (void)arg;
    for (int got = 0; got < 800;) {
        struct io_event ev[16];
        int n = io_getevents(shared_ctx, 1, 16, ev, NULL);
        cr_assert_gt(n, 0);
        for (int i = 0; i < n; i++) {
            struct req *r = ev[i].data;
            cr_assert_eq(ev[i].obj, &r->cb, "data and obj of one event disagree");
            r->res = (long)ev[i].res;
            __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
        }
        got += n;
    }
    return NULL;
}

static void run_threads(int shared) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    pthread_t t[5];
    struct worker w[4];
    if (shared) {
        shared_ctx = new_ctx(64);
        pthread_create(&t[4], NULL, reaper, NULL);
    }
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){shared ? shared_ctx : new_ctx(8), fd, i, !shared};
        pthread_create(&t[i], NULL, submitter, &w[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    if (shared) pthread_join(t[4], NULL);
    /* Counted per thread (issue 29): kept when the threads have ended. */
    cr_assert_eq(stat_of("aio_bounced"), 800);
    cr_assert_eq(stat_of("aio_iocbs"), 800);
}

/* A live thread's counts are in the totals (its own block, summed). */
static int live_fd, ready[2], go[2];
static void *submit_and_wait(void *arg) {
    (void)arg;
    io_context_t ctx = new_ctx(8);
    char *buf = pinned_alloc(4096);
    for (int i = 0; i < 10; i++) {
        struct iocb cb;
        read_checked(ctx, &cb, live_fd, buf, 4096, 4096LL * i);
    }
    char c = 1;
    cr_assert_eq(write(ready[1], &c, 1), 1);
    cr_assert_eq(read(go[0], &c, 1), 1);
    return NULL;
}

Test(aio, counts_of_a_live_thread_are_in_the_totals) {
    live_fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(go), 0);
    pthread_t t;
    pthread_create(&t, NULL, submit_and_wait, NULL);
    char c;
    cr_assert_eq(read(ready[0], &c, 1), 1);
    cr_assert_eq(stat_of("aio_iocbs"), 10);
    cr_assert_eq(stat_of("aio_direct_pinned"), 10);
    cr_assert_eq(write(go[1], &c, 1), 1);
    pthread_join(t, NULL);
    cr_assert_eq(stat_of("aio_iocbs"), 10, "a thread's counts were lost when it ended");
}

Test(aio, threads_with_a_context_each) {
    run_threads(0);
}

Test(aio, threads_sharing_one_context) {
    run_threads(1);
}

Test(aio, fork_with_bounces_in_flight) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    char *buf = misaligned(1 << 20);
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 1 << 20, 4096);
    submit_one(ctx, &cb);
    pid_t pid = fork();
    if (pid == 0) {
        /* The parent's context is not ours; our own bounces work. */
        io_context_t mine = 0;
        if (io_setup(4, &mine) != 0) _exit(2);
        char *b = misaligned(65536);
        struct iocb c;
        io_prep_pread(&c, fd, b, 65536, 777);
        struct iocb *cl[1] = {&c};
        if (io_submit(mine, 1, cl) != 1) _exit(3);
        struct io_event ev;
        if (io_getevents(mine, 1, 1, &ev, NULL) != 1 || (long)ev.res != 65536 || ev.obj != &c)
            _exit(4);
        for (int i = 0; i < 65536; i++)
            if ((unsigned char)b[i] != pattern(777 + i)) _exit(5);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq((long)ev.res, 1 << 20);
    check_pattern(buf, 4096, 1 << 20);
}

/* Review finding: vectored lengths that wrap around to a small total got a
 * small bounce buffer, then each segment was copied at its full length over
 * the neighbouring arena memory. */
Test(aio, vectored_write_with_wrapping_lengths_does_not_overrun) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDWR);
    io_context_t ctx = new_ctx(8);
    char *m = pinned_alloc(1 << 20);
    /* A bounce buffer made and pooled first, then memory right after it. */
    char *mis = plain_alloc(8192) + 1;
    struct iocb rd;
    io_prep_pread(&rd, fd, mis, 4096, 0);
    cr_assert_eq(run_one(ctx, &rd), 4096);
    char *neighbour = pinned_alloc(1 << 20);
    memset(neighbour, 0x5A, 1 << 20);
    struct iovec v[2] = {{m + 1, 0x20000}, {m, (size_t)-0x20000 + 0x1000}};
    struct iocb cb;
    io_prep_pwritev(&cb, fd, v, 2, 0);
    struct iocb *l[1] = {&cb};
    long kernel = syscall(SYS_io_submit, ctx, 1, l);
    kernel = kernel < 0 ? -errno : kernel;
    int shim = io_submit(ctx, 1, l);
    cr_assert_eq(shim, kernel, "shim %d, kernel %ld", shim, kernel);
    for (int i = 0; i < 1 << 20; i++)
        if (neighbour[i] != 0x5A) cr_assert_fail("neighbour byte %d overwritten", i);
    cr_assert_eq(stat_of("aio_bounced"), 1); /* the read before */
}

/* Review finding: a length above 2^63 made the bounce pool's size-class loop
 * spin forever. */
Test(aio, huge_length_write_does_not_hang, .timeout = 20) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDWR);
    io_context_t ctx = new_ctx(8);
    char *m = plain_alloc(8192) + 1;
    struct iocb cb;
    io_prep_pwrite(&cb, fd, m, 4096, 0);
    cb.u.c.nbytes = 0x8000000000001000ull;
    struct iocb *l[1] = {&cb};
    long kernel = syscall(SYS_io_submit, ctx, 1, l);
    kernel = kernel < 0 ? -errno : kernel;
    long shim = io_submit(ctx, 1, l);
    cr_assert_eq(shim, kernel, "shim %ld, kernel %ld", shim, kernel);
    struct io_event ev;
    if (kernel == 1) { /* accepted by both: reap both completions */
        cr_assert_eq(io_getevents(ctx, 2, 2, &ev, NULL) >= 1, 1);
    }
}

/* Review finding: with SIGSEGV blocked (worker threads often block every
 * signal) a fault cannot reach the guard and the kernel kills the process;
 * the common bad pointers are ruled out before any load. */
Test(aio, bad_pointers_with_sigsegv_blocked_give_efault) {
    int fd = open_direct(make_file(disk, FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(8);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    struct iocb **volatile small = (struct iocb **)0x10;
    cr_assert_eq(io_submit(ctx, 1, small), -EFAULT);
    struct iocb *lnull[1] = {NULL};
    cr_assert_eq(io_submit(ctx, 1, lnull), -EFAULT);
    struct iocb cb;
    io_prep_preadv(&cb, fd, (struct iovec *)0x20, 2, 0);
    struct iocb *l[1] = {&cb};
    cr_assert_eq(io_submit(ctx, 1, l), -EFAULT);
}
