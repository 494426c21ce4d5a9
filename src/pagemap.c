/* The page map's writer side (pagemap.h says what the map is for). Only the
 * registry calls these, under its write mutex: the slabs need no lock of
 * their own, and readers see every store as a relaxed atomic that their
 * seqlock validates. */
#include "pagemap.h"

#include "slab.h"

struct dsp_pmap_node dsp_pmap_root;
uintptr_t dsp_pmap_lo, dsp_pmap_hi;

/* 64 KiB at a time: 100,000 live 4 KiB blocks need 200 leaves (435 KB) and a
 * handful of nodes. */
static struct dsp_slab nodes = DSP_SLAB_INIT_CHUNK(sizeof(struct dsp_pmap_node), 64 << 10);
static struct dsp_slab leaves = DSP_SLAB_INIT_CHUNK(sizeof(struct dsp_pmap_leaf), 64 << 10);
static size_t carved;

/* Carved zeroed, then published with release: a reader that reaches it reads
 * no entries, and asks the tree. */
static void *carve(struct dsp_slab *slab, void **slot) {
    void *p = dsp_slab_alloc(slab);
    if (p) {
        __atomic_fetch_add(&carved, 1, __ATOMIC_RELAXED); /* read by dsp_pmap_nodes unlocked */
        __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    }
    return p;
}

struct dsp_pmap_leaf *dsp_pmap_reserve(uintptr_t base) {
    struct dsp_pmap_node *n = &dsp_pmap_root;
    for (int s = 39; s > 21; s -= 9) {
        void **slot = &n->slot[DSP_PMAP_IDX(base, s)];
        if (!(n = *slot) && !(n = carve(&nodes, slot))) return NULL;
    }
    void **slot = &n->slot[DSP_PMAP_IDX(base, 21)];
    struct dsp_pmap_leaf *l = *slot ? *slot : carve(&leaves, slot);
    if (l) { /* the span readers probe (pagemap.h) */
        uintptr_t start = base & ~(uintptr_t)(DSP_PMAP_MAX_LEN - 1);
        uintptr_t end = start + 2 * DSP_PMAP_MAX_LEN;
        if (!dsp_pmap_hi || start < dsp_pmap_lo)
            __atomic_store_n(&dsp_pmap_lo, start, __ATOMIC_RELAXED);
        if (end > dsp_pmap_hi) __atomic_store_n(&dsp_pmap_hi, end, __ATOMIC_RELAXED);
    }
    return l;
}

void dsp_pmap_set(struct dsp_pmap_leaf *l, uintptr_t base, size_t len, uint32_t gen) {
    if (l->gen != gen) { /* a fork child's first start here: the parent's are not pinned */
        for (int w = 0; w < DSP_PMAP_FANOUT / 64; w++)
            __atomic_store_n(&l->start[w], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&l->gen, gen, __ATOMIC_RELAXED);
    }
    size_t i = DSP_PMAP_IDX(base, 12);
    __atomic_store_n(&l->len[i], (uint32_t)len, __ATOMIC_RELAXED);
    __atomic_store_n(&l->start[i / 64], l->start[i / 64] | (uint64_t)1 << (i % 64),
                     __ATOMIC_RELAXED);
}

void dsp_pmap_clear(uintptr_t base) {
    struct dsp_pmap_leaf *l = (struct dsp_pmap_leaf *)dsp_pmap_leaf_of(base);
    if (!l) return; /* never mapped: its reserve failed */
    size_t i = DSP_PMAP_IDX(base, 12);
    __atomic_store_n(&l->start[i / 64], l->start[i / 64] & ~((uint64_t)1 << (i % 64)),
                     __ATOMIC_RELAXED);
}

size_t dsp_pmap_nodes(void) {
    return __atomic_load_n(&carved, __ATOMIC_RELAXED);
}
