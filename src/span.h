/* Spans: the pieces the arena is cut into. Every span sits in an address-ordered
 * list (for coalescing) and, while vacant or cached, in a size index.
 * All span functions run under the manager's lock. */
#ifndef DSP_SPAN_H
#define DSP_SPAN_H

#include <stddef.h>
#include <stdint.h>

enum dsp_span_state {
    DSP_SPAN_VACANT, /* reserved address space, PROT_NONE, no memory */
    DSP_SPAN_CACHED, /* freed block kept populated (and locked) for reuse */
    DSP_SPAN_LIVE,   /* owned by a caller, or being populated or evicted */
};

/* What the program did to a block's mapping with its own calls: such a span
 * is restored or given back when freed, never pooled as it is. */
enum { DSP_TAINT_PROT = 1, DSP_TAINT_READONLY = 2, DSP_TAINT_ADVICE = 4 };

/* Served memory is shared with forked children, as its kind's party makes
 * its own (issue 13; block.h, DSP_BLK_SERVED):
 * such a span maps the manager's memfd at the offset of its own address.
 * FOREIGN: inherited across fork, the parent's file: never punched here. */
enum { DSP_SHARED_OURS = 1, DSP_SHARED_FOREIGN = 2 };

struct dsp_span {
    uintptr_t base;
    size_t len;
    struct dsp_span *aprev, *anext; /* address order */
    struct dsp_span *bprev, *bnext; /* size-index bin */
    uint16_t bin;
    uint8_t state;
    uint8_t locked;   /* mlock'ed in this process */
    uint8_t huge;     /* MADV_HUGEPAGE asked for */
    uint8_t counted;  /* in the budget's pinned bytes (not after a fork) */
    uint8_t reg;      /* the span kind that registered exactly [base, base+len), 0: none */
    uint8_t taint;    /* DSP_TAINT_*: the program changed the mapping (memcalls.c) */
    uint8_t unsynced; /* registered, freed with no wait: a copy may still use it */
    uint8_t served;   /* the kind whose served allocation it is: its pool reuses it (pool.c) */
    uint8_t shared;   /* DSP_SHARED_*: mapped from the manager's memfd (pin.c) */
    uint8_t node;     /* the NUMA node its pages are on, the pool it goes to (numa.h; 0: off) */
    uint32_t user;    /* the owning layer's bits (preload/block_bits.h) */
    size_t block;     /* live: the caller's block length (<= len) */
};

/* Size index in the manner of TLSF: 8 linear bins below 8 pages, then 8 bins per
 * power of two. find() is O(1) apart from a bounded scan of the request's own bin
 * (so a block freed and asked for again at the same size is found), and returns
 * a span at least as large as asked. */
#define DSP_BIN_FL 62
#define DSP_BIN_SL 8
struct dsp_bins {
    uint64_t fl_map;
    uint8_t sl_map[DSP_BIN_FL];
    struct dsp_span *head[DSP_BIN_FL][DSP_BIN_SL];
    size_t bytes; /* total length of the spans indexed */
};

void dsp_bins_insert(struct dsp_bins *b, struct dsp_span *s);
void dsp_bins_remove(struct dsp_bins *b, struct dsp_span *s);
struct dsp_span *dsp_bins_find(struct dsp_bins *b, size_t len);
struct dsp_span *dsp_bins_largest(struct dsp_bins *b);

#endif
