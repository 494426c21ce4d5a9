/* Registered span kinds: memory a layer registers with a party outside the
 * process (the CUDA layer, preload/cuda_core.c: the driver) and may undo
 * only at the exact base it registered. The core knows no such party: a
 * layer adds its kind once, with hooks, and the core keeps the kind's freed
 * spans pooled apart, still registered, and calls the hooks where only the
 * layer may act (docs/design.md, "Layers of the core"). */
#ifndef DSP_SPAN_KIND_H
#define DSP_SPAN_KIND_H

#include <stddef.h>
#include <stdint.h>

/* Kinds the manager has room for, numbered 1 to DSP_SPAN_KINDS (0: a span
 * no kind registered). The CUDA layer adds one. */
#define DSP_SPAN_KINDS 2

/* The layer's side of its kind. The core calls these, never the party: and
 * only from the public API (dsp_alloc, dsp_free, dsp_trim) or the node
 * ledger's timer, never from an allocation path of another layer. */
struct dsp_span_kind {
    void (*freed)(uintptr_t base, size_t len); /* a registered block was freed (no party call) */
    int (*make_room)(size_t len); /* over budget: give back pooled blocks; 1 if it did */
    void (*over_limit)(void);     /* pooled memory is over its limit (dsp_pool_limit) */
    size_t (*trim)(void);         /* give back everything pooled; bytes */
    /* A yield request of the node ledger, from its timer thread (a thread of
     * the shim's, no lock held): give back what needs no wait; bytes.
     * NULL: nothing. */
    size_t (*yield)(void);
    /* 1 when yield can give anything back from the timer's thread (else the
     * kind's pool is not offered: others would wait for it in vain); NULL:
     * never. */
    int (*can_yield)(void);
};

/* Adds a kind: its number (1 to DSP_SPAN_KINDS), the same one for the same
 * ops added again, or -ENOSPC. Lock-free; a kind is never removed. */
int dsp_span_kind_add(const struct dsp_span_kind *ops);

/* Eviction: takes up to max of kind's pooled spans, those its allocations
 * never reuse first, then the largest, while pooled memory is over its limit
 * (DSP_EVICT_OVER: DSP_POOL_MAX or the node share, dsp_pool_limit), or all
 * of them (DSP_EVICT_ALL), or all that need no wait (DSP_EVICT_SYNCED:
 * out[i].unsynced is 0 for each); the caller undoes each registration, then
 * hands the token to dsp_span_kind_evicted(). A span whose registration
 * could not be undone is simply not handed back: it stays LIVE, counted, in
 * no index and not in the registry, so it is never reused (its pages may
 * still be pinned). */
struct dsp_evicted {
    uintptr_t base;
    size_t len;
    void *token;
    int unsynced; /* freed with no wait since: wait before undoing it */
};
enum { DSP_EVICT_OVER, DSP_EVICT_ALL, DSP_EVICT_SYNCED };
size_t dsp_span_kind_evict(int kind, int what, struct dsp_evicted *out, size_t max);
void dsp_span_kind_evicted(void *token);

/* 1 when giving back kind's pool would leave room for len more pinned bytes,
 * else 0 (so a hopeless request does not empty it). */
int dsp_span_kind_would_make_room(int kind, size_t len);

#endif
