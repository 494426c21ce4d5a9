/* The pin manager: one per process. Its state is shared by the files below it
 * (arena, pool, budget, pin, shm, maps), all of which run under `mu` and are
 * handed it as an argument; each declares its own functions in its own
 * header (arena.h, pool.h, ...). This one holds the state, its lock,
 * initialisation and the arena test every layer asks. */
#ifndef DSP_MANAGER_H
#define DSP_MANAGER_H

#include "internal.h"
#include "block.h"
#include "numa.h"
#include "plan.h"
#include "reentry.h"
#include "slab.h"
#include "span.h"
#include "span_kind.h"

#include <pthread.h>
#include <stdatomic.h>

struct dsp_manager {
    /* The general pool is partitioned by NUMA node (span->node): a block is
     * reused only for a request on its node (numa.h; node 0 alone when
     * placement is off). */
    struct dsp_bins vacant, cached[DSP_NUMA_NODES];
    /* Each registered span kind's hooks (span_kind.h; NULL until a layer
     * adds it) and its pooled spans, still registered: `reuse`, the served
     * spans its served allocations take again, and `held`, the others
     * (evicted, never reused), `reuse` by NUMA node as the general pool.
     * Under mu, but for ops. */
    struct dsp_kind_pool {
        const struct dsp_span_kind *ops;
        struct dsp_bins reuse[DSP_NUMA_NODES], held;
        size_t bytes; /* in reuse and held */
    } kinds[DSP_SPAN_KINDS];
    /* The fields every process reads or the constructor writes come after
     * the large indexes, on the struct's last page with the settings below:
     * free() and realloc() read lo and hi, and before this they lay 36 KiB
     * from the rest, a page fault of their own at start-up (issue 29). */
    struct dsp_span *first, *last; /* address order, covering [lo, bump) */
    /* The arena: all manager blocks live in [lo, hi), so "is this ours?" is a
     * compare. Zero until the first allocation reserves it. */
    _Atomic uintptr_t lo, hi;
    uintptr_t bump;
    /* Bytes in the pools' indexes: all of them, and the general pool's
     * (pool.c keeps them as spans go in and out). Under mu. */
    size_t pooled_bytes, cached_bytes;
    /* Served memory's memfd (pin.c): descriptor + 1 (0: none yet), its
     * identity (the program may close the descriptor and reuse the number),
     * and -1 once it proved impossible (served blocks are then private). */
    int shm_fd1, shm_state;
    uint64_t shm_dev, shm_ino;
    size_t pinned, locked; /* see budget.c */
    size_t kept; /* live blocks layers keep idle for reuse (dsp_block_keep: the bounce pool) */
    size_t budget, cap, pool_max, arena_size;
    size_t auto_cap; /* cap's auto value, whatever DSP_MAX_PINNED says (node.c) */
    int huge_mode, prefault_threads;
    /* CLOCK_MONOTONIC ns when a block of huge pages last went back to the
     * kernel (pin.c, dsp_pin_drop), else 0: on a VM whose host takes free
     * pages back, those are the huge pages still at hand (page_kind). */
    _Atomic uint64_t huge_back_ns;
    /* Beside the other fields the constructor writes (issue 29: one page of
     * this large structure touched at start-up, not two). */
    struct dsp_slab spans;
    int chunks;     /* small blocks may be cut from chunks: mlock is not limited */
    int as_limited; /* RLIMIT_AS was finite at the first reservation: grow in pieces */
    /* The program's mlockall(MCL_FUTURE) is in force: every PROT_NONE mapping
     * the manager makes is locked by the kernel and needs a munlock. */
    _Atomic int lock_future;
    /* The machine was read and the budget planned (dsp_plan): at the first
     * pin, not at start-up. */
    _Atomic int planned;
    struct dsp_machine machine;
};

extern struct dsp_manager dsp_mgr;

/* Under mu: the bytes of the general pool, every node's partition. */
static inline size_t dsp_cached_bytes(const struct dsp_manager *m) {
    return m->cached_bytes;
}

/* The manager's mutex: a slot of the locks fork takes (fork.h), named here
 * rather than kept in a field (one load fewer at every lock). It guards the
 * manager's spans, bins, arena bounds, pool and budget. */
#define DSP_MGR_MU (&dsp_fork_locks.slot[DSP_FORK_MANAGER])

/* Every lock of mu goes through these (reentry.h: signal handlers). */
static inline void dsp_mgr_lock(void) {
    dsp_lock(DSP_MGR_MU);
}
static inline void dsp_mgr_unlock(void) {
    dsp_unlock(DSP_MGR_MU);
}

/* Initialises the process-wide state on first use; 1 when ready, 0 when called
 * re-entrantly from inside initialisation (the caller then falls back). */
int dsp_init_slow(void);
extern _Atomic int dsp_init_state; /* 2 when ready */
static inline int dsp_ensure_init(void) {
    return DSP_LIKELY(atomic_load_explicit(&dsp_init_state, memory_order_acquire) == 2) ||
           dsp_init_slow();
}

/* The plan made at the first pin: the machine read (plan.h), the options'
 * shares, the arena's size and the budget. dsp_plan_locked under mu;
 * dsp_plan takes it (the statistics and the exit summary show the budget
 * of a process that has not pinned yet). Once a process; a fork child keeps
 * its parent's. */
void dsp_plan_locked(void);
void dsp_plan(void);

/* 1 when p lies in the arena, else 0. Two loads and a compare: free() runs
 * this on every pointer. */
static inline int dsp_in_arena(const void *p) {
    uintptr_t lo = atomic_load_explicit(&dsp_mgr.lo, memory_order_relaxed);
    return (uintptr_t)p - lo < atomic_load_explicit(&dsp_mgr.hi, memory_order_relaxed) - lo;
}

/* Under mu: the plan made and the arena reserved, whichever is not yet, so
 * that no caller reserves before planning. 0 or -errno of the reservation. */
int dsp_arena_ready(struct dsp_manager *m);

/* dsp_trim without the span kinds' registered pools (no call a kind's layer
 * makes): the layers' caches and the general pool; bytes released. Takes the
 * lock. */
size_t dsp_trim_unregistered(void);

#endif
