/* The CUDA layers' shared core (cuda_core.h): blocks served, registered,
 * pooled, waited for and given back with the same rules whichever API the
 * program called, so a block allocated through one API and freed through the
 * other behaves as it does with the driver, where the runtime's memory is the
 * driver's. docs/cuda.md explains each decision. */
#include "cuda_core.h"

#include "arena.h"
#include "block.h"
#include "block_bits.h"
#include "config.h"
#include "cuda_vreg.h"
#include "fork.h"
#include "log.h"
#include "manager.h"
#include "numa.h"
#include "reentry.h"
#include "registry.h"
#include "span_kind.h"
#include "stats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

DSP_TLS int dsp_cuda_out;

/* Our own user bit: the block was served by a pinned allocation of either API
 * (as opposed to dsp_alloc or malloc hints), so a free or a flags question of
 * either API applies to it. The low bits keep the flags the caller asked for
 * (the two APIs' flag values are the same). */
#define SERVED DSP_BLOCKF_CUDA_SERVED
#define ASKED  DSP_BLOCKF_CUDA_ASKED
/* Registered with every capability a later owner of the pooled block may ask
 * for; a flags question still answers what each owner asked. */
#define REGISTER_FLAGS (DSP_CU_PORTABLE | DSP_CU_MAPPED)

/* The layers that started, by slot (cuda_core.h): to pick one for the
 * manager's hooks, the runtime first (its calls make the primary context
 * current on any thread, the driver's need one current), and to stop them
 * all in a forked child. */
static const struct dsp_cuda_api *_Atomic apis[2];
/* Set in a forked child of a process whose CUDA layers started. */
static _Atomic int forked;

/* Registering a block on demand: the driver is called with no lock of ours
 * held (docs/design.md, "Locks"). ondemand_mu guards only `pending`, the
 * blocks whose registration some thread has in progress: another thread
 * asking about the same block waits for that outcome (two registrations of
 * one block: the second would get 712), one asking about another block goes
 * ahead (regression: cuda_register_calls_back, where a driver that called
 * back into the shim from another thread and joined it deadlocked).
 * Taken with dsp_lock (reentry.h), as every lock of ours. */
#define NPENDING    64
#define ondemand_mu (dsp_fork_locks.slot[DSP_FORK_CUDA]) /* fork.c takes it at fork (fork.h) */
static pthread_cond_t ondemand_done = PTHREAD_COND_INITIALIZER;
static uintptr_t pending[NPENDING];

static void fork_child(void) {
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    ondemand_done = fresh_cond;
    memset(pending, 0, sizeof pending); /* their threads are not in the child */
    /* CUDA does not survive fork: a child of a process that served blocks
     * passes CUDA calls through rather than pin blocks the driver refuses. */
    for (int i = 0; i < 2; i++) {
        const struct dsp_cuda_api *a = atomic_load(&apis[i]);
        int serving_mode = DSP_LAYER_SERVING;
        if (a) atomic_compare_exchange_strong(&a->layer->mode, &serving_mode, DSP_LAYER_PASS);
    }
    /* Nor does a layer that had not started yet start here: a driver-only
     * parent (JAX) must not leave its child's runtime calls to be served. */
    atomic_store(&forked, 1);
}

static void layer_freed(uintptr_t base, size_t len);
static int layer_make_room(size_t len);
static void layer_over_limit(void);
static size_t layer_trim(void);
static size_t layer_yield(void);
static int layer_can_yield(void);
/* The spans this layer registers with the driver are a span kind of the
 * manager's (span_kind.h): pooled apart, still registered, and given back
 * through these hooks, the only code that may call the driver for them. */
static const struct dsp_span_kind span_kind = {layer_freed, layer_make_room, layer_over_limit,
                                               layer_trim,  layer_yield,     layer_can_yield};
/* Its number, once a layer started (0 before). */
static _Atomic int kind;

/* The device query the core's NUMA placement asks on a CUDA allocation
 * (src/numa.h; issue 33): the runtime's device first, which is the current
 * context's when one is (cudaGetDevice), else the driver's context's. */
static const struct dsp_cuda_api *numa_api(int need_bus) {
    static const int order[] = {DSP_CUDA_RUNTIME, DSP_CUDA_DRIVER};
    for (int i = 0; i < 2; i++) {
        const struct dsp_cuda_api *a = atomic_load(&apis[order[i]]);
        if (a && (need_bus ? a->pci_bus_id != NULL : a->current_device != NULL)) return a;
    }
    return NULL;
}
static int numa_current(void) {
    const struct dsp_cuda_api *a = numa_api(0);
    int dev = -1;
    return a && a->current_device(&dev) == 0 ? dev : -1;
}
static int numa_bus_id(int dev, char *buf, int len) {
    const struct dsp_cuda_api *a = numa_api(1);
    return a && a->pci_bus_id(buf, len, dev) == 0 ? 0 : -1;
}
static const struct dsp_numa_device numa_device = {numa_current, numa_bus_id};

int dsp_cuda_start(const struct dsp_cuda_api *api, int slot) {
    if (atomic_load(&forked)) return 0;
    int k = dsp_span_kind_add(&span_kind);
    if (k < 0) return 0; /* no room for the kind: pass everything through */
    atomic_store(&kind, k);
    dsp_fork_register(DSP_FORK_CUDA, fork_child);
    atomic_store(&apis[slot], api);
    dsp_numa_set_device(&numa_device);
    return 1;
}

/* An address the driver cannot know: a page of our own, PROT_NONE (nothing
 * can pin it, so nothing registers it), mapped at the first need and kept.
 * For arena memory the driver knows only through the shim's registrations
 * (an interior pointer, a pooled span, a span's tail past its block), the
 * real function is asked about this address instead of the program's: its
 * answer is the runtime's own for memory it never registered (713, 1, type
 * unregistered, or 900 during a capture, 201 without a context), with the
 * runtime's last error set as for the program's call (issue 30). 0 when the
 * page cannot be mapped. */
static _Atomic uintptr_t unknown_page;

static uintptr_t unknown_address(void) {
    uintptr_t u = atomic_load_explicit(&unknown_page, memory_order_acquire);
    if (u) return u;
    void *p = mmap(NULL, DSP_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 0;
    dsp_arena_unlock_reserved(&dsp_mgr, (uintptr_t)p, DSP_PAGE); /* under mlockall(MCL_FUTURE) */
    if (!atomic_compare_exchange_strong(&unknown_page, &u, (uintptr_t)p)) {
        munmap(p, DSP_PAGE); /* another thread's page won */
        return u;
    }
    return (uintptr_t)p;
}

void dsp_cuda_answer_for(void *field, const void *asked, const void *p) {
    uintptr_t v, a = (uintptr_t)asked, q = (uintptr_t)p; /* memcpy: a CUdeviceptr or a void * */
    memcpy(&v, field, sizeof v);
    if (a != q && v == a) memcpy(field, &q, sizeof q);
}

static int ready(const struct dsp_cuda_api *a) {
    return !a->ready || a->ready();
}

static int serving(const struct dsp_cuda_api *a) {
    return dsp_layer_serving(a->layer);
}

/* A driver call of ours failed: the runtime's last error is cleared, which
 * the application would otherwise find left over from a call it never made;
 * with no usable driver, the layer passes everything through from now on. */
static void forget_error(const struct dsp_cuda_api *a, int rc) {
    if (a->forget) a->forget();
    if (rc == a->no_driver_a || rc == a->no_driver_b) {
        dsp_once(DSP_LOG_INFO,
                 "no usable CUDA driver or device (error %d): passing CUDA calls through", rc);
        dsp_layer_pass(a->layer);
    }
}

/* The device the program first registers on (the runtime's current device
 * on the registering thread, a runtime call that makes no context: the
 * registration made one already), for the node timer's calls (layer_yield):
 * asked at the first registration only; -1 until then. */
static _Atomic int program_device = -1;

static void note_device(const struct dsp_cuda_api *a) {
    int d;
    if (atomic_load_explicit(&program_device, memory_order_relaxed) >= 0 || !a->set_device) return;
    if (DSP_CUDA_OUT(a->current_device(&d)) == DSP_CU_SUCCESS)
        atomic_store_explicit(&program_device, d, memory_order_relaxed);
}

/* Registers a block's whole span with the driver. 0 or the error. */

static int register_block(const struct dsp_cuda_api *a, uintptr_t base, size_t span_len,
                          unsigned user) {
    int rc = a->reg((void *)base, span_len, REGISTER_FLAGS);
    if (rc != DSP_CU_SUCCESS) {
        forget_error(a, rc);
        if (rc != a->no_driver_a && rc != a->no_driver_b)
            dsp_once(DSP_LOG_WARN,
                     "%s of a pinned block failed (error %d); the call falls back to the real "
                     "function",
                     a->name, rc);
        return rc;
    }
    dsp_stat_add(DSP_ST_cuda_registrations, 1);
    dsp_block_set_registered(base, atomic_load(&kind), user);
    note_device(a);
    return DSP_CU_SUCCESS;
}

/* The shim's own driver calls made on a caller's behalf (a registration
 * inside a question the driver allows during a graph capture, a wait before
 * reuse) are made in the relaxed capture mode, as torch makes its own
 * cudaHostAlloc: in the caller's global mode they would fail with 900 and
 * invalidate the application's capture. relax() returns the thread's mode to
 * hand back to unrelax(), or -1 where the API has no such call. */
static int relax(const struct dsp_cuda_api *a) {
    int mode = DSP_CU_CAPTURE_RELAXED;
    return a->exchange_mode && a->exchange_mode(&mode) == DSP_CU_SUCCESS ? mode : -1;
}
static void unrelax(const struct dsp_cuda_api *a, int mode) {
    if (mode >= 0) a->exchange_mode(&mode);
}

/* Waits for the device, relaxed. 0 or the driver's error (logged once). */
static int device_idle(const struct dsp_cuda_api *a) {
    int mode = relax(a);
    int rc = a->sync();
    unrelax(a, mode);
    dsp_stat_add(DSP_ST_cuda_syncs, 1);
    if (rc != DSP_CU_SUCCESS) {
        forget_error(a, rc);
        dsp_once(DSP_LOG_WARN,
                 "waiting for the device before reusing a freed registered block failed (error "
                 "%d); the block is kept out of use",
                 rc);
    }
    return rc;
}

/* Unregisters and gives back pooled registered blocks (what: DSP_EVICT_*):
 * over the pool's limit, all of them, or all that need no device wait. A block freed with no device
 * wait since (free() of a hinted block, dsp_free) may still be read or written by a copy in flight:
 * the device is waited for once before any such block is unregistered and its pages given back
 * (regression: freed_registered_block_waits_for_copies). Returns bytes released. */
static size_t evict(const struct dsp_cuda_api *a, int what) {
    struct dsp_evicted e[16];
    size_t n, total = 0;
    if (!ready(a))
        return 0; /* no driver call can succeed here: the pool stays (regression:
                     cuda_driver_trim_without_context) */
    while ((n = dsp_span_kind_evict(atomic_load(&kind), what, e, 16)) > 0) {
        int unsynced = 0;
        for (size_t i = 0; i < n; i++) unsynced |= e[i].unsynced;
        if (unsynced && device_idle(a) != DSP_CU_SUCCESS)
            return total; /* the spans stay out of use: never reused, never given back */
        for (size_t i = 0; i < n; i++) {
            int rc = a->unreg((void *)e[i].base);
            if (rc != DSP_CU_SUCCESS && rc != DSP_CU_NOT_REGISTERED) {
                /* The driver may still pin these pages: never reuse them. */
                forget_error(a, rc);
                dsp_once(DSP_LOG_WARN,
                         "unregistering a pooled block failed (error %d); it is kept out of use",
                         rc);
                continue; /* not handed back: never reused */
            }
            if (rc != DSP_CU_SUCCESS) forget_error(a, rc);
            dsp_stat_add(DSP_ST_cuda_unregistrations, 1);
            dsp_vreg_drop_range(e[i].base, e[i].len);
            dsp_span_kind_evicted(e[i].token);
            total += e[i].len;
        }
    }
    return total;
}

/* The span kind's hooks (span_kind.h), called from the public API only: through
 * whichever API serves (either one can unregister what the other
 * registered: the registrations are the driver's). */
static const struct dsp_cuda_api *any_serving(void) {
    for (int i = 0; i < 2; i++) {
        const struct dsp_cuda_api *a = atomic_load(&apis[i]);
        if (a && serving(a)) return a;
    }
    return NULL;
}

static void layer_freed(uintptr_t base, size_t len) {
    dsp_vreg_drop_range(base, len); /* its sub-registrations die with it */
}

static int layer_make_room(size_t len) {
    const struct dsp_cuda_api *a = any_serving();
    if (!a || !dsp_span_kind_would_make_room(atomic_load(&kind), len)) return 0;
    return evict(a, DSP_EVICT_ALL) > 0;
}

static void layer_over_limit(void) {
    const struct dsp_cuda_api *a = any_serving();
    if (a) evict(a, DSP_EVICT_OVER);
}

static size_t layer_trim(void) {
    const struct dsp_cuda_api *a = any_serving();
    return a ? evict(a, DSP_EVICT_ALL) : 0;
}

/* A yield request of the node ledger, answered from its timer thread (issue
 * 30: an idle rank's registered pool kept 768 MiB of a 1 GiB node cap while
 * another rank was refused; the program, idle, made no call that could give
 * it back). Only the spans that need no device wait: those freed by a call
 * that waited (cudaFreeHost, cuMemFreeHost), whose unregistration is then
 * all issue 13's rule asks. The others (free() of a hinted block, dsp_free)
 * stay for the program's own calls: a device wait from here could last a
 * whole step, and synchronising while a stream captures is refused. The
 * calls are made in the relaxed capture mode, in which a thread is refused
 * nothing for another thread's capture and invalidates none (as the shim's
 * calls on a caller's behalf, relax()). The runtime's layer makes the
 * primary context current on this thread itself; the driver API's needs one
 * current, which this thread does not have (ready()): there the spans stay,
 * and go at the program's own calls. */
/* The API the timer's thread can give registered spans back through: the
 * runtime's, once a registration told the program's device. The driver
 * API's needs a context current, which that thread does not have and must
 * not make. NULL: none. */
static const struct dsp_cuda_api *yield_api(void) {
    const struct dsp_cuda_api *a = any_serving();
    if (!a || !a->set_device || !ready(a)) return NULL;
    return atomic_load_explicit(&program_device, memory_order_relaxed) >= 0 ? a : NULL;
}

static int layer_can_yield(void) {
    return yield_api() != NULL;
}

static size_t layer_yield(void) {
    const struct dsp_cuda_api *a = yield_api();
    if (!a) return 0;
    /* The runtime's first call on a thread works on device 0, and makes its
     * primary context if the program never used device 0: hundreds of MiB
     * of GPU 0 in every rank of a node that runs one rank a GPU (regression:
     * node_cuda_yield_makes_no_context_on_another_device). The timer's
     * thread is set to the device the program registers on first, whose
     * context exists. */
    if (DSP_CUDA_OUT(a->set_device(atomic_load_explicit(&program_device, memory_order_relaxed))) !=
        DSP_CU_SUCCESS)
        return 0;
    int mode = relax(a);
    size_t n = evict(a, DSP_EVICT_SYNCED);
    unrelax(a, mode);
    return n;
}

int dsp_cuda_alloc(const struct dsp_cuda_api *a, void **p, size_t size, unsigned flags) {
    if (dsp_cuda_out || !serving(a) || !p || !size ||
        (flags & ~(unsigned)(DSP_CU_PORTABLE | DSP_CU_MAPPED)) || !ready(a))
        return DSP_CUDA_REAL; /* no context (driver API): the driver's own answer, 201 */
    struct dsp_block b;
    unsigned how =
        DSP_BLK_LOCK_OPTIONAL | DSP_BLK_SERVED(atomic_load(&kind)) | DSP_BLK_USER(SERVED | flags);
    /* Over budget, the registered pool gives way first (cuda_budget_evict). */
    void *ptr = dsp_block_alloc_room(size, how, &b);
    if (!ptr) goto fallback;
    /* A registered block its last owner freed with no device wait (free() of
     * a hinted block, dsp_free): a copy submitted before that free may still
     * read or write it. Wait once, here, where the new owner would otherwise
     * race it (regression: freed_registered_block_waits_for_copies); spans
     * a pinned-memory free freed are synced already (it waits, as the real
     * one). */
    if (b.unsynced && device_idle(a) != DSP_CU_SUCCESS) {
        dsp_block_free(b.base); /* back to the pool, still unsynced */
        goto fallback;
    }
    if (!(b.flags & DSP_BLOCKF_REG) &&
        register_block(a, b.base, b.span_len, SERVED | flags) != DSP_CU_SUCCESS) {
        dsp_block_discard(b.base); /* pinned for nothing: give it back at once */
        goto fallback;
    }
    dsp_stat_add(DSP_ST_cuda_host_alloc_served, 1);
    *p = ptr;
    return DSP_CU_SUCCESS;
fallback:
    dsp_stat_add(DSP_ST_fallbacks, 1);
    return DSP_CUDA_REAL;
}

int dsp_cuda_free(const struct dsp_cuda_api *a, void *ptr) {
    struct dsp_block b;
    if (dsp_cuda_out) return DSP_CUDA_REAL;
    int on = serving(a);
    /* Served blocks are ours to free even once serving stopped, and inherited
     * ones too (dsp_block_at): a forked child frees them without any driver
     * call (fork_child cleared their registration). */
    if (!ptr || !dsp_block_at((uintptr_t)ptr, &b) || !(b.flags & SERVED)) return DSP_CUDA_REAL;
    if (on && (b.flags & DSP_BLOCKF_REG) && !b.inherited) {
        /* The real free waits for the device, and callers rely on it: a copy
         * still in flight from this block must finish before the block can
         * reach its next owner. Waiting here, where the real call waits,
         * keeps its semantics exactly (a wait at reuse time could break a
         * graph capture the real call would not). */
        int rc = a->sync();
        dsp_stat_add(DSP_ST_cuda_syncs, 1);
        if (rc != DSP_CU_SUCCESS) {
            dsp_once(DSP_LOG_WARN,
                     "freeing pinned memory: waiting for the device failed (error %d); the "
                     "block is not freed",
                     rc);
            return rc; /* the runtime's last error is the driver's own */
        }
    }
    /* Synced: the device was waited for above (a registered block), or the
     * block was never registered, so no copy can use it. */
    int over = dsp_block_free_synced(b.base);
    if (over < 0) return DSP_CUDA_REAL;
    dsp_stat_add(DSP_ST_cuda_free_pooled, 1);
    if (on && over) evict(a, DSP_EVICT_OVER); /* over the pool's limit */
    return DSP_CU_SUCCESS;
}

/* A block pinned by another layer (dsp_alloc, malloc hints) is registered with
 * the driver at the application's first CUDA question about it, never earlier:
 * not from the malloc path, not in a forked child (inherited blocks are not
 * found there, and the child passes through), not from a constructor.
 * 1 when the block holding p is registered (now, or before), *b filled; 0
 * when it is not (no block, the driver refused, or too many registrations in
 * progress on other threads: the caller then gets the driver's own answer). */
static int register_on_demand(const struct dsp_cuda_api *a, const void *p, struct dsp_block *b) {
    if (dsp_cuda_out || !serving(a) || !dsp_block_find(p, b)) return 0;
    if (b->flags & DSP_BLOCKF_REG) return 1;
    int slot;
    dsp_lock(&ondemand_mu);
    for (;;) {
        int found = dsp_block_find(p, b);
        if (!found || (b->flags & DSP_BLOCKF_REG)) {
            dsp_unlock(&ondemand_mu);
            return found;
        }
        int busy = 0;
        slot = -1;
        for (int i = 0; i < NPENDING; i++) {
            if (pending[i] == b->base) busy = 1;
            if (!pending[i] && slot < 0) slot = i;
        }
        if (!busy) break;
        /* Another thread registers this very block: its outcome is ours. */
        pthread_cond_wait(&ondemand_done, &ondemand_mu);
    }
    if (slot < 0) {
        dsp_unlock(&ondemand_mu);
        return 0;
    }
    pending[slot] = b->base;
    dsp_unlock(&ondemand_mu);
    /* The question (cudaPointerGetAttributes, what torch's is_pinned() asks)
     * is allowed during a graph capture, so the registration is relaxed
     * (regression: is_pinned_during_capture_keeps_the_capture). */
    int mode = relax(a);
    int ok = register_block(a, b->base, b->len, b->flags & DSP_BLOCKF_USER) == DSP_CU_SUCCESS;
    unrelax(a, mode);
    dsp_lock(&ondemand_mu);
    pending[slot] = 0;
    pthread_cond_broadcast(&ondemand_done);
    dsp_unlock(&ondemand_mu);
    if (ok) b->flags |= DSP_BLOCKF_REG;
    return ok;
}

const void *dsp_cuda_question(const struct dsp_cuda_api *a, const void *p) {
    struct dsp_block b;
    if (register_on_demand(a, p, &b)) return p;
    /* Arena memory outside every live block (past a block's end inside the
     * registered span it was cut from, a pooled span): the driver knows it
     * through the shim's registration alone, the program owns none of it. */
    if (dsp_cuda_out || !serving(a) || !dsp_in_arena(p) || dsp_block_holding(p, &b)) return p;
    uintptr_t u = unknown_address();
    return u ? (const void *)u : p;
}

int dsp_cuda_register(const struct dsp_cuda_api *a, int (*real)(void *, size_t, unsigned),
                      void *ptr, size_t size, unsigned flags) {
    struct dsp_block b;
    if (dsp_cuda_out) return DSP_CUDA_REAL;
    /* A served block is pinned memory, registered whole: the driver's own
     * answer, 712 with the runtime's last error, as without the shim. Only
     * blocks of ordinary memory (dsp_alloc, malloc hints: pageable without
     * the shim) take registrations inside them. */
    if (serving(a) && ptr && size && !(flags & (DSP_CU_REG_IOMEMORY | DSP_CU_REG_READONLY)) &&
        dsp_block_find(ptr, &b) && !(b.flags & SERVED)) {
        if (!(b.flags & DSP_BLOCKF_REG) && !register_on_demand(a, ptr, &b))
            goto real_call; /* the driver answers as it would have */
        /* Inside the block, not overlapping an earlier sub-registration:
         * success without the driver. Anything else (running past the block,
         * overlapping): the driver's own answer, 712 with its last error, since
         * it sees these pages registered. */
        if ((uintptr_t)ptr + size <= b.base + b.len && (uintptr_t)ptr + size > (uintptr_t)ptr &&
            dsp_vreg_add(ptr, size, 0) == 0) {
            dsp_stat_add(DSP_ST_cuda_register_inside_block, 1);
            return DSP_CU_SUCCESS;
        }
        return real(ptr, size, flags);
    }
real_call:;
    int rc = real(ptr, size, flags);
    if (rc == DSP_CU_SUCCESS && ptr && size && dsp_in_arena(ptr)) {
        /* The driver took a registration of the program's inside the arena:
         * kept, so that its unregister reaches the driver too (nothing else
         * there does). Not a registry range: the arena's are blocks. */
        if (atomic_load_explicit(&a->layer->mode, memory_order_relaxed) == DSP_LAYER_SERVING)
            dsp_vreg_add(ptr, size, 1);
    } else if (rc == DSP_CU_SUCCESS && ptr && size) {
        /* The driver pins whole pages: so does the registry entry. */
        uintptr_t lo = (uintptr_t)ptr & ~(uintptr_t)(DSP_PAGE - 1);
        uintptr_t hi = dsp_align_up_ptr((uintptr_t)ptr + size, DSP_PAGE);
        if (dsp_reg_insert(lo, hi - lo, DSP_RANGE_EXTERNAL, 0, ptr) == 0)
            dsp_stat_add(DSP_ST_cuda_register_external, 1);
    }
    return rc;
}

int dsp_cuda_unregister(const struct dsp_cuda_api *a, int (*real)(void *), void *ptr) {
    if (dsp_cuda_out) return DSP_CUDA_REAL;
    if (serving(a) && ptr) {
        int own = dsp_vreg_remove(ptr);
        if (own == DSP_VREG_SHIM) return DSP_CU_SUCCESS;
        /* In the arena, the program's only registrations are the ones recorded
         * there: the shim's answers, and those the driver took. Any other
         * pointer there (a block's base, an interior pointer, a freed block
         * whose span sits registered in the pool) is memory the driver knows
         * only through the shim's own registrations: passing it on could undo
         * one under the block's owner, or under the span's next owner
         * (regression: cuda_stale_unregister). The answer is the real
         * function's for an address it never registered: 713, with the
         * runtime's last error (regression: cuda_shim_713_sets_the_last_error). */
        if (own != DSP_VREG_DRIVER && dsp_in_arena(ptr)) {
            uintptr_t u = unknown_address();
            return u ? real((void *)u) : DSP_CU_NOT_REGISTERED;
        }
    }
    int rc = real(ptr);
    struct dsp_range r;
    if (rc == DSP_CU_SUCCESS && dsp_reg_find((uintptr_t)ptr, &r) && r.kind == DSP_RANGE_EXTERNAL &&
        r.owner == ptr)
        dsp_reg_remove(r.base, NULL);
    return rc;
}

int dsp_cuda_get_flags(const struct dsp_cuda_api *a, unsigned *flags, const void *p) {
    struct dsp_block b;
    if (dsp_cuda_out || !serving(a) || !flags || !dsp_block_find(p, &b) || !(b.flags & SERVED))
        return DSP_CUDA_REAL;
    *flags = b.flags & ASKED;
    return DSP_CU_SUCCESS;
}
