/* The registry: a B+tree of pinned ranges keyed by base address.
 *
 * Readers never write shared memory: they read optimistically under a sequence
 * counter and retry if a writer ran meanwhile (a seqlock). A pthread rwlock or
 * a per-slot reader count writes shared memory at every lookup, an atomic
 * that costs more than the lookup; this costs two loads of one cache line
 * (docs/registry.md, "The tree").
 *
 * What makes optimistic reads safe while writers change the tree:
 * - node memory is type-stable: leaves are only ever reused as leaves and inner
 *   nodes as inner nodes, and none is returned to the kernel, so any pointer a
 *   reader picks up, however stale, points at a node of the type it expects
 *   (each node also carries its type, checked on the way down);
 * - every field a reader looks at is read and written with relaxed atomics
 *   (but the keys of the counting scan, read plainly so that it vectorises:
 *   upper_bound), so a torn or stale value is only ever a wrong value, and
 *   counts and indices are clamped before use;
 * - the reader validates the sequence counter before trusting its answer.
 * Writers are serialised by a mutex and change fields one atomic store at a
 * time between the two increments of the counter. */
#include "fork.h"
#include "registry.h"

#include "reentry.h"
#include "internal.h"
#include "pagemap.h"
#include "slab.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#define LEAF_MAX  32
#define INNER_MAX 32 /* children */
#define MAX_DEPTH 24

#define LD(x)    __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
/* Node pointers are published with release and followed with acquire, so a
 * reader that reaches a freshly carved node sees it initialised (its memset
 * and type). Both are plain moves on x86. Regression:
 * registry.readers_follow_new_nodes_while_the_tree_grows (a TSan report). */
/* The seqlock's fences. ThreadSanitizer does not model atomic_thread_fence
 * (gcc -Wtsan); its builds run on x86, where acquire and release fences are
 * compiler barriers only, which atomic_signal_fence is too. Every field is an
 * atomic, so TSan has no data race to miss either way. */
#if defined(__SANITIZE_THREAD__) && (defined(__x86_64__) || defined(__i386__))
#define SEQ_FENCE(order) atomic_signal_fence(order)
#else
#define SEQ_FENCE(order) atomic_thread_fence(order)
#endif
#define LD_PTR(x)    __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ST_PTR(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

struct payload {
    uintptr_t end;
    void *owner;
    uint32_t gen;
    uint16_t kind, flags;
};

struct node {
    int leaf; /* set once when the node is first carved; never changes */
    int n;    /* entries (leaf) or children (inner) */
};

struct leaf {
    struct node h;
    struct leaf *prev, *next;
    uintptr_t key[LEAF_MAX];
    struct payload val[LEAF_MAX];
};

/* child[i] holds keys in [key[i-1], key[i]). After removals a separator stays
 * a valid lower bound, so empty children are dropped but nodes never merge:
 * the depth stays that of the largest size the tree has had. */
struct inner {
    struct node h;
    uintptr_t key[INNER_MAX - 1];
    struct node *child[INNER_MAX];
};

#define wmutex (dsp_fork_locks.slot[DSP_FORK_REGISTRY]) /* fork.c takes it at fork (fork.h) */

static struct {
    _Atomic unsigned seq; /* odd while a writer is changing the tree */
    struct node *root;    /* NULL while empty */
    uint32_t gen;
    /* Freed nodes, linked through prev / child[0] (atomic stores: stale
     * readers may still look at them). */
    struct leaf *free_leaves;
    struct inner *free_inners;
    struct dsp_slab leaves, inners;
} R = {0,
       NULL,
       1,
       NULL,
       NULL,
       DSP_SLAB_INIT(sizeof(struct leaf)),
       DSP_SLAB_INIT(sizeof(struct inner))};

/* This thread is between the two increments of seq: a reader on it (a signal
 * handler that interrupted the write) would wait for itself. */
static DSP_TLS int writing;

/* Tests only: called in the middle of every write, to widen the window. */
void (*dsp_reg_test_mid_write)(void);

/* --- readers ----------------------------------------------------------------- */

/* Number of keys <= k among the first n (keys are sorted). A counting scan,
 * not a binary search: its loads are independent, so the 4 cache lines of a
 * node miss in parallel, where a binary search waits for each probe in turn
 * (and the branchy one mispredicts about every other step): it is the
 * fastest of the three (docs/registry.md, "Design notes").
 * The compiler vectorises it in the AVX2 clone of dsp_reg_contains (issue
 * 29; 4 keys a compare), which needs plain loads: atomic ones are never
 * vectorised. A torn or stale key only miscounts, and the count is clamped
 * and the seqlock validated like every read here. ThreadSanitizer builds
 * keep the relaxed atomics (a plain load racing a writer is a report).
 * Scanning all 32 slots with those past n masked, a fixed trip count, was
 * slower, vectorised or not: it reads every cache line of the node. */
#if defined(__SANITIZE_THREAD__)
#define KEY_AT(key, i) LD((key)[i])
#else
#define KEY_AT(key, i) ((key)[i])
#endif
__attribute__((always_inline)) static inline int upper_bound(const uintptr_t *key, int n,
                                                             uintptr_t k) {
    int c = 0;
    for (int i = 0; i < n; i++) c += KEY_AT(key, i) <= k;
    return c;
}

static inline int clamp(int n, int max) {
    return n < 0 ? 0 : n > max ? max : n;
}

/* The range with the greatest base <= k, read optimistically: 1 with *out
 * filled, 0 if there is none, -EAGAIN if what was read cannot be trusted. */
__attribute__((always_inline)) static inline int predecessor(uintptr_t k, struct dsp_range *out) {
    struct node *nd = LD_PTR(R.root);
    if (!nd) return 0;
    for (int depth = 0; !LD(nd->leaf);
         depth++) { /* `leaf` is set once, before the node is published */
        if (depth == MAX_DEPTH) return -EAGAIN;
        struct inner *in = (struct inner *)nd;
        int n = clamp(LD(in->h.n), INNER_MAX);
        if (!n) return -EAGAIN;
        nd = LD_PTR(in->child[upper_bound(in->key, n - 1, k)]);
        if (!nd) return -EAGAIN;
    }
    struct leaf *l = (struct leaf *)nd;
    int i = upper_bound(l->key, clamp(LD(l->h.n), LEAF_MAX), k) - 1;
    if (i < 0) {
        l = LD_PTR(l->prev); /* empty leaves are unlinked, so prev has entries */
        if (!l) return 0;
        i = clamp(LD(l->h.n), LEAF_MAX) - 1;
        if (i < 0) return -EAGAIN;
    }
    out->base = LD(l->key[i]);
    out->end = LD(l->val[i].end);
    out->owner = LD(l->val[i].owner);
    out->gen = LD(l->val[i].gen);
    out->kind = LD(l->val[i].kind);
    out->flags = LD(l->val[i].flags);
    return 1;
}

/* The seqlock's read side. read_begin waits out a writer and returns the
 * sequence to validate with read_valid; -EDEADLK ("unknown") when the writer
 * is this very thread, interrupted by a signal handler that asks: waiting
 * would never end. */
static inline int read_begin(unsigned *seq) {
    for (;;) {
        unsigned s = atomic_load_explicit(&R.seq, memory_order_acquire);
        if (DSP_LIKELY(!(s & 1))) return *seq = s, 0;
        if (writing) return -EDEADLK;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static inline int read_valid(unsigned seq) {
    SEQ_FENCE(memory_order_acquire);
    return atomic_load_explicit(&R.seq, memory_order_relaxed) == seq;
}

/* Runs predecessor() until it reads a tree no writer touched meanwhile: 1 or
 * 0 as it answered, or read_begin's -EDEADLK. */
static int lookup(uintptr_t k, struct dsp_range *out, uint32_t *gen) {
    for (;;) {
        unsigned s;
        if (read_begin(&s)) return -EDEADLK;
        int rc = predecessor(k, out);
        *gen = LD(R.gen);
        if (DSP_LIKELY(read_valid(s) && rc >= 0)) return rc;
    }
}

int dsp_reg_find(uintptr_t addr, struct dsp_range *out) {
    uint32_t gen;
    struct dsp_range r;
    if (lookup(addr, &r, &gen) != 1 || addr >= r.end) return 0;
    *out = r;
    return 1;
}

int dsp_reg_floor(uintptr_t addr, struct dsp_range *out) {
    uint32_t gen;
    return lookup(addr, out, &gen) == 1;
}

/* The tree's search for dsp_reg_contains, compiled twice where the CPU may
 * have AVX2, in which the key counts vectorise (x86-64's baseline has no
 * 64-bit vector compare), with the cost model that allows a loop whose count
 * is not fixed. The copy is chosen at the first call from what glibc's
 * loader already knows of the CPU: GCC's target_clones would run its own
 * CPUID probe in every process at load (issue 29: the start-up). Only the
 * tree's path pays the indirect call; the page map's yes is answered before. */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
__attribute__((target("avx2"), optimize("vect-cost-model=dynamic"))) static int
predecessor_avx2(uintptr_t k, struct dsp_range *out) {
    return predecessor(k, out);
}
static int predecessor_plain(uintptr_t k, struct dsp_range *out) {
    return predecessor(k, out);
}
static int predecessor_first(uintptr_t k, struct dsp_range *out);
static int (*predecessor_copy)(uintptr_t, struct dsp_range *) = predecessor_first;
static int predecessor_first(uintptr_t k, struct dsp_range *out) {
    int (*f)(uintptr_t, struct dsp_range *) =
        CPU_FEATURE_ACTIVE(AVX2) ? predecessor_avx2 : predecessor_plain;
    __atomic_store_n(&predecessor_copy, f, __ATOMIC_RELAXED);
    return f(k, out);
}
#define TREE_SEARCH(k, out) __atomic_load_n(&predecessor_copy, __ATOMIC_RELAXED)(k, out)
#else
#define TREE_SEARCH(k, out) predecessor(k, out)
#endif

int dsp_reg_contains(uintptr_t addr, size_t len) {
    uintptr_t last = addr + (len ? len - 1 : 0);
    if (last < addr) return 0;
    /* The page map first: one cold cache line for a small block, whatever
     * the number of blocks. It answers only yes; the rest is the tree's to
     * say, in the same read of the seqlock. Outside the span of its leaves
     * (the manager's arena) it is not probed at all (dsp_pmap_lookup). */
    for (;;) {
        unsigned s;
        if (read_begin(&s)) return 0;
        uint32_t gen = LD(R.gen);
        uintptr_t base;
        size_t n;
        struct dsp_range r;
        int yes = dsp_pmap_lookup(addr, gen, &base, &n) && last - base < n;
        int rc = yes ? 1 : TREE_SEARCH(addr, &r);
        if (DSP_LIKELY(read_valid(s) && rc >= 0))
            return yes || (rc == 1 && last < r.end && r.gen == gen);
    }
}

size_t dsp_reg_n;

uint32_t dsp_reg_generation(void) {
    return LD(R.gen);
}

/* --- writers (under wmutex, between the two increments of seq) --------------- */

static void write_begin(void) {
    dsp_lock(&wmutex);
    writing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&R.seq, atomic_load_explicit(&R.seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    SEQ_FENCE(memory_order_release);
}

static void write_end(void) {
    void (*hook)(void) = __atomic_load_n(&dsp_reg_test_mid_write, __ATOMIC_RELAXED);
    if (DSP_UNLIKELY(hook != NULL)) hook();
    atomic_store_explicit(&R.seq, atomic_load_explicit(&R.seq, memory_order_relaxed) + 1,
                          memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    writing = 0;
    dsp_unlock(&wmutex);
}

/* The writer's own reads need no atomics against itself, but the stores must
 * be atomic for concurrent readers; these move entries one field at a time. */
static void copy_entry(struct leaf *dst, int di, const struct leaf *src, int si) {
    ST(dst->key[di], src->key[si]);
    ST(dst->val[di].end, src->val[si].end);
    ST(dst->val[di].owner, src->val[si].owner);
    ST(dst->val[di].gen, src->val[si].gen);
    ST(dst->val[di].kind, src->val[si].kind);
    ST(dst->val[di].flags, src->val[si].flags);
}

static void set_entry(struct leaf *l, int i, uintptr_t k, const struct payload *v) {
    ST(l->key[i], k);
    ST(l->val[i].end, v->end);
    ST(l->val[i].owner, v->owner);
    ST(l->val[i].gen, v->gen);
    ST(l->val[i].kind, v->kind);
    ST(l->val[i].flags, v->flags);
}

/* The ranges the page map holds: the manager's blocks it can map (pagemap.h
 * says why blocks only). Insert and remove ask the same question. */
static int in_pmap(unsigned kind, uintptr_t base, size_t len) {
    return kind == DSP_RANGE_BLOCK && dsp_pmap_maps(base, len);
}

/* Inserting splits at most one leaf and one inner node per level, then adds a
 * root: those nodes are reserved first, so an insert either completes or
 * changes nothing (no half-linked split on ENOMEM). */
static struct {
    struct leaf *leaf;
    struct inner *inner[MAX_DEPTH + 1];
    int inners;
} spare;

static int height(void) {
    int h = 0;
    for (struct node *nd = R.root; nd && !nd->leaf; nd = ((struct inner *)nd)->child[0]) h++;
    return h;
}

static struct leaf *new_leaf(void) {
    struct leaf *l = R.free_leaves;
    if (l) {
        R.free_leaves = l->prev;
    } else {
        l = dsp_slab_alloc(&R.leaves); /* no reader reaches it before it is published */
        if (!l) return NULL;
        ST(l->h.leaf, 1);
    }
    ST(l->h.n, 0);
    ST_PTR(l->prev, NULL);
    ST_PTR(l->next, NULL);
    return l;
}

static struct inner *new_inner(void) {
    struct inner *in = R.free_inners;
    if (in) {
        R.free_inners = (struct inner *)in->child[0];
    } else {
        in = dsp_slab_alloc(&R.inners);
        if (!in) return NULL;
        ST(in->h.leaf, 0);
    }
    ST(in->h.n, 0);
    return in;
}

static void free_leaf(struct leaf *l) {
    ST_PTR(l->prev, R.free_leaves);
    R.free_leaves = l;
}

static void free_inner(struct inner *in) {
    ST_PTR(in->child[0], (struct node *)R.free_inners);
    R.free_inners = in;
}

static int reserve_nodes(void) {
    if (!spare.leaf && !(spare.leaf = new_leaf())) return -ENOMEM;
    int need = height() + 1;
    if (need > MAX_DEPTH) return -ENOMEM;
    while (spare.inners < need) {
        struct inner *in = new_inner();
        if (!in) return -ENOMEM;
        spare.inner[spare.inners++] = in;
    }
    return 0;
}

static struct leaf *take_leaf(void) {
    struct leaf *l = spare.leaf;
    spare.leaf = NULL;
    return l;
}

static struct inner *take_inner(void) {
    return spare.inner[--spare.inners];
}

struct split {
    uintptr_t key;
    struct node *node;
};

static int leaf_insert(struct leaf *l, uintptr_t k, const struct payload *v, struct split *sp) {
    int n = l->h.n, pos = upper_bound(l->key, n, k);
    if (n < LEAF_MAX) {
        for (int i = n; i > pos; i--) copy_entry(l, i, l, i - 1);
        set_entry(l, pos, k, v);
        ST(l->h.n, n + 1);
        return 0;
    }
    struct leaf *r = take_leaf();
    int half = LEAF_MAX / 2;
    for (int i = half; i < LEAF_MAX; i++) copy_entry(r, i - half, l, i);
    ST(r->h.n, LEAF_MAX - half);
    ST_PTR(r->next, l->next);
    ST_PTR(r->prev, l);
    if (l->next) ST_PTR(l->next->prev, r);
    ST_PTR(l->next, r);
    ST(l->h.n, half);
    leaf_insert(pos <= half ? l : r, k, v, NULL); /* has room now */
    sp->key = r->key[0];
    sp->node = &r->h;
    return 1;
}

static int node_insert(struct node *nd, uintptr_t k, const struct payload *v, struct split *sp) {
    if (nd->leaf) return leaf_insert((struct leaf *)nd, k, v, sp);
    struct inner *in = (struct inner *)nd;
    int i = upper_bound(in->key, in->h.n - 1, k);
    struct split child;
    if (node_insert(in->child[i], k, v, &child) == 0) return 0;
    /* child i split: its right half goes in at i+1 with separator child.key */
    struct inner *dst = in;
    int rc = 0;
    if (in->h.n == INNER_MAX) {
        struct inner *r = take_inner();
        int half = INNER_MAX / 2;
        for (int j = half; j < INNER_MAX; j++) ST_PTR(r->child[j - half], in->child[j]);
        for (int j = half; j < INNER_MAX - 1; j++) ST(r->key[j - half], in->key[j]);
        ST(r->h.n, INNER_MAX - half);
        sp->key = in->key[half - 1];
        sp->node = &r->h;
        ST(in->h.n, half);
        if (i >= half) dst = r, i -= half;
        rc = 1;
    }
    int n = dst->h.n;
    for (int j = n; j > i + 1; j--) ST_PTR(dst->child[j], dst->child[j - 1]);
    for (int j = n - 1; j > i; j--) ST(dst->key[j], dst->key[j - 1]);
    ST_PTR(dst->child[i + 1], child.node);
    ST(dst->key[i], child.key);
    ST(dst->h.n, n + 1);
    return rc;
}

/* The range with the greatest base <= k, for the writer (no retry needed). */
static struct leaf *writer_predecessor(uintptr_t k, int *pos) {
    struct node *nd = R.root;
    if (!nd) return NULL;
    while (!nd->leaf) {
        struct inner *in = (struct inner *)nd;
        nd = in->child[upper_bound(in->key, in->h.n - 1, k)];
    }
    struct leaf *l = (struct leaf *)nd;
    int i = upper_bound(l->key, l->h.n, k) - 1;
    if (i < 0) {
        if (!(l = l->prev)) return NULL;
        i = l->h.n - 1;
    }
    *pos = i;
    return l;
}

int dsp_reg_insert(uintptr_t base, size_t len, unsigned kind, unsigned flags, void *owner) {
    uintptr_t end = base + len;
    if (!len || end < base) return -EINVAL;
    struct payload v = {end, owner, 0, (uint16_t)kind, (uint16_t)flags};
    int rc, pos;
    dsp_lock(&wmutex); /* checks first: a refused insert does not disturb readers */
    v.gen = R.gen;
    struct leaf *p = writer_predecessor(end - 1, &pos);
    if (p && p->val[pos].end > base) {
        rc = -EEXIST;
    } else {
        rc = reserve_nodes();
    }
    if (rc) {
        dsp_unlock(&wmutex);
        return rc;
    }
    /* Without room in the page map the range is the tree's alone. */
    struct dsp_pmap_leaf *leaf = in_pmap(kind, base, len) ? dsp_pmap_reserve(base) : NULL;
    writing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&R.seq, atomic_load_explicit(&R.seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    SEQ_FENCE(memory_order_release);
    if (!R.root) {
        struct leaf *l = take_leaf();
        leaf_insert(l, base, &v, NULL);
        ST_PTR(R.root, &l->h);
    } else {
        struct split sp;
        if (node_insert(R.root, base, &v, &sp) == 1) {
            struct inner *nr = take_inner();
            ST_PTR(nr->child[0], R.root);
            ST_PTR(nr->child[1], sp.node);
            ST(nr->key[0], sp.key);
            ST(nr->h.n, 2);
            ST_PTR(R.root, &nr->h);
        }
    }
    if (leaf) dsp_pmap_set(leaf, base, len, v.gen);
    ST(dsp_reg_n, dsp_reg_n + 1);
    write_end();
    return 0;
}

/* --- remove ------------------------------------------------------------------ */

static int leaf_remove(struct leaf *l, uintptr_t k, struct dsp_range *out) {
    int n = l->h.n, i = upper_bound(l->key, n, k) - 1;
    if (i < 0 || l->key[i] != k) return -ENOENT;
    out->base = k;
    out->end = l->val[i].end;
    out->owner = l->val[i].owner;
    out->gen = l->val[i].gen;
    out->kind = l->val[i].kind;
    out->flags = l->val[i].flags;
    for (int j = i; j < n - 1; j++) copy_entry(l, j, l, j + 1);
    ST(l->h.n, n - 1);
    return n - 1 == 0; /* 1: now empty */
}

static void drop_leaf(struct leaf *l) {
    if (l->prev) ST_PTR(l->prev->next, l->next);
    if (l->next) ST_PTR(l->next->prev, l->prev);
    free_leaf(l);
}

static int node_remove(struct node *nd, uintptr_t k, struct dsp_range *out) {
    if (nd->leaf) return leaf_remove((struct leaf *)nd, k, out);
    struct inner *in = (struct inner *)nd;
    int n = in->h.n, i = upper_bound(in->key, n - 1, k);
    struct node *c = in->child[i];
    int rc = node_remove(c, k, out);
    if (rc <= 0) return rc;
    if (c->leaf)
        drop_leaf((struct leaf *)c);
    else
        free_inner((struct inner *)c);
    /* drop child i and one separator next to it */
    for (int j = i; j < n - 1; j++) ST_PTR(in->child[j], in->child[j + 1]);
    for (int j = i > 0 ? i - 1 : 0; j < n - 2; j++) ST(in->key[j], in->key[j + 1]);
    ST(in->h.n, n - 1);
    return n - 1 == 0;
}

int dsp_reg_remove(uintptr_t base, struct dsp_range *out) {
    struct dsp_range r;
    write_begin();
    int rc = R.root ? node_remove(R.root, base, &r) : -ENOENT;
    if (rc >= 0) {
        if (out) *out = r;
        if (in_pmap(r.kind, r.base, r.end - r.base)) dsp_pmap_clear(r.base);
        ST(dsp_reg_n, dsp_reg_n - 1);
        if (rc == 1) { /* the root itself emptied */
            if (R.root->leaf)
                drop_leaf((struct leaf *)R.root);
            else
                free_inner((struct inner *)R.root);
            ST_PTR(R.root, NULL);
        }
        while (R.root && !R.root->leaf && ((struct inner *)R.root)->h.n == 1) {
            struct inner *old = (struct inner *)R.root;
            ST_PTR(R.root, old->child[0]);
            free_inner(old);
        }
        rc = 0;
    }
    write_end();
    return rc;
}

int dsp_reg_set_flags(uintptr_t base, unsigned flags) {
    write_begin();
    int rc = -ENOENT, pos;
    struct leaf *l = writer_predecessor(base, &pos);
    if (l && l->key[pos] == base) {
        ST(l->val[pos].flags, (uint16_t)flags);
        rc = 0;
    }
    write_end();
    return rc;
}

/* --- fork -------------------------------------------------------------------- */

void dsp_reg_fork_child(void) {
    /* prepare held the mutex, so no write was half done: seq is even. */
    ST(R.gen, R.gen + 1);
}
