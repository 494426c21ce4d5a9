/* The pools of cached spans. */
#ifndef DSP_POOL_H
#define DSP_POOL_H

#include <stddef.h>
#include <stdint.h>

struct dsp_manager;
struct dsp_span;
struct dsp_bins;

/* A span of the general pool's partition of node (numa.h) of len bytes,
 * split off a larger one, made LIVE, or NULL. */
struct dsp_span *dsp_pool_get(struct dsp_manager *m, size_t len, int node);
/* A served span of kind's pool (span_kind.h) on node of at least len bytes
 * and at most a quarter more, made LIVE, or NULL. */
struct dsp_span *dsp_pool_get_registered(struct dsp_manager *m, int kind, size_t len, int node);
struct dsp_bins *dsp_pool_bins(struct dsp_manager *m,
                               const struct dsp_span *s);    /* the index a cached span is in */
size_t dsp_pool_registered_bytes(struct dsp_manager *m);     /* every kind's pool */
size_t dsp_pool_kind_bytes(struct dsp_manager *m, int kind); /* kind's pool (both indexes) */
void dsp_pool_put(struct dsp_manager *m,
                  struct dsp_span *s); /* registered spans to their own index */
size_t dsp_pool_release_until(struct dsp_manager *m,
                              size_t cached_max); /* general pool only; bytes released */
/* Before a budget reservation of len: releases from the general pool what
 * dsp_budget_excess says, cached blocks being the cheapest to lose. */
void dsp_pool_make_room(struct dsp_manager *m, size_t len, int lock);
size_t dsp_pool_evict_registered(struct dsp_manager *m, int kind, size_t keep,
                                 struct dsp_span **out, size_t max, int synced_only);
void dsp_span_release(struct dsp_manager *m,
                      struct dsp_span *s);      /* uncount, drop, vacate (unregistered first) */
size_t dsp_pooled_bytes(struct dsp_manager *m); /* the general pool and every kind's */
/* How much may stay idle, every cache together: DSP_POOL_MAX, or the
 * process's share of the node cap when smaller. Under mu. */
size_t dsp_pool_limit(struct dsp_manager *m);
/* What is idle now against that limit: both pools and the blocks layers keep
 * (m->kept). Under mu. */
size_t dsp_pool_idle_bytes(struct dsp_manager *m);
/* A layer asks to keep a live block of len idle: 1 (counted in m->kept) while
 * everything idle stays within dsp_pool_limit, else 0. Under mu. */
int dsp_pool_may_keep(struct dsp_manager *m, size_t len);

#endif
