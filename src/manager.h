/* The pin manager: one per process. Its state is shared by the arena, pool and
 * budget code, all of which run under `mu`. */
#ifndef DSP_MANAGER_H
#define DSP_MANAGER_H

#include "internal.h"
#include "block.h"
#include "plan.h"
#include "reentry.h"
#include "slab.h"
#include "span.h"

#include <pthread.h>
#include <stdatomic.h>

struct dsp_manager {
    struct dsp_slab spans;
    struct dsp_bins vacant, cached;
    struct dsp_span *first, *last; /* address order, covering [lo, bump) */
    /* The arena: all manager blocks live in [lo, hi), so "is this ours?" is a
     * compare. Zero until the first allocation reserves it. */
    _Atomic uintptr_t lo, hi;
    uintptr_t bump;
    struct dsp_bins cuda_cached;  /* pooled served spans still registered with CUDA */
    struct dsp_bins cuda_private; /* other registered spans: evicted, never reused */
    /* Served memory's memfd (pin.c): descriptor + 1 (0: none yet), its
     * identity (the program may close the descriptor and reuse the number),
     * and -1 once it proved impossible (served blocks are then private). */
    int shm_fd1, shm_state;
    uint64_t shm_dev, shm_ino;
    size_t pinned, locked; /* see budget.c */
    size_t kept; /* live blocks layers keep idle for reuse (dsp_block_keep: the bounce pool) */
    size_t budget, cap, pool_max, arena_size;
    size_t auto_cap;                   /* cap's auto value, whatever DSP_MAX_PINNED says (node.c) */
    const struct dsp_layer_ops *layer; /* the CUDA layer's hooks, once it runs */
    int huge_mode, prefault_threads;
    /* With DSP_HUGEPAGES=auto, whether huge pages pay on this machine: 0 not
     * asked yet, 1 they do, -1 they do not (manager.c, page_kind, at the
     * first block of 64 MiB). Under mu. */
    int huge_pays;
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

/* arena.c: address space. */
int dsp_arena_reserve(struct dsp_manager *m); /* 0 or -errno */
/* Under mu: the plan made and the arena reserved, whichever is not yet, so
 * that no caller reserves before planning. 0 or -errno of the reservation. */
int dsp_arena_ready(struct dsp_manager *m);
struct dsp_span *dsp_arena_take(struct dsp_manager *m, size_t len,
                                size_t align); /* a LIVE span, or NULL */
/* Memory already dropped; merges with vacant neighbours and returns the span
 * that now holds s (s itself may be gone). */
struct dsp_span *dsp_arena_vacate(struct dsp_manager *m, struct dsp_span *s);
struct dsp_span *dsp_span_split(struct dsp_manager *m, struct dsp_span *s,
                                size_t len); /* s keeps len; returns the tail */
void dsp_span_unlink(struct dsp_manager *m, struct dsp_span *s);
/* For the program's mlockall (memlock.c), under mu: shed_tail gives back the
 * reservation above the last block (a trailing vacant span included; hi drops
 * to the bump pointer first) and returns its length; restore_tail reserves it
 * again where nothing took it meanwhile (else the arena ends at the bump);
 * unlock_vacant munlocks every reserved-only range. */
size_t dsp_arena_shed_tail(struct dsp_manager *m);
void dsp_arena_restore_tail(struct dsp_manager *m, size_t len);
void dsp_arena_unlock_vacant(struct dsp_manager *m);
/* After a PROT_NONE mapping of the manager's: munlock it while MCL_FUTURE is
 * in force (a cheap check otherwise). Keeps errno. */
void dsp_arena_unlock_reserved(struct dsp_manager *m, uintptr_t base, size_t len);

/* memlock.c: the program's own mlockall/mlock with the shim present. The
 * exception to the core's -errno: each returns 0, or -1 and errno, as the
 * system call. */
/* mlockall(flags) that never counts reserved-only address space as locked
 * (the kernel's MCL_CURRENT check compares all of VmSize with RLIMIT_MEMLOCK)
 * and, refused for the limit while the pool holds blocks, gives the pool back
 * (dsp_trim) and tries once more. 0, or -1 and errno, as the system call. */
int dsp_arena_mlockall(int flags);
/* mlock (mlock2 when two) with the same retry: the program's quota comes
 * first. 0, or -1 and errno, as the system call. */
int dsp_mlock_with_room(const void *addr, size_t len, int two, unsigned flags);

/* pin.c: memory of a span. */
/* Populates (and locks) a LIVE span outside the manager's lock, touching only
 * memory, never the span: returns DSP_PIN_* bits for the caller to record under
 * the lock, or -errno with the stage logged (the memory is then unmapped), or,
 * when even that failed, DSP_PIN_STUCK(errno): its pages may stay populated
 * and locked, so the caller keeps the span counted and never reuses it.
 * With lock_optional a refused mlock is no error: DSP_PIN_LOCKED is clear.
 * pages: 1 ask for transparent huge pages, -1 forbid them (MADV_NOHUGEPAGE),
 * 0 neither (manager.c, page_kind). */
#define DSP_PIN_LOCKED       1
#define DSP_PIN_HUGE         2
#define DSP_PIN_SHARED       4 /* mapped from the memfd (asked by s->shared) */
#define DSP_PIN_STUCK_BASE   (-4096)
#define DSP_PIN_STUCK(err)   (DSP_PIN_STUCK_BASE - (err))
#define DSP_PIN_IS_STUCK(rc) ((rc) <= DSP_PIN_STUCK_BASE)
int dsp_pin_populate_lock(struct dsp_manager *m, struct dsp_span *s, int lock, int lock_optional,
                          int pages);
/* Unlock, free the memory, PROT_NONE again: 0, or -ENOMEM when that would
 * take the process's maps into the reserve left to the program (maps.c), or
 * the -errno of the failed mmap (logged with it) when a locked span could not
 * even be unlocked; in both cases it is unchanged and must stay accounted. */
int dsp_pin_drop(struct dsp_manager *m, struct dsp_span *s);
/* mlock2(MLOCK_ONFAULT) of a mapped range, the way every block is locked (so
 * that relocked ranges keep merging with their neighbours): 0 or -errno. */
int dsp_pin_lock_range(void *base, size_t len);
int dsp_prefault(void *base, size_t len, int threads);
/* Under mu: a span whose mapping the program changed (memcalls.c), put back
 * as the manager made it. */
void dsp_mem_restore(struct dsp_span *s);
/* Under mu: 1 when served blocks can be shared memory (the memfd is open and
 * still ours), else 0 (logged once; they are then private). */
int dsp_shm_ready(struct dsp_manager *m);
/* Fork child, under mu: the memfd is the parent's: closed here, the spans
 * mapping it marked FOREIGN (their pages are never punched from this side). */
void dsp_shm_fork_child(struct dsp_manager *m);
/* Maps a LIVE span of served memory read-write from the memfd, out of core
 * dumps: 0 or -errno (then nothing was mapped). */
int dsp_shm_map(struct dsp_manager *m, const struct dsp_span *s);
/* Gives an OURS span's pages back to the system, unlocking them; the caller
 * then maps the range PROT_NONE. */
void dsp_shm_punch(struct dsp_manager *m, const struct dsp_span *s);

/* maps.c: the process's memory maps (vm.max_map_count). Under mu. */
/* Room for n more maps that a new pin (drop 0) or a drop splitting the mapping
 * it is in (drop 1) may add, keeping the reserve left to the program: 0, or
 * -ENOMEM (logged once) when the manager must refuse, or keep the span as it is. */
int dsp_maps_take(int n, int drop);
/* The next take counts the maps again: before a trim, which may drop many
 * spans long after the last count (the program maps too meanwhile). */
void dsp_maps_recount(void);
size_t dsp_maps_count(void);                   /* lines of /proc/self/maps, without allocating */
size_t dsp_maps_max(void);                     /* vm.max_map_count (65530 if unreadable) */
size_t dsp_maps_reserve(size_t max_map_count); /* maps left to the program */

/* memcalls.c: the program's own memory calls on arena memory (munlock,
 * munlockall, mprotect, madvise). The exception to the core's -errno: each
 * dsp_mem_* call but dsp_mem_in_arena returns 0, or -1 and errno, as the
 * system call. */
int dsp_mem_in_arena(const void *addr, size_t len);         /* 1 on any overlap, else 0 */
int dsp_mem_mlock(const void *addr, size_t len, int flags); /* flags < 0: mlock, else mlock2 */
int dsp_mem_munlock(const void *addr, size_t len);
int dsp_mem_munlockall(void);
int dsp_mem_mprotect(void *addr, size_t len, int prot);
int dsp_mem_madvise(void *addr, size_t len, int advice);

/* pool.c: cached spans. */
struct dsp_span *dsp_pool_get(struct dsp_manager *m, size_t len);
struct dsp_span *dsp_pool_get_registered(struct dsp_manager *m, size_t len); /* served spans only */
struct dsp_bins *dsp_pool_bins(struct dsp_manager *m,
                               const struct dsp_span *s); /* the index a cached span is in */
size_t dsp_pool_registered_bytes(struct dsp_manager *m);  /* both registered indexes */
void dsp_pool_put(struct dsp_manager *m,
                  struct dsp_span *s); /* registered spans to their own index */
size_t dsp_pool_release_until(struct dsp_manager *m,
                              size_t cached_max); /* general pool only; bytes released */
/* Before a budget reservation of len: releases from the general pool what
 * dsp_budget_excess says, cached blocks being the cheapest to lose. */
void dsp_pool_make_room(struct dsp_manager *m, size_t len, int lock);
/* dsp_trim without the CUDA layer's registered pool (no driver call): the
 * layers' caches and the general pool; bytes released. Takes the lock. */
size_t dsp_trim_unregistered(void);
size_t dsp_pool_evict_registered(struct dsp_manager *m, size_t keep, struct dsp_span **out,
                                 size_t max, int synced_only);
void dsp_span_release(struct dsp_manager *m,
                      struct dsp_span *s);      /* uncount, drop, vacate (unregistered first) */
size_t dsp_pooled_bytes(struct dsp_manager *m); /* both pools */
/* How much may stay idle, every cache together: DSP_POOL_MAX, or the
 * process's share of the node cap when smaller. Under mu. */
size_t dsp_pool_limit(struct dsp_manager *m);
/* What is idle now against that limit: both pools and the blocks layers keep
 * (m->kept). Under mu. */
size_t dsp_pool_idle_bytes(struct dsp_manager *m);
/* A layer asks to keep a live block of len idle: 1 (counted in m->kept) while
 * everything idle stays within dsp_pool_limit, else 0. Under mu. */
int dsp_pool_may_keep(struct dsp_manager *m, size_t len);

/* budget.c */
void dsp_budget_configure(struct dsp_manager *m);
/* Under mu: 1 when len more pinned bytes would fit the cap once `released`
 * are given back, else 0. */
int dsp_budget_fits_after_release(struct dsp_manager *m, size_t len, size_t released);
/* The bytes the general pool must give back for len more to fit (0 when
 * they fit, or when even the whole pool would not be enough); lock: they
 * will be mlock'ed. */
size_t dsp_budget_excess(struct dsp_manager *m, size_t len, int lock);
/* 0, or -ENOMEM when len does not fit (the caller made room from the pool
 * first: dsp_pool_make_room); lock: the bytes will be mlock'ed. A refusal is logged and counted
 * (REFUSE_LOG), counted only (REFUSE_COUNT: the caller logs its own line) or neither
 * (REFUSE_SILENT: the caller retries). Regression: hinted allocations refused
 * under an 8 MiB RLIMIT_MEMLOCK showed as "0 budget refusals" (issue 14). */
enum { DSP_REFUSE_LOG, DSP_REFUSE_COUNT, DSP_REFUSE_SILENT };
int dsp_budget_reserve(struct dsp_manager *m, size_t len, int lock, int refuse);
void dsp_budget_release(struct dsp_manager *m, size_t len, int locked);
void dsp_budget_unlock(struct dsp_manager *m,
                       size_t len); /* reserved as locked, ended up unlocked */

#endif
