/* Process-wide initialisation, on the first call from any layer as well as from
 * the library constructor: a linked library's constructor can reach us first
 * (docs/internals.md, "Start-up order and thread-locals"). Also the fork
 * handlers. */
#include "cgroup.h"
#include "config.h"
#include "fmt.h"
#include "fork.h"
#include "log.h"
#include "manager.h"
#include "node.h"
#include "registry.h"
#include "stats.h"
#include "sys.h"

#include <sched.h>
#include <unistd.h>

extern char **environ;

struct dsp_manager dsp_mgr = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .spans = DSP_SLAB_INIT(sizeof(struct dsp_span)),
};

_Atomic int dsp_init_state;      /* 0 new, 1 running, 2 ready */
static _Atomic pid_t init_owner; /* the process whose thread runs init_once */
static DSP_TLS int initialising;

static void fork_prepare(void) {
    dsp_mgr_lock();
}

static void fork_parent(void) {
    dsp_mgr_unlock();
}

/* The child inherits the blocks but not their locks (mlock is not inherited):
 * nothing it holds is pinned any more. Live blocks stay usable and freeable;
 * the pool is given back, since handing its unlocked pages out as pinned would
 * be a lie. The registry's child handler has run (fork.h: it is below). */
static void fork_child(void) {
    struct dsp_manager *m = &dsp_mgr;
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    m->mu = fresh;
    dsp_lock_forget();
    dsp_defer_fork_child();
    uint64_t budget = dsp_stat_get(DSP_ST_budget_bytes),
             pool_max = dsp_stat_get(DSP_ST_pool_max_bytes);
    dsp_stats_reset();
    dsp_stat_set(DSP_ST_budget_bytes, budget);
    dsp_stat_set(DSP_ST_pool_max_bytes, pool_max);
    /* Nothing is locked or registered here: the child must never call CUDA
     * for inherited memory, so registered spans are dropped, not unregistered. */
    m->pinned = m->locked = 0;
    dsp_node_fork_child();            /* the parent's slot is not ours: joined at our first pin */
    atomic_store(&m->lock_future, 0); /* mlockall's MCL_FUTURE is not inherited */
    dsp_shm_fork_child();             /* served memory stays shared with the parent */
    size_t live = 0, blocks = 0;
    for (struct dsp_span *s = m->first, *next; s; s = next) {
        next = s->anext;
        struct dsp_bins *bins = dsp_pool_bins(s);
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
        dsp_pin_drop(s);
        next = dsp_arena_vacate(s)->anext; /* it may have merged with next */
    }
    dsp_stat_set(DSP_ST_live_bytes, live);
    dsp_stat_set(DSP_ST_blocks_live, blocks);
    dsp_stat_set(DSP_ST_registry_ranges, dsp_reg_count());
}

static const struct dsp_fork_ops mgr_fork = {fork_prepare, fork_parent, fork_child};
static const struct dsp_fork_ops reg_fork = {dsp_reg_fork_prepare, dsp_reg_fork_parent,
                                             dsp_reg_fork_child};

static void init_once(void) {
    size_t ram = dsp_sys_ram();
    dsp_config_load(environ, dsp_cgroup_ram()); /* shares (50%) of the memory cgroup's room */
    __atomic_store_n(&dsp_log_level, (int)dsp_opt(DSP_OPT_LOG), __ATOMIC_RELAXED);
    struct dsp_manager *m = &dsp_mgr;
    m->huge_mode = (int)dsp_opt(DSP_OPT_HUGEPAGES);
    m->prefault_threads = (int)dsp_opt(DSP_OPT_PREFAULT_THREADS);
    /* Under a finite RLIMIT_MEMLOCK the quota is the program's as much as
     * ours: no chunk locks more than the block asked for. */
    m->chunks = dsp_sys_has_ipc_lock() || dsp_sys_memlock_limit() == (size_t)-1;
    size_t arena = (size_t)dsp_opt(DSP_OPT_ARENA_SIZE);
    if (arena == DSP_SIZE_AUTO) {
        arena = ram * 4;
        if (arena < 64 * DSP_GiB) arena = 64 * DSP_GiB;
        if (arena > ((size_t)64 << 40)) arena = (size_t)64 << 40;
    }
    if (arena < DSP_GiB) {
        dsp_warn("DSP_ARENA_SIZE below 1 GiB leaves no room for pinned blocks; using 1 GiB");
        arena = DSP_GiB;
    }
    m->arena_size = dsp_align_up(arena, DSP_GiB);
    dsp_budget_configure();
    dsp_node_configure();
    dsp_fork_install(); /* before the first registration (fork.h) */
    dsp_fork_register(DSP_FORK_MANAGER, &mgr_fork);
    dsp_fork_register(DSP_FORK_REGISTRY, &reg_fork);
    char a[32], b[32];
    dsp_info("dspreload %s ready: budget %s, pool %s", DSP_VERSION_STRING,
             dsp_fmt_bytes(a, sizeof a, m->budget), dsp_fmt_bytes(b, sizeof b, m->pool_max));
}

/* The claim records the initialising process, not just a flag: a fork while
 * another thread is inside init_once leaves the child with "running" and no
 * thread to finish it (the fork handlers are not registered yet), so a child
 * that finds the claim held by another process takes it over. Regression:
 * fork.no_deadlock_when_forking_under_load hung on its first fork. */
int dsp_init_slow(void) {
    if (initialising) return 0; /* re-entered from inside init_once */
    pid_t me = getpid();
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
