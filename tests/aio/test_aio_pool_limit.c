/* The libaio bounce pool under the manager's pool limit: DSP_POOL_MAX=1M in
 * this program's environment (tests/aio/meson.build). */
#include "aio_test.h"

/* Regression (issue 30, "one eviction policy"): the bounce pool kept its idle
 * buffers up to DSP_BOUNCE_POOL (256 MiB) whatever DSP_POOL_MAX or the node
 * share allowed: a 4 MiB read into a misaligned buffer left 4 MiB pinned and
 * idle under a 1 MiB pool limit. Idle buffers now count against that limit
 * with the pools: past it a buffer goes to the pool, which gives it back. */
Test(aio_pool_limit, bounce_pool_held_to_the_pool_limit) {
    int fd = open_direct(make_file("/tmp", FILE_SIZE), O_RDONLY);
    io_context_t ctx = new_ctx(4);
    char *buf = misaligned(4 << 20);
    struct iocb cb;
    read_checked(ctx, &cb, fd, buf, 4 << 20, 8192);
    cr_assert_eq(stat_of("aio_bounced"), 1);
    cr_assert_leq(stat_of("pinned_bytes"), 1 << 20, "%lld bytes stay pinned, idle",
                  stat_of("pinned_bytes"));
    /* Under the limit a buffer is still kept and reused. */
    read_checked(ctx, &cb, fd, buf, 100000, 8192);
    long long pinned = stat_of("pinned_bytes");
    cr_assert_gt(pinned, 0, "a small bounce buffer is kept for reuse");
    read_checked(ctx, &cb, fd, buf, 100000, 8192);
    cr_assert_eq(stat_of("pinned_bytes"), pinned, "reused, not pinned again");
    cr_assert_eq(stat_of("aio_bounced"), 3);
}
