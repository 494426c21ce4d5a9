/* The page map: a radix table from an address to the small block that may
 * hold it, so that "is this pinned?" on a small block reads one cache line
 * beyond the hot ones, whatever the number of blocks (issue 12: at 100,000
 * live 4 KiB blocks the B+tree's random lookups missed the caches on every
 * level, several times the 1,000-block latency; docs/registry.md, "The page
 * map: small blocks in one cache line").
 *
 * It is an index beside the registry's B+tree, not instead of it: the tree
 * stays the truth (every range, its owner and flags, the floor queries), and
 * the map answers only the yes of a containment query for the manager's
 * blocks of at most DSP_PMAP_MAX_LEN bytes. Everything else, and any answer the map
 * cannot give, goes to the tree.
 *
 * Only a range's first page is written: a bit in its leaf's start bitmap and
 * the range's length. A lookup takes the nearest start at or
 * below the address, in its own leaf (2 MiB of address space) or the one
 * before (a mapped range is at most 2 MiB long, so its start is never further
 * back). Inserting a range is two stores and removing it one, whatever its
 * length: an entry on every page made the 256 KiB pool cycle several times
 * slower (docs/registry.md, "Design notes").
 *
 * Four levels of 512 (9 bits each, bits 12-47 of the address): a static root,
 * then nodes carved from slabs and never freed, so that a reader holding a
 * stale pointer still reads a node of the type it expects (the registry's
 * seqlock tells it to retry). Addresses at or above 2^48 (five-level paging)
 * are not mapped: the tree answers for them. All calls but the lookup are the
 * registry writer's, under its mutex. */
#ifndef DSP_PAGEMAP_H
#define DSP_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>

#define DSP_PMAP_MAX_LEN ((size_t)2 << 20)
#define DSP_PMAP_FANOUT  512
/* The slot of addr in a node of the level that starts at bit shift (39, 30,
 * 21; 12 in a leaf). */
#define DSP_PMAP_IDX(addr, shift) (((addr) >> (shift)) & (DSP_PMAP_FANOUT - 1))

struct dsp_pmap_node {
    void *slot[DSP_PMAP_FANOUT]; /* a node of the next level, or in the third a leaf */
};

/* 2 MiB of address space: which pages start a mapped range, and for those
 * the range's length. gen is the registry generation of every start in the
 * leaf: a forked child's first start in a leaf clears the parent's (they are
 * not pinned in the child), and readers skip a leaf of another generation.
 * Lengths take 4 bytes so that 100,000 live 4 KiB blocks keep theirs in
 * 400 KB, inside a core's L2 cache; the header is its own cache line. */
struct dsp_pmap_leaf {
    uint32_t gen;
    char pad_[60];
    uint64_t start[DSP_PMAP_FANOUT / 64];
    uint32_t len[DSP_PMAP_FANOUT];
};

extern struct dsp_pmap_node dsp_pmap_root;
/* The addresses a mapped range can cover: from the first leaf's start to
 * 2 MiB past the last leaf's end (a range starting in a leaf may run into
 * the next). Only widened, by the writer; outside, a lookup reads nothing
 * more (issue 29: ranges registered elsewhere paid two walks of the map).
 * A reader that sees a torn or stale pair asks the tree, which is right
 * whatever the map says. */
extern uintptr_t dsp_pmap_lo, dsp_pmap_hi;

#define DSP_PMAP_LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* The leaf of the 2 MiB holding addr, or NULL (acquire: a leaf carved a moment
 * ago is seen zeroed). */
static inline const struct dsp_pmap_leaf *dsp_pmap_leaf_of(uintptr_t addr) {
    if (addr >> 48) return NULL;
    const struct dsp_pmap_node *n = &dsp_pmap_root;
    for (int shift = 39; shift > 21; shift -= 9) {
        n = __atomic_load_n(&n->slot[DSP_PMAP_IDX(addr, shift)], __ATOMIC_ACQUIRE);
        if (!n) return NULL;
    }
    return __atomic_load_n(&n->slot[DSP_PMAP_IDX(addr, 21)], __ATOMIC_ACQUIRE);
}

/* The last start at or below page i of a leaf: its page index, or -1. */
static inline int dsp_pmap_last_start(const struct dsp_pmap_leaf *l, int i) {
    int w = i >> 6;
    uint64_t bits = DSP_PMAP_LD(l->start[w]) & (((uint64_t)2 << (i & 63)) - 1);
    while (!bits) {
        if (--w < 0) return -1;
        bits = DSP_PMAP_LD(l->start[w]);
    }
    return w * 64 + 63 - __builtin_clzll(bits);
}

/* The leaf of addr if it holds starts of generation gen, else NULL. */
static inline const struct dsp_pmap_leaf *dsp_pmap_live_leaf(uintptr_t addr, uint32_t gen) {
    const struct dsp_pmap_leaf *l = dsp_pmap_leaf_of(addr);
    return l && DSP_PMAP_LD(l->gen) == gen ? l : NULL;
}

/* The mapped range of generation gen starting nearest at or below addr, read
 * with relaxed atomics for the caller's seqlock to validate: 1 with its base
 * and length, or 0 when none starts within DSP_PMAP_MAX_LEN below (ask the
 * tree). */
static inline int dsp_pmap_lookup(uintptr_t addr, uint32_t gen, uintptr_t *base, size_t *len) {
    uintptr_t lo = DSP_PMAP_LD(dsp_pmap_lo);
    if (addr - lo >= DSP_PMAP_LD(dsp_pmap_hi) - lo) return 0;
    const struct dsp_pmap_leaf *l = dsp_pmap_live_leaf(addr, gen);
    int i = l ? dsp_pmap_last_start(l, (int)DSP_PMAP_IDX(addr, 12)) : -1;
    uintptr_t g = addr & ~(uintptr_t)(DSP_PMAP_MAX_LEN - 1);
    if (i < 0) { /* the start may lie in the 2 MiB before */
        if (!g || !(l = dsp_pmap_live_leaf(g -= DSP_PMAP_MAX_LEN, gen))) return 0;
        if ((i = dsp_pmap_last_start(l, DSP_PMAP_FANOUT - 1)) < 0) return 0;
    }
    *base = g + (uintptr_t)i * 4096;
    *len = DSP_PMAP_LD(l->len[i]);
    return 1;
}

/* 1 when a range of len bytes at base goes in the map: page-aligned, below
 * 2^48, and at most DSP_PMAP_MAX_LEN long. The registry maps the manager's
 * blocks only: they are packed into the arena, so leaves cost them at most
 * about 2 KiB per 2 MiB of blocks, where ranges registered anywhere (one per
 * 2 MiB, say) would cost a leaf each. */
static inline int dsp_pmap_maps(uintptr_t base, size_t len) {
    return len && len <= DSP_PMAP_MAX_LEN && !(base & 4095) && !((base + len - 1) >> 48);
}

/* Writer: the leaf of base, made if need be (published empty, which readers
 * take as "ask the tree"); NULL when it could not be carved. */
struct dsp_pmap_leaf *dsp_pmap_reserve(uintptr_t base);

/* Writer, between the seqlock's increments: the range's start bit and length
 * in the leaf dsp_pmap_reserve gave; and their removal. No two mapped ranges
 * start on one page (they start page-aligned and never overlap), so a page's
 * start is only ever its own range's. */
void dsp_pmap_set(struct dsp_pmap_leaf *l, uintptr_t base, size_t len, uint32_t gen);
void dsp_pmap_clear(uintptr_t base);

/* Nodes and leaves carved so far (tests). */
size_t dsp_pmap_nodes(void);

#endif
