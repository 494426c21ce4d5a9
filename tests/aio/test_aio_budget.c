/* The libaio layer when the manager refuses every bounce buffer:
 * DSP_MAX_PINNED=32K in this program's environment (tests/aio/meson.build). */
#include "aio_test.h"

/* Review finding: a refused bounce buffer left errno at ENOMEM; libaio never
 * touches errno, so io_submit must not either. */
Test(aio_budget, errno_is_untouched_when_a_bounce_buffer_is_refused) {
    int fd = open_direct(make_file("/tmp", FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(4);
    char *buf = plain_alloc(8192) + 1;
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, 4096, 0);
    errno = 4242;
    struct iocb *l[1] = {&cb};
    cr_assert_eq(io_submit(ctx, 1, l), 1);
    cr_assert_eq(errno, 4242);
    struct io_event ev;
    cr_assert_eq(io_getevents(ctx, 1, 1, &ev, NULL), 1);
    cr_assert_eq(errno, 4242);
    cr_assert_eq((long)ev.res, -EINVAL, "passed through: the kernel's answer");
    cr_assert_eq(ev.obj, &cb);
    cr_assert_eq(stat_of("aio_bounced"), 0);
    cr_assert_eq(stat_of("fallbacks"), 1);
}
