/* CUDA runtime hooks: pinned host allocations served by the manager.
 *
 * cudaHostAlloc/cudaMallocHost get a manager block of the exact (page-rounded)
 * size, registered with the real cudaHostRegister so the driver treats it as
 * pinned; cudaFreeHost waits for the device, as the real one does, and returns
 * the block to the pool still registered. Everything the shim cannot serve, or
 * that fails on its side, goes to the real function with the caller's
 * arguments: never worse than without the shim. docs/cuda.md explains each
 * decision.
 *
 * The shim links no CUDA library: real functions are found at the first call
 * (src/symbols.c), including in a libcudart loaded RTLD_LOCAL. */
#include "block.h"
#include "config.h"
#include "fork.h"
#include "internal.h"
#include "log.h"
#include "manager.h"
#include "registry.h"
#include "stats.h"
#include "symbols.h"
#include "cuda_types.h"
#include "cuda_vreg.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* Our own user bit: the block was served by cudaHostAlloc/cudaMallocHost (as
 * opposed to dsp_alloc or malloc hints), so cudaFreeHost and cudaHostGetFlags
 * apply to it. The low bits keep the flags the caller asked for. */
#define SERVED DSP_BLOCKF_CUDA_SERVED
#define ASKED  DSP_BLOCKF_CUDA_ASKED
/* Registered with every capability a later owner of the pooled block may ask
 * for; cudaHostGetFlags still answers what each owner asked. */
#define REGISTER_FLAGS (cudaHostRegisterPortable | cudaHostRegisterMapped)

static struct {
    cudaError_t (*HostAlloc)(void **, size_t, unsigned);
    cudaError_t (*MallocHost)(void **, size_t);
    cudaError_t (*FreeHost)(void *);
    cudaError_t (*HostRegister)(void *, size_t, unsigned);
    cudaError_t (*HostUnregister)(void *);
    cudaError_t (*HostGetFlags)(unsigned *, void *);
    cudaError_t (*HostGetDevicePointer)(void **, void *, unsigned);
    cudaError_t (*PointerGetAttributes)(struct cudaPointerAttributes *, const void *);
    cudaError_t (*DeviceSynchronize)(void);
    cudaError_t (*GetLastError)(void);
    cudaError_t (*ExchangeCaptureMode)(int *); /* optional: CUDA 10.1+ */
} real;

/* 0: not resolved yet; 1: serving; 2: pass everything through (DSP_CUDA=off,
 * no usable driver, or a forked child of a process that used CUDA). One load
 * and a branch on every hook. */
static _Atomic int mode;

/* Registering a block on demand: the driver is called with no lock of ours
 * held (docs/design.md, "Locks"). ondemand_mu guards only `pending`, the
 * blocks whose registration some thread has in progress: another thread
 * asking about the same block waits for that outcome (two registrations of
 * one block: the second would get 712), one asking about another block goes
 * ahead (regression: cuda_register_calls_back, where a driver that called
 * back into the shim from another thread and joined it deadlocked).
 * Taken with dsp_lock (reentry.h), as every lock of ours. */
#define NPENDING 64
static pthread_mutex_t ondemand_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ondemand_done = PTHREAD_COND_INITIALIZER;
static uintptr_t pending[NPENDING];

static void fork_prepare(void) {
    dsp_lock(&ondemand_mu);
}
static void fork_parent(void) {
    dsp_unlock(&ondemand_mu);
}
static void fork_child(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    ondemand_mu = fresh;
    ondemand_done = fresh_cond;
    memset(pending, 0, sizeof pending); /* their threads are not in the child */
    dsp_lock_forget();
    /* CUDA does not survive fork: a child of a process that served blocks
     * passes CUDA calls through rather than pin blocks the driver refuses. */
    int serving_mode = 1;
    atomic_compare_exchange_strong(&mode, &serving_mode, 2);
}
static const struct dsp_fork_ops fork_ops = {fork_prepare, fork_parent, fork_child};

static void layer_freed(uintptr_t base, size_t len);
static int layer_make_room(size_t len);
static void layer_over_limit(void);
static size_t layer_trim(void);
static const struct dsp_layer_ops layer_ops = {layer_freed, layer_make_room, layer_over_limit,
                                               layer_trim};

#define RESOLVE(field, name)                                                                       \
    __atomic_store_n(&real.field, (__typeof__(real.field))dsp_sym_next(name, "libcudart.so"),      \
                     __ATOMIC_RELAXED)

static int resolve_slow(void) {
    RESOLVE(HostAlloc, "cudaHostAlloc");
    RESOLVE(MallocHost, "cudaMallocHost");
    RESOLVE(FreeHost, "cudaFreeHost");
    RESOLVE(HostRegister, "cudaHostRegister");
    RESOLVE(HostUnregister, "cudaHostUnregister");
    RESOLVE(HostGetFlags, "cudaHostGetFlags");
    RESOLVE(HostGetDevicePointer, "cudaHostGetDevicePointer");
    RESOLVE(PointerGetAttributes, "cudaPointerGetAttributes");
    RESOLVE(DeviceSynchronize, "cudaDeviceSynchronize");
    RESOLVE(GetLastError, "cudaGetLastError");
    RESOLVE(ExchangeCaptureMode, "cudaThreadExchangeStreamCaptureMode");
    if (!dsp_ensure_init()) return 0; /* re-entered from init: ask again next time */
    /* Before serving: until then no thread takes ondemand_mu or cuda_vreg's mu. */
    dsp_fork_register(DSP_FORK_CUDA, &fork_ops);
    dsp_vreg_init();
    if (!real.HostRegister || !real.HostUnregister || !real.DeviceSynchronize || !real.GetLastError)
        return 0; /* no libcudart loaded yet (a probe): not settled, retry at the next call */
    int m = dsp_opt(DSP_OPT_CUDA) == DSP_CUDA_OFF ? 2 : 1;
    if (m == 1) dsp_set_layer(&layer_ops);
    int expected = 0;
    atomic_compare_exchange_strong(&mode, &expected, m);
    return atomic_load(&mode);
}

/* Every hook starts here: resolves the real functions at the first hooked call,
 * whichever it is (regression: cuda_first_call), and says whether to serve. */
static inline int serving(void) {
    int m = atomic_load_explicit(&mode, memory_order_acquire);
    return DSP_LIKELY(m == 1) || (m == 0 && resolve_slow() == 1);
}

static cudaError_t missing(const char *name) {
    dsp_once(DSP_LOG_ERROR,
             "%s called but no libcudart with it is loaded; returning "
             "cudaErrorInsufficientDriver",
             name);
    return cudaErrorInsufficientDriver;
}

#define CALL_REAL(field, name, ...) (real.field ? real.field(__VA_ARGS__) : missing(name))

/* A driver call of ours failed: clear the runtime's last error, which the
 * application would otherwise find left over from a call it never made. */
static void forget_error(cudaError_t rc) {
    if (real.GetLastError) real.GetLastError();
    if (rc == cudaErrorInsufficientDriver || rc == cudaErrorNoDevice) {
        dsp_once(DSP_LOG_INFO,
                 "no usable CUDA driver or device (error %d): passing CUDA calls through", rc);
        atomic_store(&mode, 2);
    }
}

/* Registers a block's whole span with the driver. 0 or the error. */
static cudaError_t register_block(uintptr_t base, size_t span_len, unsigned user) {
    cudaError_t rc = real.HostRegister((void *)base, span_len, REGISTER_FLAGS);
    if (rc != cudaSuccess) {
        forget_error(rc);
        if (rc != cudaErrorInsufficientDriver && rc != cudaErrorNoDevice)
            dsp_once(DSP_LOG_WARN,
                     "cudaHostRegister of a pinned block failed (error %d); the call falls "
                     "back to the real function",
                     rc);
        return rc;
    }
    dsp_stat_add(DSP_ST_cuda_registrations, 1);
    dsp_block_set_registered(base, user);
    return cudaSuccess;
}

/* The shim's own driver calls made on a caller's behalf (a registration
 * inside a question the driver allows during a graph capture, a wait before
 * reuse) are made in the relaxed capture mode, as torch makes its own
 * cudaHostAlloc: in the caller's global mode they would fail with 900 and
 * invalidate the application's capture. relax() returns the thread's mode to
 * hand back to unrelax(), or -1 where the runtime has no such call. */
static int relax(void) {
    int mode = cudaStreamCaptureModeRelaxed;
    return real.ExchangeCaptureMode && real.ExchangeCaptureMode(&mode) == cudaSuccess ? mode : -1;
}
static void unrelax(int mode) {
    if (mode >= 0) real.ExchangeCaptureMode(&mode);
}

/* Waits for the device, relaxed. 0 or the driver's error (logged once). */
static cudaError_t device_idle(void) {
    int mode = relax();
    cudaError_t rc = real.DeviceSynchronize();
    unrelax(mode);
    dsp_stat_add(DSP_ST_cuda_syncs, 1);
    if (rc != cudaSuccess) {
        forget_error(rc);
        dsp_once(DSP_LOG_WARN,
                 "waiting for the device before reusing a freed registered block failed (error "
                 "%d); the block is kept out of use",
                 rc);
    }
    return rc;
}

/* Unregisters and gives back pooled registered blocks: over DSP_POOL_MAX, or
 * all of them. A block freed with no device wait since (free() of a hinted
 * block, dsp_free) may still be read or written by a copy in flight: the
 * device is waited for once before any such block is unregistered and its
 * pages given back (regression: freed_registered_block_waits_for_copies).
 * Returns bytes released. */
static size_t evict(int all) {
    struct dsp_evicted e[16];
    size_t n, total = 0;
    while ((n = dsp_cuda_evict(all, e, 16)) > 0) {
        int unsynced = 0;
        for (size_t i = 0; i < n; i++) unsynced |= e[i].unsynced;
        if (unsynced && device_idle() != cudaSuccess)
            return total; /* the spans stay out of use: never reused, never given back */
        for (size_t i = 0; i < n; i++) {
            cudaError_t rc = real.HostUnregister((void *)e[i].base);
            if (rc != cudaSuccess && rc != cudaErrorHostMemoryNotRegistered) {
                /* The driver may still pin these pages: never reuse them. */
                forget_error(rc);
                dsp_once(DSP_LOG_WARN,
                         "cudaHostUnregister of a pooled block failed (error %d); it is kept "
                         "out of use",
                         rc);
                continue; /* not handed back: never reused */
            }
            if (rc != cudaSuccess) forget_error(rc);
            dsp_stat_add(DSP_ST_cuda_unregistrations, 1);
            dsp_vreg_drop_range(e[i].base, e[i].len);
            dsp_cuda_evicted(e[i].token);
            total += e[i].len;
        }
    }
    return total;
}

/* The manager's hooks (block.h), called from the public API only. */
static void layer_freed(uintptr_t base, size_t len) {
    dsp_vreg_drop_range(base, len); /* its sub-registrations die with it */
}

static int layer_make_room(size_t len) {
    if (!serving() || !dsp_cuda_pool_would_make_room(len)) return 0;
    return evict(1) > 0;
}

static void layer_over_limit(void) {
    if (serving()) evict(0);
}

static size_t layer_trim(void) {
    return serving() ? evict(1) : 0;
}

static int register_on_demand(const void *p, struct dsp_block *b);

/* 0 and *p set when served, else -1 (the caller falls back). */
static int serve(void **p, size_t size, unsigned flags) {
    struct dsp_block b;
    unsigned how = DSP_BLK_LOCK_OPTIONAL | DSP_BLK_REGISTERED | DSP_BLK_USER(SERVED | flags);
    /* Over budget, the registered pool gives way first (cuda_budget_evict). */
    void *ptr = dsp_block_alloc_room(size, how, &b);
    if (!ptr) return -1;
    /* A registered block its last owner freed with no device wait (free() of
     * a hinted block, dsp_free): a copy submitted before that free may still
     * read or write it. Wait once, here, where the new owner would otherwise
     * race it (regression: freed_registered_block_waits_for_copies); spans
     * cudaFreeHost freed are synced already (it waits, as the real one). */
    if (b.unsynced && device_idle() != cudaSuccess) {
        dsp_block_free(b.base); /* back to the pool, still unsynced */
        return -1;
    }
    if (!(b.flags & DSP_BLOCKF_REG) &&
        register_block(b.base, b.span_len, SERVED | flags) != cudaSuccess) {
        dsp_block_discard(b.base); /* pinned for nothing: give it back at once */
        return -1;
    }
    dsp_stat_add(DSP_ST_cuda_host_alloc_served, 1);
    *p = ptr;
    return 0;
}

DSP_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    if (serving() && pHost && size &&
        !(flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped))) {
        if (serve(pHost, size, flags) == 0) return cudaSuccess;
        dsp_stat_add(DSP_ST_fallbacks, 1);
    }
    dsp_stat_add(DSP_ST_cuda_host_alloc_passthrough, 1);
    return CALL_REAL(HostAlloc, "cudaHostAlloc", pHost, size, flags);
}

DSP_API cudaError_t cudaMallocHost(void **ptr, size_t size) {
    if (serving() && ptr && size) {
        if (serve(ptr, size, 0) == 0) return cudaSuccess;
        dsp_stat_add(DSP_ST_fallbacks, 1);
    }
    dsp_stat_add(DSP_ST_cuda_host_alloc_passthrough, 1);
    return CALL_REAL(MallocHost, "cudaMallocHost", ptr, size);
}

DSP_API cudaError_t cudaFreeHost(void *ptr) {
    struct dsp_block b;
    int on = serving();
    /* Served blocks are ours to free even once serving stopped, and inherited
     * ones too (dsp_block_at): a forked child frees them without any driver
     * call (fork_child cleared their registration). */
    if (ptr && dsp_block_at((uintptr_t)ptr, &b) && (b.flags & SERVED)) {
        if (on && (b.flags & DSP_BLOCKF_REG) && !b.inherited) {
            /* The real cudaFreeHost waits for the device, and callers rely on
             * it: a copy still in flight from this block must finish before
             * the block can reach its next owner. Waiting here, where the real
             * call waits, keeps its semantics exactly (a wait at reuse time
             * could break a graph capture the real call would not). */
            cudaError_t rc = real.DeviceSynchronize();
            dsp_stat_add(DSP_ST_cuda_syncs, 1);
            if (rc != cudaSuccess) {
                dsp_once(DSP_LOG_WARN,
                         "cudaFreeHost: waiting for the device failed (error %d); the block "
                         "is not freed",
                         rc);
                return rc; /* the runtime's last error is the driver's own */
            }
        }
        /* Synced: the device was waited for above (a registered block), or
         * the block was never registered, so no copy can use it. */
        int over = dsp_block_free_synced(b.base);
        if (over >= 0) {
            dsp_stat_add(DSP_ST_cuda_free_pooled, 1);
            if (on && over) evict(0); /* over DSP_POOL_MAX */
            return cudaSuccess;
        }
    }
    return CALL_REAL(FreeHost, "cudaFreeHost", ptr);
}

DSP_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    struct dsp_block b;
    if (serving() && ptr && size &&
        !(flags & (cudaHostRegisterIoMemory | cudaHostRegisterReadOnly)) &&
        dsp_block_find(ptr, &b)) {
        if (!(b.flags & DSP_BLOCKF_REG) && !register_on_demand(ptr, &b))
            goto real_call; /* the driver answers as it would have */
        /* Inside the block, not overlapping an earlier sub-registration:
         * success without the driver. Anything else (running past the block,
         * overlapping): the driver's own answer, 712 with its last error, since
         * it sees these pages registered. */
        if ((uintptr_t)ptr + size <= b.base + b.len && (uintptr_t)ptr + size > (uintptr_t)ptr &&
            dsp_vreg_add(ptr, size, 0) == 0) {
            dsp_stat_add(DSP_ST_cuda_register_inside_block, 1);
            return cudaSuccess;
        }
        return CALL_REAL(HostRegister, "cudaHostRegister", ptr, size, flags);
    }
real_call:;
    cudaError_t rc = CALL_REAL(HostRegister, "cudaHostRegister", ptr, size, flags);
    if (rc == cudaSuccess && ptr && size && dsp_in_arena(ptr)) {
        /* The driver took a registration of the program's inside the arena:
         * kept, so that its unregister reaches the driver too (nothing else
         * there does). Not a registry range: the arena's are blocks. */
        if (atomic_load_explicit(&mode, memory_order_relaxed) == 1) dsp_vreg_add(ptr, size, 1);
    } else if (rc == cudaSuccess && ptr && size) {
        /* The driver pins whole pages: so does the registry entry. */
        uintptr_t lo = (uintptr_t)ptr & ~(uintptr_t)(DSP_PAGE - 1);
        uintptr_t hi = dsp_align_up_ptr((uintptr_t)ptr + size, DSP_PAGE);
        if (dsp_reg_insert(lo, hi - lo, DSP_RANGE_EXTERNAL, 0, ptr) == 0)
            dsp_stat_add(DSP_ST_cuda_register_external, 1);
    }
    return rc;
}

DSP_API cudaError_t cudaHostUnregister(void *ptr) {
    if (serving() && ptr) {
        int own = dsp_vreg_remove(ptr);
        if (own == DSP_VREG_SHIM) return cudaSuccess;
        /* In the arena, the program's only registrations are the ones recorded
         * there: the shim's answers, and those the driver took. Any other
         * pointer there (a block's base, an interior pointer, a freed block
         * whose span sits registered in the pool) is memory the driver knows
         * only through the shim's own registrations: passing it on could undo
         * one under the block's owner, or under the span's next owner
         * (regression: cuda_stale_unregister). The driver's answer for memory
         * the caller never registered is 713, so the shim gives it, without
         * the runtime's last error. */
        if (own != DSP_VREG_DRIVER && dsp_in_arena(ptr)) return cudaErrorHostMemoryNotRegistered;
    }
    cudaError_t rc = CALL_REAL(HostUnregister, "cudaHostUnregister", ptr);
    struct dsp_range r;
    if (rc == cudaSuccess && dsp_reg_find((uintptr_t)ptr, &r) && r.kind == DSP_RANGE_EXTERNAL &&
        r.owner == ptr)
        dsp_reg_remove(r.base, NULL);
    return rc;
}

DSP_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost) {
    struct dsp_block b;
    if (serving() && pFlags && dsp_block_find(pHost, &b) && (b.flags & SERVED)) {
        *pFlags = b.flags & ASKED;
        return cudaSuccess;
    }
    /* Other manager blocks are registered memory, not cudaHostAlloc memory:
     * the driver's own answer (an error, with its last error). */
    return CALL_REAL(HostGetFlags, "cudaHostGetFlags", pFlags, pHost);
}

/* A block pinned by another layer (dsp_alloc, malloc hints) is registered with
 * the driver at the application's first CUDA question about it, never earlier:
 * not from the malloc path, not in a forked child (inherited blocks are not
 * found there, and the child passes through), not from a constructor.
 * 1 when the block holding p is registered (now, or before), *b filled; 0
 * when it is not (no block, the driver refused, or too many registrations in
 * progress on other threads: the caller then gets the driver's own answer). */
static int register_on_demand(const void *p, struct dsp_block *b) {
    if (!serving() || !dsp_block_find(p, b)) return 0;
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
    int mode = relax();
    int ok = register_block(b->base, b->len, b->flags & DSP_BLOCKF_USER) == cudaSuccess;
    unrelax(mode);
    dsp_lock(&ondemand_mu);
    pending[slot] = 0;
    pthread_cond_broadcast(&ondemand_done);
    dsp_unlock(&ondemand_mu);
    if (ok) b->flags |= DSP_BLOCKF_REG;
    return ok;
}

DSP_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
    struct dsp_block b;
    register_on_demand(pHost, &b); /* resolves */
    return CALL_REAL(HostGetDevicePointer, "cudaHostGetDevicePointer", pDevice, pHost, flags);
}

DSP_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                             const void *ptr) {
    struct dsp_block b;
    register_on_demand(ptr, &b);
    return CALL_REAL(PointerGetAttributes, "cudaPointerGetAttributes", attributes, ptr);
}
