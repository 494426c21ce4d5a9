/* Registered span kinds (span_kind.h): a layer adds its kind, and evicts its
 * pooled spans through these. Every call to the party that registered them
 * is the layer's. */
#include "span_kind.h"

#include "budget.h"
#include "manager.h"
#include "pool.h"
#include "stats.h"

#include <errno.h>

int dsp_span_kind_add(const struct dsp_span_kind *ops) {
    for (int i = 0; i < DSP_SPAN_KINDS; i++) {
        const struct dsp_span_kind *none = NULL;
        /* Slots fill in order and are never emptied: the manager reads an
         * empty first slot as "no kind" (manager.c, any_kind). */
        if (__atomic_compare_exchange_n(&dsp_mgr.kinds[i].ops, &none, ops, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE) ||
            none == ops)
            return i + 1;
    }
    return -ENOSPC;
}

static int known(int kind) {
    return kind >= 1 && kind <= DSP_SPAN_KINDS;
}

int dsp_span_kind_would_make_room(int kind, size_t len) {
    struct dsp_manager *m = &dsp_mgr;
    if (!known(kind)) return 0;
    dsp_mgr_lock();
    size_t reg = dsp_pool_kind_bytes(m, kind);
    int ok = reg > 0 && dsp_budget_fits_after_release(m, len, reg);
    dsp_mgr_unlock();
    return ok;
}

size_t dsp_span_kind_evict(int kind, int what, struct dsp_evicted *out, size_t max) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_span *s[64];
    if (!known(kind)) return 0;
    if (max > 64) max = 64;
    dsp_mgr_lock();
    size_t keep = 0;
    if (what == DSP_EVICT_OVER) {
        size_t p = dsp_pool_idle_bytes(m), limit = dsp_pool_limit(m);
        size_t over = p > limit ? p - limit : 0, reg = dsp_pool_kind_bytes(m, kind);
        keep = reg > over ? reg - over : 0;
    }
    size_t n = dsp_pool_evict_registered(m, kind, keep, s, max, what == DSP_EVICT_SYNCED);
    dsp_mgr_unlock();
    for (size_t i = 0; i < n; i++) {
        out[i].base = s[i]->base; /* s is LIVE and ours alone until evicted() */
        out[i].len = s[i]->len;
        out[i].token = s[i];
        out[i].unsynced = s[i]->unsynced;
    }
    return n;
}

void dsp_span_kind_evicted(void *token) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_span *s = token;
    dsp_mgr_lock();
    s->reg = 0;
    s->user = 0;
    dsp_span_release(m, s); /* (clears unsynced) */
    dsp_stat_add(DSP_ST_pool_releases, 1);
    dsp_mgr_unlock();
}
