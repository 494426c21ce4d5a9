/* The same three reads under each DSP_AIO_BOUNCE policy (tests/aio/meson.build
 * runs this program once per policy): an aligned pinned buffer, an aligned
 * unpinned one, and a misaligned one, on an O_DIRECT file on ext4. */
#include "aio_test.h"

static const char *policy(void) {
    const char *p = getenv("DSP_AIO_BOUNCE");
    return p ? p : "misaligned";
}

static long read_into(char *buf, size_t n) {
    static int fd = -1;
    static io_context_t ctx;
    if (fd < 0) {
        fd = open_direct(make_file("/tmp", FILE_SIZE), O_RDONLY);
        ctx = new_ctx(4);
    }
    struct iocb cb;
    io_prep_pread(&cb, fd, buf, n, 65536);
    long r = run_one(ctx, &cb);
    if (r == (long)n) check_pattern(buf, 65536, n);
    return r;
}

Test(aio_policy, aligned_pinned) {
    cr_assert_eq(read_into(pinned_alloc(65536), 65536), 65536);
    int bounce = !strcmp(policy(), "all");
    cr_assert_eq(stat_of("aio_bounced"), bounce, "policy %s", policy());
    cr_assert_eq(stat_of("aio_direct_pinned"), !bounce);
}

Test(aio_policy, aligned_unpinned) {
    cr_assert_eq(read_into(plain_alloc(65536), 65536), 65536);
    int bounce = !strcmp(policy(), "all") || !strcmp(policy(), "unpinned");
    cr_assert_eq(stat_of("aio_bounced"), bounce, "policy %s", policy());
    cr_assert_eq(stat_of("aio_direct_unpinned"), !bounce);
}

Test(aio_policy, misaligned) {
    int never = !strcmp(policy(), "never");
    /* never: only counted, so the kernel's own answer. */
    cr_assert_eq(read_into(plain_alloc(65537) + 1, 65536), never ? -EINVAL : 65536);
    cr_assert_eq(stat_of("aio_bounced"), !never, "policy %s", policy());
    cr_assert_eq(stat_of("aio_direct_unpinned"), never);
}
