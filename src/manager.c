/* The manager: the process's one instance (dsp_mgr), the top of the core.
 * Every file below it (pool, budget, node, pin, shm, arena) is handed the
 * manager as an argument and calls only downwards (docs/design.md, "Where is
 * what"); the layers above (preload/, io/, span_kind.c, memcalls.c,
 * memlock.c) reach it through the API here.
 * - Blocks: the public API (dsp_alloc, dsp_free, dsp_is_pinned, ...) and the
 *   layers' API (block.h) over the arena, pool, budget and registry.
 * - Initialisation, on the first call from any layer as well as from the
 *   library constructor: a linked library's constructor can reach us first
 *   (docs/internals.md, "Start-up order and thread-locals").
 * - The fork handlers of the manager and the registry. */
#include "block.h"
#include "cgroup.h"
#include "config.h"
#include "fmt.h"
#include "fork.h"
#include "log.h"
#include "budget.h"
#include "manager.h"
#include "pool.h"
#include "maps.h"
#include "shm.h"
#include "pin.h"
#include "arena.h"
#include "node.h"
#include "numa.h"
#include "plan.h"
#include "registry.h"
#include "span_kind.h"
#include "stats.h"
#include "sys.h"

#include <errno.h>
#include <sched.h>
#include <unistd.h>

/* The hooks of span kind i (1 to DSP_SPAN_KINDS, span_kind.h), NULL while
 * no layer added it. Kinds take the slots in order: none was added while
 * the first is empty. */
static const struct dsp_span_kind *kind_ops(int i) {
    return __atomic_load_n(&dsp_mgr.kinds[i - 1].ops, __ATOMIC_ACQUIRE);
}

static void count_live(size_t len, int sign) {
    if (sign > 0) {
        dsp_stat_add(DSP_ST_live_bytes, len);
        dsp_stat_add(DSP_ST_blocks_live, 1);
    } else {
        dsp_stat_sub(DSP_ST_live_bytes, len);
        dsp_stat_sub(DSP_ST_blocks_live, 1);
    }
    dsp_stat_set(DSP_ST_registry_ranges, dsp_reg_count());
}

/* A freed span: registered ones go to their kind's pool (its layer trims
 * it, being the only one allowed to call the party that registered it,
 * span_kind.h); unlocked ones
 * (inherited across fork, or a kind's blocks that were never registered) go
 * straight back; the rest are pooled, the general pool trimmed so that both
 * together stay under DSP_POOL_MAX. A span whose mapping the program
 * changed is given back, or, registered, restored. */
static void retire(struct dsp_span *s) {
    struct dsp_manager *m = &dsp_mgr;
    if (s->taint && !s->reg) { /* the program changed its mapping (memcalls.c) */
        dsp_span_release(m, s);
        return;
    }
    if (s->taint) dsp_mem_restore(s);
    if (s->reg) {
        dsp_pool_put(m, s);
        return;
    }
    /* Unlocked, or served but unregistered (only served allocations may
     * reuse served memory, and they take it from the registered pool). */
    if (!s->locked || s->served) {
        dsp_span_release(m, s);
        return;
    }
    dsp_pool_put(m, s);
    size_t other = dsp_pool_registered_bytes(m) + m->kept, max = dsp_pool_limit(m);
    dsp_pool_release_until(m, max > other ? max - other : 0);
}

/* Small blocks: one new pin per block (mmap, madvise, mlock2, populate: four
 * system calls and a fault) costs as much as posix_memalign+mlock, so 4 KiB
 * blocks were no faster than the baseline. A block of at most CHUNK_FOR is
 * cut from a new CHUNK_LEN chunk instead, whose rest serves the next small
 * blocks from the pool (docs/memory.md, "Small blocks come from chunks").
 * Only while the pool has room for the rest (DSP_POOL_MAX still bounds what
 * is pinned and unused), and only where mlock is not limited (init_once). */
#define CHUNK_LEN (2 * DSP_MiB)
#define CHUNK_FOR (256 * DSP_KiB)

static size_t chunk_for(size_t len, unsigned how) {
    struct dsp_manager *m = &dsp_mgr;
    if (!m->chunks || DSP_BLK_SERVED_KIND(how) || len > CHUNK_FOR ||
        dsp_pool_idle_bytes(m) + (CHUNK_LEN - len) > dsp_pool_limit(m))
        return len;
    return CHUNK_LEN;
}

static void *fail(int err) {
    errno = err;
    return NULL;
}

static void fill(struct dsp_block *out, const struct dsp_span *s) {
    if (!out) return;
    out->base = s->base;
    out->len = s->block;
    out->span_len = s->len;
    out->flags = s->reg ? DSP_BLOCKF_REG | s->user : s->user;
    out->inherited = 0;
    out->fresh = 0;
    out->unsynced = s->unsynced;
}

/* Under mu: publishes a span as a live block of len bytes: 0, or the
 * registry's -errno (logged). */
static int go_live(struct dsp_span *s, size_t len) {
    s->block = len;
    unsigned flags = s->reg ? DSP_BLOCKF_REG | s->user : s->user;
    int rc = dsp_reg_insert(s->base, len, DSP_RANGE_BLOCK, flags, s);
    if (rc != 0) {
        dsp_once(DSP_LOG_WARN, "out of memory for the registry; the caller falls back");
        dsp_stat_add(DSP_ST_pin_failures, 1);
        return rc;
    }
    count_live(len, 1);
    return 0;
}

/* Why dsp_block_alloc has no block, for what it does once mu is dropped. */
enum refusal {
    POOL_MISS,      /* the pool had no span: a new one is pinned */
    REFUSED,        /* said and counted where refused, if at all */
    PIN_FAILED,     /* this one and those below: a pin failure, counted unlocked */
    PIN_NO_RESERVE, /* no address space could be reserved for the arena */
    PIN_NO_ROOM,    /* the arena is full */
};

/* Under mu: a pooled span made the live block; NULL on a miss (POOL_MISS) or when
 * the registry has no room for it (REFUSED: counted, the span retired). */
static struct dsp_span *from_pool(size_t len, unsigned how, int node, struct dsp_block *out,
                                  enum refusal *why) {
    struct dsp_manager *m = &dsp_mgr;
    unsigned user = (how >> 16) & DSP_BLOCKF_USER;
    /* Served memory only from its kind's pool of served (registered)
     * spans, the rest only from the general one; from node's partition
     * only. */
    int served = DSP_BLK_SERVED_KIND(how);
    struct dsp_span *s = served ? dsp_pool_get_registered(m, served, len, node < 0 ? 0 : node)
                                : dsp_pool_get(m, len, node < 0 ? 0 : node);
    if (!s) {
        dsp_stat_add(DSP_ST_pool_misses, 1);
        *why = POOL_MISS;
        return NULL;
    }
    s->user = user; /* a pooled span's bits were its last owner's */
    if (go_live(s, len) != 0) {
        retire(s);
        *why = REFUSED;
        return NULL;
    }
    dsp_stat_add(DSP_ST_pool_hits, 1);
    fill(out, s);
    s->unsynced = 0; /* the new owner was told (out->unsynced) and waits */
    return s;
}

/* The budget's reservation, room made from the pool first. */
static int reserve(struct dsp_manager *m, size_t len, int lock, int refuse) {
    dsp_pool_make_room(m, len, lock);
    return dsp_budget_reserve(m, len, lock, refuse);
}

/* Under mu: the bytes a new block of len needs pinned (a whole chunk when a
 * small block can be cut from one), reserved in the budget; 0 when refused.
 * Locked if the budget allows (*lock); a DSP_BLK_LOCK_OPTIONAL block may go
 * unlocked instead, since its layer's registration pins it whatever
 * RLIMIT_MEMLOCK says. */
static size_t reserve_new(struct dsp_manager *m, size_t len, unsigned how, int *lock) {
    int optional = (how & DSP_BLK_LOCK_OPTIONAL) != 0;
    int refuse = (how & DSP_BLK_RETRY)   ? DSP_REFUSE_SILENT
                 : (how & DSP_BLK_QUIET) ? DSP_REFUSE_COUNT
                                         : DSP_REFUSE_LOG;
    size_t pin = chunk_for(len, how);
    *lock = 1;
    if (pin > len && reserve(m, pin, 1, DSP_REFUSE_SILENT) == 0) return pin;
    if (reserve(m, len, 1, optional ? DSP_REFUSE_SILENT : refuse) == 0) return len;
    *lock = 0;
    return optional && reserve(m, len, 0, refuse) == 0 ? len : 0;
}

/* Under mu again, once dsp_pin_populate_lock answered rc for the pin bytes
 * of s: records what it did, and gives a chunk's rest to the pool. 0, or
 * -1 with *why when the pin failed (s is then vacated, or kept out of use). */
static int settle_new(struct dsp_manager *m, struct dsp_span *s, size_t len, size_t pin, int lock,
                      int rc, enum refusal *why) {
    if (rc >= 0) {
        s->locked = (rc & DSP_PIN_LOCKED) != 0;
        s->huge = (rc & DSP_PIN_HUGE) != 0;
        s->shared = rc & DSP_PIN_SHARED ? DSP_SHARED_OURS : 0;
        if (lock && !s->locked) { /* mlock refused, and that was allowed */
            dsp_budget_unlock(m, pin);
            lock = 0;
        }
    }
    *why = PIN_FAILED;
    if (DSP_PIN_IS_STUCK(rc)) {
        /* Its pages could not be given back (logged): they stay counted
         * where they were reserved, and the span LIVE in no index and not in
         * the registry, so it is never reused (as a registration its kind
         * could not undo, span_kind.h). */
        s->counted = 1;
        s->locked = lock != 0;
        dsp_stat_add(DSP_ST_pin_stuck_bytes, pin);
        return -1;
    }
    if (rc < 0) {
        dsp_budget_release(m, pin, lock);
        dsp_arena_vacate(m, s);
        return -1;
    }
    s->counted = 1;
    if (DSP_PIN_NODE(rc) >= 0) s->node = (uint8_t)DSP_PIN_NODE(rc); /* where it landed */
    dsp_numa_count_pinned(s->node, pin, 1);
    dsp_stat_add(DSP_ST_pinned_new_bytes, pin);
    if (pin > len) {
        /* The chunk's rest, counted and locked like the block: pooled, or
         * given back at once if the lock was refused (an unlocked span is
         * never pooled). Without metadata for the split the block keeps the
         * whole chunk. */
        struct dsp_span *rest = dsp_span_split(m, s, len);
        if (rest && rest->locked)
            dsp_pool_put(m, rest);
        else if (rest)
            dsp_span_release(m, rest);
    }
    return 0;
}

/* The kernel reports a free huge page to the host about 2 s after it was
 * freed (PAGE_REPORTING_DELAY): huge pages given back more lately are still
 * the guest's. */
#define HUGE_WARM_NS 2000000000ull

/* Under mu: a new block's pages, for dsp_pin_populate_lock: 1 huge (2 MiB
 * alignment, MADV_HUGEPAGE), 0 the kernel's default, -1 small pages
 * (MADV_NOHUGEPAGE). By the block's size: a chunk of small blocks is small
 * pages, like them (a huge-page chunk populates several times slower:
 * docs/memory.md, "Small blocks come from chunks"; issue 12). Under auto, on
 * a VM whose host takes free pages back (issue 29), the guest's free huge
 * pages are the host's until touched, 4-8x slower to populate than small
 * pages: small pages, unless this process gave huge pages back in the last
 * HUGE_WARM_NS. A block of huge pages that still populate slower than small
 * ones would turns to small pages while it is populated (pin.c,
 * populate_part). */
static int page_kind(struct dsp_manager *m, size_t len) {
    if (m->huge_mode == DSP_HUGEPAGES_ALWAYS) return 1;
    if (m->huge_mode == DSP_HUGEPAGES_NEVER) return -1;
    if (len < DSP_HUGE_PAGE) return 0;
    if (dsp_host_takes_free_pages()) {
        uint64_t back = atomic_load_explicit(&m->huge_back_ns, memory_order_relaxed);
        if (!back || dsp_sys_mono_ns() - back > HUGE_WARM_NS) return -1;
    }
    return 1;
}

/* Under mu, which it drops while the pages are populated and locked: a newly
 * pinned span made the live block; NULL with why when refused. */
static struct dsp_span *pin_new(size_t len, unsigned how, int node, struct dsp_block *out,
                                enum refusal *why) {
    struct dsp_manager *m = &dsp_mgr;
    if (dsp_arena_ready(m) != 0) {
        *why = PIN_NO_RESERVE;
        return NULL;
    }
    /* A block the memory cgroup cannot hold is refused, never populated into
     * an OOM kill (logged; its margin of 16 MiB or more covers a chunk's rest). */
    if (dsp_cgroup_refuses(len) || dsp_maps_take(2, 0) != 0) { /* logged */
        *why = PIN_FAILED;
        return NULL;
    }
    int lock;
    size_t pin = reserve_new(m, len, how, &lock);
    if (!pin) {
        *why = REFUSED;
        return NULL;
    }
    int pages = page_kind(m, len);
    struct dsp_span *s = dsp_arena_take(m, pin, pages > 0 ? DSP_HUGE_PAGE : DSP_PAGE);
    if (!s) {
        dsp_budget_release(m, pin, lock);
        *why = PIN_NO_ROOM;
        return NULL;
    }
    s->served = DSP_BLK_SERVED_KIND(how);
    s->shared = s->served && dsp_shm_ready(m) ? DSP_SHARED_OURS : 0;
    s->node = (uint8_t)(node < 0 ? 0 : node); /* -1: first touch, pooled with node 0's */
    int bind = node;                          /* -1 also when placement is off */
    dsp_mgr_unlock();
    /* The slow part runs unlocked: the span is LIVE, so no one else touches it. */
    int rc = dsp_pin_populate_lock(m, s, lock, (how & DSP_BLK_LOCK_OPTIONAL) != 0, pages, bind);
    dsp_mgr_lock();
    if (settle_new(m, s, len, pin, lock, rc, why) != 0) return NULL;
    s->user = (how >> 16) & DSP_BLOCKF_USER;
    if (go_live(s, len) != 0) {
        retire(s);
        *why = REFUSED;
        return NULL;
    }
    fill(out, s);
    if (out) out->fresh = 1;
    return s;
}

void *dsp_block_alloc(size_t size, unsigned how, struct dsp_block *out) {
    if (!size) return fail(EINVAL);
    if (size > DSP_USER_VA_END || !dsp_ensure_init()) return fail(ENOMEM);
    struct dsp_manager *m = &dsp_mgr;
    size_t len = dsp_align_up(size, DSP_PAGE);
    enum refusal why = POOL_MISS;
    /* The node the block is for, decided outside the lock (the CUDA
     * layer's device query may call into the runtime): planned first, since
     * the topology is read with the plan. Placement off, or one node: 0. */
    if (DSP_UNLIKELY(!atomic_load_explicit(&m->planned, memory_order_acquire))) dsp_plan();
    int node = DSP_UNLIKELY(__atomic_load_n(&dsp_numa_active, __ATOMIC_RELAXED))
                   ? dsp_numa_pick(DSP_BLK_SERVED_KIND(how) != 0)
                   : -1;

    dsp_mgr_lock();
    struct dsp_span *s = from_pool(len, how, node, out, &why);
    if (!s && why == POOL_MISS) s = pin_new(len, how, node, out, &why);
    dsp_node_poll(&m->cached_bytes); /* a process without the ledger's timer answers here */
    dsp_mgr_unlock();
    if (DSP_UNLIKELY(dsp_node_wait_len)) {
        /* The node cap refused, and other processes were asked for their
         * idle pools: wait for them without the lock, then once more. */
        if (s) {
            dsp_node_wait_len = 0; /* served after all (unlocked): nothing to wait for */
        } else {
            dsp_node_wait();
            why = POOL_MISS;
            dsp_mgr_lock();
            s = from_pool(len, how, node, out, &why);
            if (!s && why == POOL_MISS) s = pin_new(len, how, node, out, &why);
            dsp_mgr_unlock();
            dsp_node_retry_done();
        }
    }
    if (DSP_UNLIKELY(atomic_load_explicit(&dsp_node_timer_wanted, memory_order_relaxed)))
        dsp_node_start_timer(); /* this process's first slot: outside the lock */

    if (s) return (void *)s->base;
    if (why == PIN_NO_RESERVE)
        dsp_once(DSP_LOG_WARN, "cannot reserve address space for pinned blocks (ulimit -v?); lower "
                               "DSP_ARENA_SIZE");
    /* under RLIMIT_AS the arena logged why it could not grow */
    if (why == PIN_NO_ROOM && !dsp_mgr.as_limited)
        dsp_once(DSP_LOG_WARN, "no address space left for pinned blocks (DSP_ARENA_SIZE); raise "
                               "DSP_ARENA_SIZE");
    if (why >= PIN_FAILED) dsp_stat_add(DSP_ST_pin_failures, 1);
    return fail(ENOMEM);
}

static int to_block(const struct dsp_range *r, struct dsp_block *out) {
    if (r->kind != DSP_RANGE_BLOCK) return 0;
    out->base = r->base;
    out->len = r->end - r->base;
    out->span_len = out->len; /* only registered blocks ever sit on a larger span */
    out->flags = r->flags;
    out->inherited = r->gen != dsp_reg_generation();
    out->fresh = 0;
    return 1;
}

int dsp_block_find(const void *p, struct dsp_block *out) {
    return dsp_block_holding(p, out) && !out->inherited;
}

int dsp_block_holding(const void *p, struct dsp_block *out) {
    struct dsp_range r;
    return dsp_in_arena(p) && dsp_reg_find((uintptr_t)p, &r) && to_block(&r, out);
}

int dsp_block_at(uintptr_t base, struct dsp_block *out) {
    return dsp_block_holding((const void *)base, out) && out->base == base;
}

int dsp_block_set_registered(uintptr_t base, int kind, unsigned user) {
    if (kind < 1 || kind > DSP_SPAN_KINDS) return -EINVAL;
    struct dsp_range r;
    dsp_mgr_lock();
    int rc = -EINVAL;
    if (dsp_reg_find(base, &r) && r.base == base && r.kind == DSP_RANGE_BLOCK) {
        struct dsp_span *s = r.owner;
        s->reg = (uint8_t)kind;
        s->user = user & DSP_BLOCKF_USER;
        rc = dsp_reg_set_flags(base, DSP_BLOCKF_REG | s->user);
    }
    dsp_mgr_unlock();
    return rc;
}

/* mask, want: the block's flags must match (r.flags & mask) == want, checked
 * under the lock with the free; out: the block freed. */
static int block_free(uintptr_t base, int discard, int synced, unsigned mask, unsigned want,
                      struct dsp_block *out) {
    if (!base || !dsp_in_arena((void *)base)) return -EINVAL;
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_range r;
    dsp_mgr_lock();
    if (!dsp_reg_find(base, &r) || r.base != base || r.kind != DSP_RANGE_BLOCK ||
        (r.flags & mask) != want) {
        dsp_mgr_unlock();
        return -EINVAL;
    }
    if (out) to_block(&r, out);
    dsp_reg_remove(r.base, NULL);
    count_live(r.end - r.base, -1);
    struct dsp_span *s = r.owner;
    int reg = s->reg;
    s->unsynced = reg && !synced;
    if (discard && !reg)
        dsp_span_release(m, s);
    else
        retire(s);
    dsp_node_poll(&m->cached_bytes); /* the pooled figure others read before they ask */
    int over = dsp_pool_idle_bytes(m) > dsp_pool_limit(m); /* read here, under the lock we hold */
    dsp_mgr_unlock();
    const struct dsp_span_kind *k = reg ? kind_ops(reg) : NULL;
    if (k) k->freed(base, (size_t)(r.end - r.base));
    return over;
}

int dsp_block_free(uintptr_t base) {
    return block_free(base, 0, 0, 0, 0, NULL);
}

int dsp_block_free_synced(uintptr_t base) {
    return block_free(base, 0, 1, 0, 0, NULL);
}

int dsp_block_free_if(uintptr_t base, unsigned mask, unsigned want, struct dsp_block *out) {
    return block_free(base, 0, 0, mask, want, out);
}

int dsp_block_discard(uintptr_t base) {
    return block_free(base, 1, 0, 0, 0, NULL);
}

void *dsp_block_alloc_room(size_t size, unsigned how, struct dsp_block *out) {
    if (DSP_UNLIKELY(dsp_reentered())) return fail(ENOMEM);   /* a signal handler inside our lock */
    if (!kind_ops(1)) return dsp_block_alloc(size, how, out); /* no kind (span_kind.c) */
    /* Over budget, blocks a span kind pools can make room (a block once
     * registered on demand and freed sits in its pool). Only a budget
     * refusal (ENOMEM) empties that pool, not any failure. */
    void *p = dsp_block_alloc(size, how | DSP_BLK_RETRY, out);
    if (!p && errno == ENOMEM && size <= DSP_USER_VA_END) {
        for (int i = 1; i <= DSP_SPAN_KINDS; i++) {
            const struct dsp_span_kind *k = kind_ops(i);
            if (k && k->make_room(dsp_align_up(size, DSP_PAGE))) break;
        }
        p = dsp_block_alloc(size, how, out);
    }
    return p;
}

DSP_API void *dsp_alloc(size_t size) {
    return dsp_block_alloc_room(size, 0, NULL);
}

DSP_API int dsp_free(void *ptr) {
    /* A signal handler that interrupted this thread inside our lock: freed at
     * the next unlock (unchecked now; the base of a block is page-aligned). */
    if (DSP_UNLIKELY(dsp_reentered())) {
        if (!dsp_in_arena(ptr) || ((uintptr_t)ptr & (DSP_PAGE - 1))) return errno = EINVAL, -1;
        return dsp_defer_free(ptr, DSP_DEFER_BLOCK) == 0 ? 0 : (errno = EAGAIN, -1);
    }
    int rc = dsp_block_free((uintptr_t)ptr);
    if (rc < 0) return errno = -rc, -1;
    for (int i = 1; rc && i <= DSP_SPAN_KINDS; i++) {
        const struct dsp_span_kind *k = kind_ops(i);
        if (k) k->over_limit();
    }
    return 0;
}

DSP_API int dsp_is_pinned(const void *ptr, size_t len) {
    return dsp_reg_contains((uintptr_t)ptr, len);
}

static size_t (*_Atomic trimmers[4])(void);

void dsp_add_trimmer(size_t (*fn)(void)) {
    for (size_t i = 0; i < sizeof trimmers / sizeof *trimmers; i++) {
        size_t (*none)(void) = NULL;
        if (atomic_compare_exchange_strong(&trimmers[i], &none, fn) || none == fn) return;
    }
}

int dsp_block_keep(size_t len) {
    dsp_mgr_lock();
    int ok = dsp_pool_may_keep(&dsp_mgr, len);
    dsp_mgr_unlock();
    return ok;
}

void dsp_block_unkeep(size_t len) {
    dsp_mgr_lock();
    dsp_mgr.kept -= len;
    dsp_mgr_unlock();
}

size_t dsp_trim_unregistered(void) {
    struct dsp_manager *m = &dsp_mgr;
    /* Layers' caches first: what they give back lands in the pool below. */
    for (size_t i = 0; i < sizeof trimmers / sizeof *trimmers; i++) {
        size_t (*fn)(void) = atomic_load(&trimmers[i]);
        if (fn) fn();
    }
    dsp_mgr_lock();
    dsp_maps_recount();
    size_t n = dsp_pool_release_until(m, 0);
    dsp_mgr_unlock();
    return n;
}

DSP_API size_t dsp_trim(void) {
    if (!dsp_ensure_init()) return 0;
    size_t n = dsp_trim_unregistered();
    for (int i = 1; i <= DSP_SPAN_KINDS; i++) {
        const struct dsp_span_kind *k = kind_ops(i);
        if (k) n += k->trim();
    }
    return n;
}

DSP_API int dsp_stats_json(char *buf, size_t cap) {
    dsp_plan(); /* budget_bytes and pool_max_bytes, before the first pin too */
    return dsp_stats_format_json(buf, cap);
}

DSP_API const char *dsp_version(void) {
    return DSP_VERSION_STRING;
}

/* --- initialisation and fork ---------------------------------------------- */

extern char **environ;

/* Zero-initialised, so in .bss: with its pools partitioned by NUMA node it is
 * over 100 KiB, which an initialiser would put in the library's file and
 * .data (the span slab's object size is set in init_once). */
DSP_LARGE_BSS struct dsp_manager dsp_mgr;

DSP_STARTUP_DATA _Atomic int dsp_init_state;      /* 0 new, 1 running, 2 ready */
static DSP_STARTUP_DATA _Atomic pid_t init_owner; /* the process whose thread runs init_once */
static DSP_TLS int initialising;

/* The child inherits the blocks but not their locks (mlock is not inherited):
 * nothing it holds is pinned any more. Live blocks stay usable and freeable;
 * the pool is given back, since handing its unlocked pages out as pinned would
 * be a lie. The registry's child handler has run (fork.h: it is below). */
static void fork_child(void) {
    struct dsp_manager *m = &dsp_mgr;
    dsp_defer_fork_child();
    uint64_t budget = dsp_stat_get(DSP_ST_budget_bytes),
             pool_max = dsp_stat_get(DSP_ST_pool_max_bytes),
             numa_nodes = dsp_stat_get(DSP_ST_numa_nodes);
    dsp_stats_reset();
    dsp_stat_set(DSP_ST_budget_bytes, budget);
    dsp_stat_set(DSP_ST_pool_max_bytes, pool_max);
    dsp_stat_set(DSP_ST_numa_nodes, numa_nodes);
    /* Nothing is locked or registered here: the child must never call a
     * kind's party for inherited memory, so registered spans are dropped, not
     * unregistered. */
    m->pinned = m->locked = 0;
    m->kept = 0; /* the layers' kept blocks are stale here: dropped uncounted (bounce.c) */
    dsp_node_fork_child();            /* the parent's slot is not ours: joined at our first pin */
    dsp_numa_fork_child();            /* nothing is pinned or pooled here */
    atomic_store(&m->lock_future, 0); /* mlockall's MCL_FUTURE is not inherited */
    dsp_shm_fork_child(m);            /* served memory stays shared with the parent */
    size_t live = 0, blocks = 0;
    for (struct dsp_span *s = m->first, *next; s; s = next) {
        next = s->anext;
        struct dsp_bins *bins = dsp_pool_bins(m, s);
        s->locked = s->counted = s->reg = s->unsynced = 0; /* no device here */
        if (s->state == DSP_SPAN_VACANT) continue;
        if (s->state == DSP_SPAN_CACHED) {
            dsp_bins_remove(bins, s);
        } else if (s->state == DSP_SPAN_LIVE) {
            struct dsp_range r;
            if (dsp_reg_find(s->base, &r) && r.owner == s) {
                live += s->block, blocks++;
                continue;
            }
            /* Another parent thread was populating or evicting it: nobody here
             * owns it. */
        }
        dsp_pin_drop(m, s);
        next = dsp_arena_vacate(m, s)->anext; /* it may have merged with next */
    }
    m->pooled_bytes = m->cached_bytes = 0; /* every pooled span was given back above */
    for (int i = 0; i < DSP_SPAN_KINDS; i++) m->kinds[i].bytes = 0;
    dsp_stat_set(DSP_ST_live_bytes, live);
    dsp_stat_set(DSP_ST_blocks_live, blocks);
    dsp_stat_set(DSP_ST_registry_ranges, dsp_reg_count());
}

/* What the node ledger and the deferred-free area call back: they sit below
 * the manager and never name its functions. */
static void deferred_block_free(void *p) {
    dsp_block_free((uintptr_t)p); /* not dsp_free: no party call from a drain */
}
static size_t release_pool(struct dsp_manager *m) {
    return dsp_pool_release_until(m, 0);
}
/* A yield request, from the node's timer thread: what dsp_trim gives back,
 * the kinds' registered pools only as far as their yield hooks may
 * (span_kind.h). */
static size_t node_trim(void) {
    size_t n = dsp_trim_unregistered();
    for (int i = 1; i <= DSP_SPAN_KINDS; i++) {
        const struct dsp_span_kind *k = kind_ops(i);
        if (k && k->yield) n += k->yield();
    }
    return n;
}
/* The pooled figure others ask for: a kind's registered pool only where
 * its yield can give it back (span_kind.h, can_yield: the others stay,
 * since offering them would make every refusal elsewhere wait DSP_NODE_WAIT
 * for nothing). */
static size_t yieldable(struct dsp_manager *m) {
    size_t n = dsp_cached_bytes(m) + m->kept;
    for (int i = 1; i <= DSP_SPAN_KINDS; i++) {
        const struct dsp_span_kind *k = kind_ops(i);
        if (k && k->can_yield && k->can_yield()) n += dsp_pool_kind_bytes(m, i);
    }
    return n;
}
static const struct dsp_node_ops node_ops = {release_pool, node_trim, yieldable};

/* What every process needs, and nothing that reads a file or asks the
 * kernel: the options (their errors reported now, secure execution applied),
 * the log level and the fork handlers. The machine (RAM, the memory cgroup,
 * RLIMIT_MEMLOCK, CAP_IPC_LOCK) and what follows from it wait for the first
 * pin (plan): most processes of a job never pin, and reading them made the
 * constructor a visible cost of /bin/true (issue 29; docs/design.md,
 * "Initialisation"). */
DSP_STARTUP_TEXT static void init_once(void) {
    dsp_config_load(environ, 0); /* shares (50%) are taken at the first pin */
    __atomic_store_n(&dsp_log_level, (int)dsp_opt(DSP_OPT_LOG), __ATOMIC_RELAXED);
    struct dsp_manager *m = &dsp_mgr;
    m->spans = (struct dsp_slab)DSP_SLAB_INIT(sizeof(struct dsp_span));
    m->huge_mode = (int)dsp_opt(DSP_OPT_HUGEPAGES);
    m->prefault_threads = (int)dsp_opt(DSP_OPT_PREFAULT_THREADS);
    if (dsp_numa_configure(dsp_opt_str(DSP_OPT_NUMA)) != 0)
        dsp_warn("DSP_NUMA=%s is none of auto, device, cpu, off or a node number; using auto",
                 dsp_opt_str(DSP_OPT_NUMA));
    /* A size given is checked now, with the other options' errors; auto is
     * of RAM, read at the first pin. */
    size_t arena = (size_t)dsp_opt(DSP_OPT_ARENA_SIZE);
    if (arena != DSP_SIZE_AUTO && arena < DSP_GiB) {
        dsp_warn("DSP_ARENA_SIZE below 1 GiB leaves no room for pinned blocks; using 1 GiB");
        arena = DSP_GiB;
    }
    m->arena_size = dsp_align_up(arena, DSP_GiB);
    dsp_node_configure(m, &node_ops);
    dsp_defer_set_handler(DSP_DEFER_BLOCK, deferred_block_free);
    dsp_fork_install(); /* before the first registration (fork.h) */
    dsp_fork_register(DSP_FORK_MANAGER, fork_child);
    dsp_fork_register(DSP_FORK_REGISTRY, dsp_reg_fork_child);
    dsp_info("dspreload %s ready; the budget is planned at the first pin", DSP_VERSION_STRING);
}

/* The machine read once, and what follows from it: the shares of the
 * options, the arena's auto size, whether small blocks may be cut from chunks,
 * the budget; the node ledger and the memory cgroup's checks reuse the same
 * reading (node.c, cgroup.c). */
static void plan(struct dsp_manager *m) {
    dsp_machine_read(&m->machine);
    dsp_cgroup_seed(&m->machine.cg);
    dsp_config_set_memory(m->machine.mem); /* shares (50%) of the memory cgroup's room */
    /* Under a finite RLIMIT_MEMLOCK the quota is the program's as much as
     * ours: no chunk locks more than the block asked for. */
    m->chunks = m->machine.ipc_lock || m->machine.memlock == (size_t)-1;
    if ((size_t)dsp_opt(DSP_OPT_ARENA_SIZE) == DSP_SIZE_AUTO) {
        size_t arena = m->machine.ram * 4;
        if (arena < 64 * DSP_GiB) arena = 64 * DSP_GiB;
        if (arena > ((size_t)64 << 40)) arena = (size_t)64 << 40;
        m->arena_size = dsp_align_up(arena, DSP_GiB);
    }
    dsp_budget_configure(m);
    dsp_numa_plan(dsp_numa_sysfs()); /* one file with DSP_NUMA=off or one node */
    atomic_store_explicit(&m->planned, 1, memory_order_release);
}

void dsp_plan_locked(void) {
    struct dsp_manager *m = &dsp_mgr;
    if (DSP_UNLIKELY(!atomic_load_explicit(&m->planned, memory_order_relaxed))) plan(m);
}

int dsp_arena_ready(struct dsp_manager *m) {
    if (DSP_LIKELY(atomic_load_explicit(&m->lo, memory_order_relaxed))) return 0;
    dsp_plan_locked(); /* the arena's size, and the budget a first pin needs */
    return dsp_arena_reserve(m);
}

void dsp_plan(void) {
    if (atomic_load_explicit(&dsp_mgr.planned, memory_order_acquire) || !dsp_ensure_init()) return;
    dsp_mgr_lock();
    dsp_plan_locked();
    dsp_mgr_unlock();
}

/* The claim records the initialising process, not just a flag: a fork while
 * another thread is inside init_once leaves the child with "running" and no
 * thread to finish it (the fork handlers are not registered yet), so a child
 * that finds the claim held by another process takes it over. Regression:
 * fork.no_deadlock_when_forking_under_load hung on its first fork. */
DSP_STARTUP_TEXT int dsp_init_slow(void) {
    if (initialising) return 0; /* re-entered from inside init_once */
    pid_t me = dsp_sys_pid();
    for (;;) {
        pid_t owner = atomic_load(&init_owner);
        if (owner != me && atomic_compare_exchange_strong(&init_owner, &owner, me)) {
            atomic_store(&dsp_init_state, 1);
            initialising = 1;
            init_once();
            initialising = 0;
            atomic_store_explicit(&dsp_init_state, 2, memory_order_release);
            return 1;
        }
        while (atomic_load_explicit(&dsp_init_state, memory_order_acquire) != 2) {
            if (atomic_load(&init_owner) != me) break; /* the owner is not in this process */
            sched_yield();
        }
        if (atomic_load_explicit(&dsp_init_state, memory_order_acquire) == 2) return 1;
    }
}
