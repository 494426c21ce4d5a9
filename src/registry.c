#include "registry.h"

#include "brlock.h"
#include "slab.h"

#include <errno.h>
#include <string.h>

#define LEAF_MAX  32
#define INNER_MAX 32 /* children */

struct payload {
    uintptr_t end;
    void *owner;
    uint32_t gen;
    uint16_t kind, flags;
};

struct leaf {
    int n;
    struct leaf *prev, *next;
    uintptr_t key[LEAF_MAX];
    struct payload val[LEAF_MAX];
};

/* child[i] holds keys in [key[i-1], key[i]). After removals a separator stays
 * a valid lower bound, so empty children are dropped but nodes never merge:
 * the depth stays that of the largest size the tree has had. */
struct inner {
    int n; /* children */
    uintptr_t key[INNER_MAX - 1];
    void *child[INNER_MAX];
};

static struct {
    struct dsp_brlock lock;
    void *root; /* NULL while empty */
    int height; /* 0: root is a leaf */
    size_t count;
    _Atomic uint32_t gen;
    struct dsp_slab leaves, inners;
} R = {DSP_BRLOCK_INIT, NULL, 0, 0, 1, DSP_SLAB_INIT(sizeof(struct leaf)), DSP_SLAB_INIT(sizeof(struct inner))};

/* Number of keys <= k among the first n. Branch-free (the compare feeds a
 * conditional move): on random lookups a branchy binary search mispredicts
 * about every other step, which cost more than the cache misses: 70 ns for
 * 1,000 ranges, 18 ns branch-free (bench/pin_bench). A ternary here was
 * compiled back into a branch by gcc 12, hence the multiplication. */
static inline int upper_bound(const uintptr_t *key, int n, uintptr_t k) {
    const uintptr_t *base = key;
    while (n > 1) {
        int half = n >> 1;
        base += (size_t)(base[half - 1] <= k) * (size_t)half; /* no branch for gcc to make */
        n -= half;
    }
    return (int)(base - key) + (n == 1 && *base <= k);
}

static struct leaf *descend(uintptr_t k) {
    void *node = R.root;
    for (int h = R.height; h > 0; h--) {
        struct inner *in = node;
        node = in->child[upper_bound(in->key, in->n - 1, k)];
    }
    return node;
}

/* The range with the greatest base <= k: its leaf and index, or NULL. */
static struct leaf *predecessor(uintptr_t k, int *pos) {
    if (!R.root) return NULL;
    struct leaf *l = descend(k);
    int i = upper_bound(l->key, l->n, k) - 1;
    if (i < 0) {
        l = l->prev; /* empty leaves are unlinked, so prev has entries */
        if (!l) return NULL;
        i = l->n - 1;
    }
    *pos = i;
    return l;
}

static void fill(struct dsp_range *out, const struct leaf *l, int i) {
    out->base = l->key[i];
    out->end = l->val[i].end;
    out->owner = l->val[i].owner;
    out->gen = l->val[i].gen;
    out->kind = l->val[i].kind;
    out->flags = l->val[i].flags;
}

int dsp_reg_find(uintptr_t addr, struct dsp_range *out) {
    int s = dsp_br_read_lock(&R.lock), pos, found = 0;
    struct leaf *l = predecessor(addr, &pos);
    if (l && addr < l->val[pos].end) {
        fill(out, l, pos);
        found = 1;
    }
    dsp_br_read_unlock(&R.lock, s);
    return found;
}

int dsp_reg_contains(uintptr_t addr, size_t len) {
    uintptr_t last = addr + (len ? len - 1 : 0);
    if (last < addr) return 0;
    int s = dsp_br_read_lock(&R.lock), pos, ok = 0;
    struct leaf *l = predecessor(addr, &pos);
    if (l && last < l->val[pos].end)
        ok = l->val[pos].gen == atomic_load_explicit(&R.gen, memory_order_relaxed);
    dsp_br_read_unlock(&R.lock, s);
    return ok;
}

size_t dsp_reg_count(void) {
    int s = dsp_br_read_lock(&R.lock);
    size_t n = R.count;
    dsp_br_read_unlock(&R.lock, s);
    return n;
}

/* --- insert ---------------------------------------------------------------- */

/* An insert splits at most one leaf and one inner node per level, then adds a
 * root: those nodes are reserved before the tree changes, so an insert either
 * completes or changes nothing (no half-linked split on ENOMEM). */
static struct {
    struct leaf *leaf;
    struct inner *inner[64];
    int inners;
} spare;

static int reserve_nodes(void) {
    if (!spare.leaf && !(spare.leaf = dsp_slab_alloc(&R.leaves))) return -ENOMEM;
    while (spare.inners < R.height + 1) {
        struct inner *in = dsp_slab_alloc(&R.inners);
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

static struct inner *take_inner(void) { return spare.inner[--spare.inners]; }

struct split {
    uintptr_t key;
    void *node;
};

static int leaf_insert(struct leaf *l, uintptr_t k, const struct payload *v, struct split *sp) {
    int pos = upper_bound(l->key, l->n, k);
    if (l->n < LEAF_MAX) {
        memmove(l->key + pos + 1, l->key + pos, (size_t)(l->n - pos) * sizeof l->key[0]);
        memmove(l->val + pos + 1, l->val + pos, (size_t)(l->n - pos) * sizeof l->val[0]);
        l->key[pos] = k;
        l->val[pos] = *v;
        l->n++;
        return 0;
    }
    struct leaf *r = take_leaf();
    int half = LEAF_MAX / 2;
    r->n = LEAF_MAX - half;
    memcpy(r->key, l->key + half, (size_t)r->n * sizeof l->key[0]);
    memcpy(r->val, l->val + half, (size_t)r->n * sizeof l->val[0]);
    l->n = half;
    r->next = l->next;
    r->prev = l;
    if (l->next) l->next->prev = r;
    l->next = r;
    leaf_insert(pos <= half ? l : r, k, v, NULL); /* has room now */
    sp->key = r->key[0];
    sp->node = r;
    return 1;
}

static int inner_insert(struct inner *in, int h, uintptr_t k, const struct payload *v, struct split *sp) {
    int i = upper_bound(in->key, in->n - 1, k);
    struct split child;
    int rc = h == 1 ? leaf_insert(in->child[i], k, v, &child) : inner_insert(in->child[i], h - 1, k, v, &child);
    if (rc <= 0) return rc;
    /* child i split: its right half goes in at i+1 with separator child.key */
    struct inner *dst = in;
    if (in->n == INNER_MAX) {
        struct inner *r = take_inner();
        int half = INNER_MAX / 2;
        r->n = INNER_MAX - half;
        memcpy(r->child, in->child + half, (size_t)r->n * sizeof in->child[0]);
        memcpy(r->key, in->key + half, (size_t)(r->n - 1) * sizeof in->key[0]);
        sp->key = in->key[half - 1];
        sp->node = r;
        in->n = half;
        if (i >= half) dst = r, i -= half;
        rc = 1;
    } else {
        rc = 0;
    }
    memmove(dst->child + i + 2, dst->child + i + 1, (size_t)(dst->n - i - 1) * sizeof dst->child[0]);
    memmove(dst->key + i + 1, dst->key + i, (size_t)(dst->n - 1 - i) * sizeof dst->key[0]);
    dst->child[i + 1] = child.node;
    dst->key[i] = child.key;
    dst->n++;
    return rc;
}


int dsp_reg_insert(uintptr_t base, size_t len, unsigned kind, unsigned flags, void *owner) {
    uintptr_t end = base + len;
    if (!len || end < base) return -EINVAL;
    struct payload v = {end, owner, 0, (uint16_t)kind, (uint16_t)flags};
    int rc = 0, pos;
    dsp_br_write_lock(&R.lock);
    v.gen = atomic_load_explicit(&R.gen, memory_order_relaxed);
    struct leaf *p = predecessor(end - 1, &pos);
    if (p && p->val[pos].end > base) {
        rc = -EEXIST;
    } else if ((rc = reserve_nodes()) != 0) {
        /* nothing changed */
    } else if (!R.root) {
        struct leaf *l = take_leaf();
        leaf_insert(l, base, &v, NULL);
        R.root = l;
        R.height = 0;
    } else {
        struct split sp;
        rc = R.height == 0 ? leaf_insert(R.root, base, &v, &sp) : inner_insert(R.root, R.height, base, &v, &sp);
        if (rc == 1) {
            struct inner *nr = take_inner();
            nr->n = 2;
            nr->child[0] = R.root;
            nr->child[1] = sp.node;
            nr->key[0] = sp.key;
            R.root = nr;
            R.height++;
            rc = 0;
        }
    }
    if (rc == 0) R.count++;
    dsp_br_write_unlock(&R.lock);
    return rc;
}

/* --- remove ---------------------------------------------------------------- */

static int leaf_remove(struct leaf *l, uintptr_t k, struct dsp_range *out) {
    int i = upper_bound(l->key, l->n, k) - 1;
    if (i < 0 || l->key[i] != k) return -ENOENT;
    if (out) fill(out, l, i);
    memmove(l->key + i, l->key + i + 1, (size_t)(l->n - i - 1) * sizeof l->key[0]);
    memmove(l->val + i, l->val + i + 1, (size_t)(l->n - i - 1) * sizeof l->val[0]);
    l->n--;
    return l->n == 0; /* 1: now empty */
}

static void drop_leaf(struct leaf *l) {
    if (l->prev) l->prev->next = l->next;
    if (l->next) l->next->prev = l->prev;
    dsp_slab_free(&R.leaves, l);
}

static int inner_remove(struct inner *in, int h, uintptr_t k, struct dsp_range *out) {
    int i = upper_bound(in->key, in->n - 1, k);
    int rc = h == 1 ? leaf_remove(in->child[i], k, out) : inner_remove(in->child[i], h - 1, k, out);
    if (rc <= 0) return rc;
    if (h == 1)
        drop_leaf(in->child[i]);
    else
        dsp_slab_free(&R.inners, in->child[i]);
    /* drop child i and one separator next to it */
    int ki = i > 0 ? i - 1 : 0;
    memmove(in->child + i, in->child + i + 1, (size_t)(in->n - i - 1) * sizeof in->child[0]);
    if (in->n > 1) memmove(in->key + ki, in->key + ki + 1, (size_t)(in->n - 2 - ki) * sizeof in->key[0]);
    in->n--;
    return in->n == 0;
}

int dsp_reg_remove(uintptr_t base, struct dsp_range *out) {
    int rc = -ENOENT;
    dsp_br_write_lock(&R.lock);
    if (R.root) {
        rc = R.height == 0 ? leaf_remove(R.root, base, out) : inner_remove(R.root, R.height, base, out);
        if (rc >= 0) {
            R.count--;
            if (rc == 1) { /* the root itself emptied */
                if (R.height == 0)
                    drop_leaf(R.root);
                else
                    dsp_slab_free(&R.inners, R.root);
                R.root = NULL;
                R.height = 0;
            }
            while (R.height > 0 && ((struct inner *)R.root)->n == 1) {
                struct inner *old = R.root;
                R.root = old->child[0];
                R.height--;
                dsp_slab_free(&R.inners, old);
            }
            rc = 0;
        }
    }
    dsp_br_write_unlock(&R.lock);
    return rc;
}

/* --- fork ------------------------------------------------------------------ */

void dsp_reg_fork_prepare(void) { dsp_br_write_lock(&R.lock); }
void dsp_reg_fork_parent(void) { dsp_br_write_unlock(&R.lock); }

void dsp_reg_fork_child(void) {
    /* Only the forking thread exists now: the reader slots of the parent's other
     * threads must not block writers here. */
    for (int i = 0; i < DSP_BR_SLOTS; i++) atomic_store_explicit(&R.lock.slot[i].readers, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&R.gen, 1, memory_order_relaxed);
    atomic_store_explicit(&R.lock.writer, 0, memory_order_relaxed);
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    R.lock.wmutex = fresh;
}
