/* Arena bookkeeping under failure. This test binary wraps dsp_slab_alloc
 * (-Wl,--wrap) so that a chosen metadata allocation fails. */
#include "manager.h"
#include "harness.h"
#include "helpers.h"

#include <dspreload.h>
#include <stdatomic.h>
#include <string.h>

void *__real_dsp_slab_alloc(struct dsp_slab *s);
static atomic_int fail_in = -1; /* fail the Nth span allocation from now */

void *__wrap_dsp_slab_alloc(struct dsp_slab *s) {
    if (s == &dsp_mgr.spans && atomic_load(&fail_in) >= 0 && atomic_fetch_sub(&fail_in, 1) == 0)
        return NULL;
    return __real_dsp_slab_alloc(s);
}

/* Regression: with a 2 MiB-aligned block to carve past a small one, the gap
 * span was linked and the bump left behind; when the block's own span could
 * not be allocated, the next call linked the gap again, and the doubled gap
 * overlapped the next block, which a later allocation then mapped over. */
/* Huge pages whatever the machine: a 2 MiB block is then 2 MiB-aligned (on
 * a VM whose host takes free pages back, auto gives it small pages). */
static void huge_always(void) {
    setenv("DSP_HUGEPAGES", "always", 1);
}
Test(arena, failed_span_allocation_leaves_no_overlap, .init = huge_always) {
    char *small = dsp_alloc(300 << 10); /* above 256 KiB: no chunk */
    cr_assert_not_null(small);
    atomic_store(&fail_in, 1); /* the gap span succeeds, the block span fails */
    cr_assert_null(dsp_alloc(2 << 20));
    atomic_store(&fail_in, -1);
    char *c = dsp_alloc(2 << 20);
    cr_assert_not_null(c);
    memset(c, 0x5a, 2 << 20);
    void *more[4];
    for (int i = 0; i < 4; i++) more[i] = dsp_alloc((2 << 20) - 8192);
    for (int i = 0; i < 4; i++) cr_assert_not_null(more[i]);
    for (size_t off = 0; off < (2u << 20); off += 4096)
        cr_assert_eq((unsigned char)c[off], 0x5a, "block overwritten");
    cr_assert(dsp_is_pinned(c, 2 << 20));
    /* Spans tile the arena: each starts where the previous ends. */
    pthread_mutex_lock(DSP_MGR_MU);
    for (struct dsp_span *s = dsp_mgr.first; s && s->anext; s = s->anext)
        cr_assert_eq(s->base + s->len, s->anext->base, "spans overlap or leave a hole");
    cr_assert_eq(dsp_mgr.last->base + dsp_mgr.last->len, dsp_mgr.bump);
    pthread_mutex_unlock(DSP_MGR_MU);
}

Test(arena, failed_split_keeps_the_pool_consistent) {
    char *a = dsp_alloc(1 << 20);
    cr_assert_eq(dsp_free(a), 0);
    atomic_store(&fail_in, 0);      /* the split of the cached span fails */
    char *b = dsp_alloc(300 << 10); /* above 256 KiB: no chunk */
    atomic_store(&fail_in, -1);
    cr_assert_not_null(b, "a failed split falls through to new memory");
    cr_assert_neq(b, a);
    cr_assert_eq(stat_of("pool_cached_bytes"), 1 << 20, "the cached span is kept whole");
    cr_assert_eq(dsp_alloc(1 << 20), a);
}
