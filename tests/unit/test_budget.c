#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void budget_4m(void) {
    setenv("DSP_MAX_PINNED", "4M", 1);
}

Test(budget, refuses_past_max_pinned_then_recovers, .init = budget_4m) {
    log_capture_start();
    cr_assert_eq(stat_of("budget_bytes"), 4 << 20);
    char *a = dsp_alloc(3 << 20);
    cr_assert_not_null(a);
    for (int i = 0; i < 5; i++) {
        errno = 0;
        cr_assert_null(dsp_alloc(2 << 20));
        cr_assert_eq(errno, ENOMEM);
    }
    cr_assert_eq(stat_of("budget_refusals"), 5);
    const char *log = log_capture_collect();
    cr_assert_eq(count(log, "DSP_MAX_PINNED=4 MiB reached"), 1, "one line, not one per failure: %s",
                 log);
    cr_assert(strstr(log, "raise DSP_MAX_PINNED"));
    cr_assert_eq(dsp_free(a), 0);
    char *b = dsp_alloc(2 << 20);
    cr_assert_eq(b, a, "served from the pool within budget");
    cr_assert_eq(dsp_free(b), 0);
    /* 3 MiB cached; 4 MiB fits only once the pool gives its blocks back. */
    char *c = dsp_alloc(4 << 20);
    cr_assert_not_null(c);
    cr_assert_geq(stat_of("pool_releases"), 1);
    cr_assert_eq(stat_of("pinned_bytes"), 4 << 20);
}

static void refuse_mlock(void) {
    setenv("DSP_MAX_PINNED", "1G", 1);
    cr_assert_eq(drop_ipc_lock(256 << 10), 0, "cannot drop CAP_IPC_LOCK");
}

Test(budget, refused_mlock_fails_cleanly_and_says_how_to_fix, .init = refuse_mlock) {
    log_capture_start();
    errno = 0;
    cr_assert_null(dsp_alloc(1 << 20));
    cr_assert_eq(errno, ENOMEM);
    cr_assert_eq(stat_of("pin_failures"), 1);
    cr_assert_eq(stat_of("pinned_bytes"), 0, "the failed block is not accounted");
    const char *log = log_capture_collect();
    cr_assert(strstr(log, "mlock of 1 MiB refused"), "%s", log);
    cr_assert(strstr(log, "RLIMIT_MEMLOCK is 256 KiB and CAP_IPC_LOCK is missing"), "%s", log);
    cr_assert(strstr(log, "ulimit -l unlimited"), "%s", log);
    cr_assert(strstr(log, "--ulimit memlock=-1"), "%s", log);
    char *small = dsp_alloc(64 << 10);
    cr_assert_not_null(small, "what fits the limit still works");
    cr_assert(dsp_is_pinned(small, 64 << 10));
}

static void low_memlock(void) {
    unsetenv("DSP_MAX_PINNED");
    cr_assert_eq(drop_ipc_lock(1 << 20), 0, "cannot drop CAP_IPC_LOCK");
}

Test(budget, default_respects_memlock_without_cap_ipc_lock, .init = low_memlock) {
    cr_assert_eq(stat_of("budget_bytes"), 1 << 20);
    cr_assert_null(dsp_alloc(2 << 20));
    cr_assert_eq(stat_of("budget_refusals"), 1);
    cr_assert_eq(stat_of("pin_failures"), 0, "refused by the budget before mlock is tried");
    cr_assert_not_null(dsp_alloc(512 << 10));
}

static void pool_larger_than_budget(void) {
    setenv("DSP_MAX_PINNED", "2M", 1);
    setenv("DSP_POOL_MAX", "1G", 1);
}

Test(budget, pool_max_never_exceeds_budget, .init = pool_larger_than_budget) {
    cr_assert_eq(stat_of("pool_max_bytes"), 2 << 20);
}

static void budget_6m(void) {
    setenv("DSP_MAX_PINNED", "6M", 1);
}

/* Regression: a request that could not fit even with the pool empty used to
 * empty the pool anyway before being refused. */
Test(budget, hopeless_request_keeps_the_pool, .init = budget_6m) {
    char *a = dsp_alloc(4 << 20), *live = dsp_alloc(1 << 20);
    cr_assert_not_null(live);
    cr_assert_eq(dsp_free(a), 0);
    cr_assert_null(dsp_alloc(7 << 20), "larger than the budget");
    cr_assert_null(dsp_alloc(6 << 20), "does not fit beside the live block");
    cr_assert_eq(stat_of("pool_cached_bytes"), 4 << 20, "the pool was kept");
    cr_assert_eq(stat_of("pool_releases"), 0);
    cr_assert_not_null(dsp_alloc(5 << 20), "this one fits once the pool gives way");
    cr_assert_eq(stat_of("pool_releases"), 1);
}
