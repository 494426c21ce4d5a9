/* The manager's side of the CUDA pool: registered spans pooled apart and their
 * eviction. Every driver call is the CUDA layer's. */
#include "block.h"
#include "manager.h"
#include "budget.h"
#include "pool.h"
#include "stats.h"

int dsp_cuda_pool_would_make_room(size_t len) {
    struct dsp_manager *m = &dsp_mgr;
    dsp_mgr_lock();
    size_t reg = dsp_pool_registered_bytes(m);
    int ok = reg > 0 && dsp_budget_fits_after_release(m, len, reg);
    dsp_mgr_unlock();
    return ok;
}

size_t dsp_cuda_evict(int what, struct dsp_evicted *out, size_t max) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_span *s[64];
    if (max > 64) max = 64;
    dsp_mgr_lock();
    size_t keep = 0;
    if (what == DSP_EVICT_OVER) {
        size_t p = dsp_pool_idle_bytes(m), limit = dsp_pool_limit(m);
        size_t over = p > limit ? p - limit : 0, reg = dsp_pool_registered_bytes(m);
        keep = reg > over ? reg - over : 0;
    }
    size_t n = dsp_pool_evict_registered(m, keep, s, max, what == DSP_EVICT_SYNCED);
    dsp_mgr_unlock();
    for (size_t i = 0; i < n; i++) {
        out[i].base = s[i]->base; /* s is LIVE and ours alone until evicted() */
        out[i].len = s[i]->len;
        out[i].token = s[i];
        out[i].unsynced = s[i]->unsynced;
    }
    return n;
}

void dsp_cuda_evicted(void *token) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_span *s = token;
    dsp_mgr_lock();
    s->reg = 0;
    s->user = 0;
    dsp_span_release(m, s); /* (clears unsynced) */
    dsp_stat_add(DSP_ST_pool_releases, 1);
    dsp_mgr_unlock();
}

void dsp_set_layer(const struct dsp_layer_ops *ops) {
    __atomic_store_n(&dsp_mgr.layer, ops, __ATOMIC_RELEASE);
}
