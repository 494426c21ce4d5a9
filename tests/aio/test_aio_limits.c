/* The libaio layer at its limits: DSP_BOUNCE_POOL=512K in this program's
 * environment (tests/aio/meson.build), eight 64 KiB bounce buffers. */
#include "aio_test.h"

/* n reads of 8 KiB at 8 KiB steps, each into a misaligned buffer of its own
 * (so each takes a bounce buffer): cb[i], listed in l[i], submitted together
 * and all taken. */
static void misaligned_reads(io_context_t ctx, int fd, struct iocb *cb, struct iocb **l, int n) {
    for (int i = 0; i < n; i++) {
        io_prep_pread(&cb[i], fd, misaligned(8192), 8192, 8192 * i);
        l[i] = &cb[i];
    }
    cr_assert_eq(io_submit(ctx, n, l), n);
}

Test(aio_limits, destroy_with_io_in_flight_releases_its_bounces) {
    /* Leaked bounces would leave the second round none. */
    int fd = open_direct(make_file("/tmp", FILE_SIZE), O_RDONLY);
    struct iocb cb[8], *l[8];
    for (int round = 0; round < 3; round++) {
        io_context_t ctx = new_ctx(16);
        misaligned_reads(ctx, fd, cb, l, 8);
        cr_assert_eq(io_destroy(ctx), 0);
    }
    cr_assert_eq(stat_of("aio_bounced"), 24);
    cr_assert_eq(stat_of("fallbacks"), 0);
}

Test(aio_limits, a_full_pool_passes_io_through_unchanged) {
    int fd = open_direct(make_file("/tmp", FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(16);
    struct iocb cb[9], *l[9];
    misaligned_reads(ctx, fd, cb, l, 9);
    int ok = 0, einval = 0;
    for (int got = 0; got < 9;) {
        struct io_event ev[9];
        int n = io_getevents(ctx, 1, 9, ev, NULL);
        cr_assert_gt(n, 0);
        for (int i = 0; i < n; i++) {
            ok += (long)ev[i].res == 8192;
            einval += (long)ev[i].res == -EINVAL; /* as without the shim */
        }
        got += n;
    }
    cr_assert_eq(ok, 8);
    cr_assert_eq(einval, 1);
    cr_assert_eq(stat_of("aio_bounced"), 8);
    cr_assert_eq(stat_of("aio_passthrough"), 1);
    cr_assert_eq(stat_of("fallbacks"), 1);
    /* Released on completion: the next nine find eight buffers again. */
    cr_assert_eq(io_submit(ctx, 8, l), 8);
    struct io_event ev[8];
    for (int got = 0; got < 8;) got += io_getevents(ctx, 1, 8, ev, NULL);
    cr_assert_eq(stat_of("aio_bounced"), 16);
}

Test(aio_limits, dsp_trim_gives_back_the_bounce_buffers) {
    int fd = open_direct(make_file("/tmp", FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(16);
    struct iocb cb[4], *l[4];
    misaligned_reads(ctx, fd, cb, l, 4);
    struct io_event ev[4];
    for (int got = 0; got < 4;) got += io_getevents(ctx, 1, 4, ev, NULL);
    /* Four 64 KiB buffers kept for reuse: live blocks of the bounce pool. */
    cr_assert_eq(stat_of("live_bytes"), 4 * 65536);
    size_t (*trim)(void) = (size_t(*)(void))dlsym(RTLD_DEFAULT, "dsp_trim");
    cr_assert_geq(trim(), 4 * 65536);
    cr_assert_eq(stat_of("live_bytes"), 0);
    cr_assert_eq(stat_of("pinned_bytes"), 0);
    /* And bouncing still works after. */
    cr_assert_eq(io_submit(ctx, 1, l), 1);
    cr_assert_eq(io_getevents(ctx, 1, 1, ev, NULL), 1);
    cr_assert_eq((long)ev[0].res, 8192);
}
