/* The pool: freed blocks stay populated and locked, indexed by size, and serve
 * later allocations (split when larger than asked). Neighbouring cached spans
 * coalesce, so a freed 1 GiB block can later serve two 512 MiB ones and back. */
#include "manager.h"
#include "stats.h"

static void publish(void) {
    dsp_stat_set(DSP_ST_pool_cached_bytes, dsp_mgr.cached.bytes);
}

struct dsp_span *dsp_pool_get(size_t len) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_span *s = dsp_bins_find(&m->cached, len);
    if (!s) return NULL;
    dsp_bins_remove(&m->cached, s);
    if (s->len > len) {
        struct dsp_span *tail = dsp_span_split(s, len);
        if (!tail) { /* no metadata for the split: keep it whole in the pool */
            dsp_bins_insert(&m->cached, s);
            return NULL;
        }
        dsp_bins_insert(&m->cached, tail);
    }
    s->state = DSP_SPAN_LIVE;
    publish();
    return s;
}

static int mergeable(const struct dsp_span *a, const struct dsp_span *b) {
    return a && a->state == DSP_SPAN_CACHED && a->locked == b->locked;
}

void dsp_pool_put(struct dsp_span *s) {
    struct dsp_manager *m = &dsp_mgr;
    s->state = DSP_SPAN_CACHED;
    struct dsp_span *p = s->aprev, *n = s->anext;
    if (mergeable(p, s)) {
        dsp_bins_remove(&m->cached, p);
        p->len += s->len;
        p->huge &= s->huge;
        dsp_span_unlink(s);
        s = p;
    }
    if (mergeable(n, s)) {
        dsp_bins_remove(&m->cached, n);
        s->len += n->len;
        s->huge &= n->huge;
        dsp_span_unlink(n);
    }
    dsp_bins_insert(&m->cached, s);
    publish();
}

/* Largest first: one big release frees the most memory for one syscall and
 * keeps the many small blocks that are cheap to keep and common to reuse. */
size_t dsp_pool_release_until(size_t cached_max) {
    struct dsp_manager *m = &dsp_mgr;
    size_t released = 0;
    while (m->cached.bytes > cached_max) {
        struct dsp_span *s = dsp_bins_largest(&m->cached);
        int was_locked = s->locked;
        if (dsp_pin_drop(s) != 0) break; /* logged; it stays cached and counted */
        dsp_bins_remove(&m->cached, s);
        if (was_locked) {
            m->pinned -= s->len;
            dsp_stat_set(DSP_ST_pinned_bytes, m->pinned);
        }
        released += s->len;
        dsp_arena_vacate(s);
        dsp_stat_add(DSP_ST_pool_releases, 1);
    }
    publish();
    return released;
}
