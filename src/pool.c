/* The pool: freed blocks stay populated and locked, indexed by size, and serve
 * later allocations (split when larger than asked). Neighbouring cached spans
 * coalesce, so a freed 1 GiB block can later serve two 512 MiB ones and back.
 *
 * Spans a registered span kind registered (span_kind.h: the CUDA layer's,
 * with the driver) are pooled apart, by kind: a registration can only be
 * undone at its exact base, so they are never split or merged, and only
 * the kind's layer reuses or releases them (it alone may call the party
 * that registered them). Only served spans (DSP_BLK_SERVED: shared memory,
 * as the driver's) are reused, by the kind's served allocations (`reuse`);
 * the rest (a hinted or dsp_alloc block the program registered) wait in
 * `held` for eviction, since handing private memory to cudaHostAlloc would
 * make its forks copy (issue 13).
 *
 * Both are partitioned by NUMA node (issue 33): a span is pooled on the node
 * its pages are on (span->node) and reused only for a request on that node,
 * so that memory placed for one GPU's node is never handed to a loader of
 * another node's GPU. With placement off every span is node 0's. */
#include "budget.h"
#include "manager.h"
#include "pin.h"
#include "arena.h"
#include "pool.h"
#include "node.h"
#include "numa.h"
#include "stats.h"

static void publish(struct dsp_manager *m) {
    dsp_stat_set(DSP_ST_pool_cached_bytes, dsp_pooled_bytes(m));
}

/* Every span in or out of a pool's index goes through these, which keep the
 * totals a pool operation reads (manager.h: the pools', the general pool's,
 * each kind's) and, with placement on, each node's bytes (numa.h,
 * dsp_numa_pooled): a load and a store each under mu. Summing the indexes
 * of every node instead, 24 cache lines apart, cost each alloc+free cycle
 * from the pool 30 ns of its 65 (bench/pin_bench section 1). */
static void count(struct dsp_manager *m, const struct dsp_span *s, int sign) {
    size_t d = sign > 0 ? s->len : -s->len;
    m->pooled_bytes += d;
    if (s->reg)
        m->kinds[s->reg - 1].bytes += d;
    else
        m->cached_bytes += d;
    if (__atomic_load_n(&dsp_numa_active, __ATOMIC_RELAXED))
        dsp_numa_count_pooled(s->node, s->len, sign);
}
static void pool_in(struct dsp_manager *m, struct dsp_bins *b, struct dsp_span *s) {
    dsp_bins_insert(b, s);
    count(m, s, 1);
}
static void pool_out(struct dsp_manager *m, struct dsp_bins *b, struct dsp_span *s) {
    dsp_bins_remove(b, s);
    count(m, s, -1);
}

/* Of n partitions, the one holding the largest span; NULL when all are
 * empty. */
static struct dsp_bins *largest_of(struct dsp_bins *b, int n) {
    struct dsp_bins *best = NULL;
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        struct dsp_span *s = b[i].bytes ? dsp_bins_largest(&b[i]) : NULL;
        if (s && s->len > len) best = &b[i], len = s->len;
    }
    return best;
}

struct dsp_span *dsp_pool_get(struct dsp_manager *m, size_t len, int node) {
    struct dsp_bins *b = &m->cached[node];
    struct dsp_span *s = dsp_bins_find(b, len);
    if (!s) return NULL;
    pool_out(m, b, s);
    if (s->len > len) {
        struct dsp_span *tail = dsp_span_split(m, s, len);
        if (!tail) { /* no metadata for the split: keep it whole in the pool */
            pool_in(m, b, s);
            return NULL;
        }
        pool_in(m, b, tail);
    }
    s->state = DSP_SPAN_LIVE;
    publish(m);
    return s;
}

/* At most a quarter more: the rest of the span is idle while the block
 * lives. */
struct dsp_span *dsp_pool_get_registered(struct dsp_manager *m, int kind, size_t len, int node) {
    if (kind < 1 || kind > DSP_SPAN_KINDS) return NULL;
    struct dsp_bins *b = &m->kinds[kind - 1].reuse[node];
    struct dsp_span *s = dsp_bins_find(b, len);
    if (!s || s->len - len > len / 4) return NULL;
    pool_out(m, b, s);
    s->state = DSP_SPAN_LIVE;
    publish(m);
    return s;
}

struct dsp_bins *dsp_pool_bins(struct dsp_manager *m, const struct dsp_span *s) {
    if (!s->reg) return &m->cached[s->node];
    struct dsp_kind_pool *k = &m->kinds[s->reg - 1];
    return s->served == s->reg ? &k->reuse[s->node] : &k->held;
}

size_t dsp_pool_kind_bytes(struct dsp_manager *m, int kind) {
    return m->kinds[kind - 1].bytes;
}

size_t dsp_pool_registered_bytes(struct dsp_manager *m) {
    return m->pooled_bytes - m->cached_bytes;
}

static int mergeable(const struct dsp_span *a, const struct dsp_span *b) {
    return a && a->state == DSP_SPAN_CACHED && !a->reg && a->locked == b->locked &&
           a->counted == b->counted && a->shared == b->shared && a->node == b->node;
}

void dsp_pool_put(struct dsp_manager *m, struct dsp_span *s) {
    s->state = DSP_SPAN_CACHED;
    if (s->reg) {
        pool_in(m, dsp_pool_bins(m, s), s);
        publish(m);
        return;
    }
    struct dsp_span *p = s->aprev, *n = s->anext;
    if (mergeable(p, s)) {
        pool_out(m, &m->cached[p->node], p);
        p->len += s->len;
        p->huge &= s->huge;
        dsp_span_unlink(m, s);
        s = p;
    }
    if (mergeable(n, s)) {
        pool_out(m, &m->cached[n->node], n);
        s->len += n->len;
        s->huge &= n->huge;
        dsp_span_unlink(m, n);
    }
    pool_in(m, &m->cached[s->node], s);
    publish(m);
}

size_t dsp_pooled_bytes(struct dsp_manager *m) {
    return m->pooled_bytes;
}

/* The one limit of both pools together, which every check of what may stay
 * pooled asks: DSP_POOL_MAX, or this process's share of the node cap when
 * that is smaller (node.c). The registered pool was held to DSP_POOL_MAX
 * alone, and kept 768 MiB idle under a 1 GiB node cap (issue 30). */
size_t dsp_pool_limit(struct dsp_manager *m) {
    return dsp_node_pool_max(m->pool_max);
}

size_t dsp_pool_idle_bytes(struct dsp_manager *m) {
    return dsp_pooled_bytes(m) + m->kept;
}

/* A layer's cache (the libaio bounce pool) keeps a block only within the same
 * limit; refused, the layer frees it into the general pool, where the pool's
 * rule (largest first) decides what goes. */
int dsp_pool_may_keep(struct dsp_manager *m, size_t len) {
    size_t idle = dsp_pool_idle_bytes(m), limit = dsp_pool_limit(m);
    if (idle > limit || len > limit - idle) return 0;
    m->kept += len;
    return 1;
}

void dsp_span_release(struct dsp_manager *m, struct dsp_span *s) {
    int was_locked = s->locked;
    if (dsp_pin_drop(m, s) != 0) { /* still locked (logged): keep it pooled and counted */
        s->reg = 0;
        if (s->served) { /* only served allocations may have it: none will, unregistered */
            s->state = DSP_SPAN_LIVE; /* in no index: out of use for good, as a stuck pin */
            dsp_stat_add(DSP_ST_pin_stuck_bytes, s->len);
            return;
        }
        dsp_pool_put(m, s);
        return;
    }
    if (s->counted) {
        dsp_budget_release(m, s->len, was_locked);
        dsp_numa_count_pinned(s->node, s->len, -1);
    }
    s->counted = 0;
    s->reg = 0;
    s->user = 0;
    s->unsynced = 0;
    s->served = 0;
    s->shared = 0;
    dsp_arena_vacate(m, s);
}

/* Spans taken out of an index and kept aside while a release looks further:
 * linked through bnext (out of the index, its links are free), and put back
 * in their own index at the end, still cached and counted. */
static void set_aside(struct dsp_span **kept, struct dsp_span *s) {
    s->bnext = *kept;
    *kept = s;
}
static void put_back(struct dsp_manager *m, struct dsp_span *kept) {
    while (kept) {
        struct dsp_span *s = kept;
        kept = s->bnext;
        pool_in(m, dsp_pool_bins(m, s), s);
    }
}

/* A release gives up after this many spans that could not go: near the map
 * reserve almost every drop splits a mapping, and looking through a pool of
 * tens of thousands of blocks at every free would cost O(n log n) under the
 * mutex; the pool then stays over its limit a little longer. */
#define SET_ASIDE_MAX 32

/* Largest first: one big release frees the most memory for one syscall and
 * keeps the many small blocks that are cheap to keep and common to reuse.
 * A span that cannot go (its drop would split a mapping into the maps left
 * to the program, or the kernel refused) is set aside and the next tried: one
 * between vacant neighbours splits nothing. */
size_t dsp_pool_release_until(struct dsp_manager *m, size_t cached_max) {
    size_t released = 0;
    struct dsp_span *kept = NULL;
    int aside = 0;
    struct dsp_bins *b;
    while (dsp_cached_bytes(m) > cached_max && aside < SET_ASIDE_MAX &&
           (b = largest_of(m->cached, DSP_NUMA_NODES))) {
        struct dsp_span *s = dsp_bins_largest(b);
        int was_locked = s->locked;
        pool_out(m, b, s);
        if (dsp_pin_drop(m, s) != 0) { /* logged; it stays cached and counted */
            set_aside(&kept, s);
            aside++;
            continue;
        }
        if (s->counted) {
            dsp_budget_release(m, s->len, was_locked);
            dsp_numa_count_pinned(s->node, s->len, -1);
        }
        s->counted = 0;
        released += s->len;
        dsp_arena_vacate(m, s);
        dsp_stat_add(DSP_ST_pool_releases, 1);
    }
    put_back(m, kept);
    publish(m);
    return released;
}

void dsp_pool_make_room(struct dsp_manager *m, size_t len, int lock) {
    size_t excess = dsp_budget_excess(m, len, lock);
    if (excess) dsp_pool_release_until(m, dsp_cached_bytes(m) - excess);
}

/* Takes up to max of kind's pooled spans, those no allocation reuses first,
 * then the largest, while kind's pool holds more than keep bytes: the caller undoes each
 * registration (outside the lock) and then hands it to dsp_span_release. They are LIVE meanwhile,
 * in no index and not in the registry, so nothing else touches them. synced_only: only spans that
 * need no wait (freed by a call that waited, as cudaFreeHost); the others are set aside and stay
 * pooled. */
size_t dsp_pool_evict_registered(struct dsp_manager *m, int kind, size_t keep,
                                 struct dsp_span **out, size_t max, int synced_only) {
    size_t n = 0;
    struct dsp_span *kept = NULL;
    struct dsp_kind_pool *k = &m->kinds[kind - 1];
    while (n < max && dsp_pool_kind_bytes(m, kind) > keep) {
        struct dsp_bins *b = k->held.bytes ? &k->held : largest_of(k->reuse, DSP_NUMA_NODES);
        struct dsp_span *s = dsp_bins_largest(b);
        pool_out(m, b, s);
        if (synced_only && s->unsynced) {
            set_aside(&kept, s);
            continue;
        }
        s->state = DSP_SPAN_LIVE;
        out[n++] = s;
    }
    put_back(m, kept);
    publish(m);
    return n;
}
