/* The arena: one reservation of address space (PROT_NONE, no memory) that every
 * manager block is cut from. Vacant pieces are indexed by size for reuse and
 * coalesce with their neighbours. */
#include "config.h"
#include "fmt.h"
#include "log.h"
#include "manager.h"
#include "sys.h"

#include <errno.h>
#include <sys/mman.h>

#define ARENA_ALIGN DSP_GiB

int dsp_arena_reserve(void) {
    struct dsp_manager *m = &dsp_mgr;
    size_t want = m->arena_size;
    for (; want >= ARENA_ALIGN; want /= 2) {
        void *p = mmap(NULL, want + ARENA_ALIGN, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) continue;
        uintptr_t raw = (uintptr_t)p, lo = dsp_align_up_ptr(raw, ARENA_ALIGN);
        if (lo > raw) munmap(p, lo - raw);
        munmap((void *)(lo + want), raw + want + ARENA_ALIGN - (lo + want));
        m->bump = lo;
        atomic_store_explicit(&m->hi, lo + want, memory_order_relaxed);
        atomic_store_explicit(&m->lo, lo, memory_order_release);
        if (want < m->arena_size) {
            char a[32], b[32];
            dsp_info("reserved %s of address space for pinned blocks (%s refused)",
                     dsp_fmt_bytes(a, sizeof a, want), dsp_fmt_bytes(b, sizeof b, m->arena_size));
        }
        m->arena_size = want;
        return 0;
    }
    return -ENOMEM;
}

static struct dsp_span *new_span(uintptr_t base, size_t len, int state) {
    struct dsp_span *s = dsp_slab_alloc(&dsp_mgr.spans);
    if (!s) return NULL;
    s->base = base;
    s->len = len;
    s->state = (uint8_t)state;
    return s;
}

static void link_after(struct dsp_span *prev, struct dsp_span *s) {
    struct dsp_manager *m = &dsp_mgr;
    s->aprev = prev;
    s->anext = prev ? prev->anext : m->first;
    if (s->anext)
        s->anext->aprev = s;
    else
        m->last = s;
    if (prev)
        prev->anext = s;
    else
        m->first = s;
}

void dsp_span_unlink(struct dsp_span *s) {
    struct dsp_manager *m = &dsp_mgr;
    if (s->aprev)
        s->aprev->anext = s->anext;
    else
        m->first = s->anext;
    if (s->anext)
        s->anext->aprev = s->aprev;
    else
        m->last = s->aprev;
    dsp_slab_free(&m->spans, s);
}

struct dsp_span *dsp_span_split(struct dsp_span *s, size_t len) {
    struct dsp_span *t = new_span(s->base + len, s->len - len, s->state);
    if (!t) return NULL;
    t->locked = s->locked;
    t->huge = s->huge;
    t->counted = s->counted; /* registered spans are never split */
    s->len = len;
    link_after(s, t);
    return t;
}

/* Returns a vacant span of exactly len bytes starting on an `align` boundary,
 * taken out of the index, or NULL. */
static struct dsp_span *take_vacant(size_t len, size_t align) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_span *s = dsp_bins_find(&m->vacant, len + align - DSP_PAGE);
    if (!s) return NULL;
    dsp_bins_remove(&m->vacant, s);
    uintptr_t start = dsp_align_up_ptr(s->base, align);
    if (start > s->base) {
        struct dsp_span *body = dsp_span_split(s, start - s->base);
        if (!body) return dsp_bins_insert(&m->vacant, s), NULL;
        dsp_bins_insert(&m->vacant, s);
        s = body;
    }
    if (s->len > len) {
        struct dsp_span *tail = dsp_span_split(s, len);
        if (!tail) return (void)dsp_arena_vacate(s), NULL;
        dsp_bins_insert(&m->vacant, tail);
    }
    return s;
}

struct dsp_span *dsp_arena_take(size_t len, size_t align) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_span *s = take_vacant(len, align);
    if (!s) {
        uintptr_t hi = atomic_load_explicit(&m->hi, memory_order_relaxed);
        uintptr_t start = dsp_align_up_ptr(m->bump, align);
        if (start > hi || hi - start < len) return NULL;
        /* Both spans exist before either is linked: a gap linked with the bump
         * left behind it would be linked again by the next call, and the two
         * copies would merge into a vacant span overlapping the next block
         * (regression: arena.failed_span_allocation_leaves_no_overlap). */
        struct dsp_span *gap = NULL;
        if (start > m->bump && !(gap = new_span(m->bump, start - m->bump, DSP_SPAN_VACANT)))
            return NULL;
        s = new_span(start, len, DSP_SPAN_LIVE);
        if (!s) {
            if (gap) dsp_slab_free(&m->spans, gap);
            return NULL;
        }
        if (gap) {
            link_after(m->last, gap);
            dsp_arena_vacate(gap); /* indexes it, merging with a vacant predecessor */
        }
        link_after(m->last, s);
        m->bump = start + len;
    }
    s->state = DSP_SPAN_LIVE;
    s->locked = 0;
    s->huge = 0;
    s->taint = 0;
    return s;
}

struct dsp_span *dsp_arena_vacate(struct dsp_span *s) {
    struct dsp_manager *m = &dsp_mgr;
    s->state = DSP_SPAN_VACANT;
    s->locked = s->huge = s->taint = 0;
    struct dsp_span *p = s->aprev, *n = s->anext;
    if (p && p->state == DSP_SPAN_VACANT) {
        dsp_bins_remove(&m->vacant, p);
        p->len += s->len;
        dsp_span_unlink(s);
        s = p;
    }
    if (n && n->state == DSP_SPAN_VACANT) {
        dsp_bins_remove(&m->vacant, n);
        s->len += n->len;
        dsp_span_unlink(n);
    }
    dsp_bins_insert(&m->vacant, s);
    return s;
}
