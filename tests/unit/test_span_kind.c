/* Registered span kinds (src/span_kind.h): the core keeps each kind's pooled
 * spans apart, hands them back to that kind only, and calls only the hooks
 * of the kind that registered a block. */
#include "block.h"
#include "helpers.h"
#include "span_kind.h"

#include "harness.h"
#include <errno.h>

static int freed_a, freed_b;
static void freed_by_a(uintptr_t base, size_t len) {
    (void)base, (void)len;
    freed_a++;
}
static void freed_by_b(uintptr_t base, size_t len) {
    (void)base, (void)len;
    freed_b++;
}
static const struct dsp_span_kind a = {freed_by_a, kind_no_room, kind_nothing,
                                       kind_none,  NULL,         NULL};
static const struct dsp_span_kind b = {freed_by_b, kind_no_room, kind_nothing,
                                       kind_none,  NULL,         NULL};
static const struct dsp_span_kind c = {freed_by_b, kind_no_room, kind_nothing,
                                       kind_none,  NULL,         NULL};

#define LEN (1 << 20) /* above the chunked sizes: one span a block */

/* A block of len, registered by kind (its whole span, as a layer does). */
static uintptr_t registered(int kind, unsigned how) {
    struct dsp_block blk;
    void *p = dsp_block_alloc(LEN, how, &blk);
    cr_assert_not_null(p);
    cr_assert_eq(dsp_block_set_registered((uintptr_t)p, kind, 0), 0);
    return (uintptr_t)p;
}

Test(span_kind, the_same_hooks_keep_their_number_and_a_third_kind_finds_no_room) {
    cr_assert_eq(dsp_span_kind_add(&a), 1);
    cr_assert_eq(dsp_span_kind_add(&b), 2);
    cr_assert_eq(dsp_span_kind_add(&a), 1);
    cr_assert_eq(dsp_span_kind_add(&c), -ENOSPC);
    cr_assert_eq(dsp_block_set_registered(0, 3, 0), -EINVAL, "no such kind");
}

Test(span_kind, a_served_span_is_reused_by_its_own_kind_only) {
    int ka = dsp_span_kind_add(&a), kb = dsp_span_kind_add(&b);
    uintptr_t p = registered(ka, DSP_BLK_SERVED(ka));
    cr_assert_eq(dsp_block_free(p), 0);
    cr_assert_eq(freed_a, 1, "the registering kind is told");
    cr_assert_eq(freed_b, 0);
    cr_assert_eq(stat_of("pool_cached_bytes"), LEN);
    struct dsp_block blk;
    void *q = dsp_block_alloc(LEN, DSP_BLK_SERVED(kb), &blk);
    cr_assert_not_null(q);
    cr_assert_neq((uintptr_t)q, p, "another kind's span is not handed out");
    cr_assert_not(blk.flags & DSP_BLOCKF_REG);
    void *r = dsp_block_alloc(LEN, DSP_BLK_SERVED(ka), &blk);
    cr_assert_eq((uintptr_t)r, p, "its own kind's served allocation takes it");
    cr_assert(blk.flags & DSP_BLOCKF_REG, "still registered");
}

Test(span_kind, eviction_takes_only_the_kinds_own_spans) {
    int ka = dsp_span_kind_add(&a), kb = dsp_span_kind_add(&b);
    uintptr_t pa = registered(ka, DSP_BLK_SERVED(ka)), pb = registered(kb, 0);
    cr_assert_eq(dsp_block_free(pa), 0);
    cr_assert_eq(dsp_block_free(pb), 0);
    cr_assert_eq(freed_a, 1);
    cr_assert_eq(freed_b, 1);
    struct dsp_evicted e[4];
    cr_assert_eq(dsp_span_kind_evict(kb, DSP_EVICT_ALL, e, 4), 1);
    cr_assert_eq(e[0].base, pb);
    cr_assert_eq(e[0].unsynced, 1, "freed with no wait");
    dsp_span_kind_evicted(e[0].token);
    cr_assert_eq(dsp_span_kind_evict(kb, DSP_EVICT_ALL, e, 4), 0);
    cr_assert_eq(stat_of("pool_cached_bytes"), LEN, "the other kind's span stays pooled");
    cr_assert_eq(dsp_span_kind_evict(ka, DSP_EVICT_ALL, e, 4), 1);
    cr_assert_eq(e[0].base, pa);
    dsp_span_kind_evicted(e[0].token);
    cr_assert_eq(stat_of("pool_cached_bytes"), 0);
    cr_assert_eq(dsp_span_kind_evict(3, DSP_EVICT_ALL, e, 4), 0, "no such kind");
}
