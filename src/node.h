/* This process's part in the node ledger (ledger.h): when it joins, what its
 * reservations check, the bounded wait of a refused allocation, the timer
 * that gives the pool back on request, fork and exit. */
#ifndef DSP_NODE_H
#define DSP_NODE_H

#include "internal.h"
#include "ledger.h"
#include "manager.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What the configuration and the machine give, without opening anything
 * (dspreload doctor shows the same). */
struct dsp_node_plan {
    int on;           /* DSP_NODE and DSP_NODE_MAX_PINNED allow it */
    uint64_t cap;     /* the cap this process would set or apply */
    int explicit_cap; /* DSP_NODE_MAX_PINNED gave a size */
    const char *why;  /* what set cap */
    char key[200];
    char path[128];
};
void dsp_node_plan(const struct dsp_machine *mc, struct dsp_node_plan *p);
/* The key without DSP_NODE_KEY: "cgroup:" and the directory of the memory
 * cgroup level that limits the process (the ranks of a job share it even
 * where each task has a cgroup of its own below it, Slurm's task_N), or its
 * own cgroup where no level has a limit, or "node". */
void dsp_node_default_key(const struct dsp_machine *mc, char *out, size_t cap);
/* "cgroup:" and the first n bytes of path, or, too long, its head and the
 * hash of all of it: never a key cut into another cgroup's. */
void dsp_node_cgroup_key(char *out, size_t cap, const char *path, size_t n);

/* What the node asks of the manager it serves: the ledger sits below the
 * pool and the manager, so giving back goes through these, set once at
 * initialisation. */
struct dsp_node_ops {
    /* Under the mutex: the whole general pool given back; bytes released. */
    size_t (*release_pool)(struct dsp_manager *m);
    /* From the timer thread, taking the mutex itself: a yield request
     * answered: the layers' caches, the general pool and the registered
     * spans that need no device wait (the CUDA layer's yield hook); bytes
     * released. */
    size_t (*trim)(void);
    /* Under the mutex: the pooled bytes the timer's trim can give back (the
     * figure others read before they ask). */
    size_t (*yieldable)(struct dsp_manager *m);
};

/* At initialisation: options read; nothing opened (a process that never
 * pins never touches /dev/shm). m: the manager whose mutex guards the node
 * state and whose pinned and pooled bytes it reports. */
void dsp_node_configure(struct dsp_manager *m, const struct dsp_node_ops *ops);

/* Under the manager's mutex, after the process's own budget accepted len
 * more pinned bytes: 0 (reserved, or the process budgets alone), -ENOMEM
 * (the node cap refused), or -EAGAIN (refused, others were asked to give
 * back their pools: the caller drops the mutex, calls dsp_node_wait and
 * tries again). silent: a first try that the caller repeats (no pool is
 * trimmed, nobody asked). */
int dsp_node_reserve(size_t len, int silent);
void dsp_node_release(size_t len); /* under the mutex */
/* The logged line of a refusal (once). */
void dsp_node_log_refusal(size_t len);

/* Set by dsp_node_reserve's -EAGAIN on this thread: the bytes to wait for. */
extern DSP_TLS size_t dsp_node_wait_len;
/* Outside the mutex: waits up to DSP_NODE_WAIT for the node to have room for
 * dsp_node_wait_len bytes, then clears it. Until the caller's retry ends
 * (dsp_node_retry_done), refusals are final. */
void dsp_node_wait(void);
void dsp_node_retry_done(void);

/* The timer thread is started outside the mutex, after a new pin found the
 * process with a slot, no timer and more than one thread. */
extern _Atomic int dsp_node_timer_wanted;
void dsp_node_start_timer(void);

/* The slot of a process that has no timer (single-threaded: a thread of ours
 * would end glibc's single-thread lock shortcut, docs/performance.md; or a
 * fork child), NULL otherwise: its manager answers yield requests and
 * publishes its pooled figure on each of its calls instead, under the mutex
 * (dsp_node_poll: two relaxed loads and a store of mapped words). */
extern struct dsp_ledger_slot *_Atomic dsp_node_polled;
extern _Atomic uint64_t dsp_node_trim_seen;
void dsp_node_yield(struct dsp_ledger_slot *s);
static inline void dsp_node_poll(struct dsp_manager *m) {
    struct dsp_ledger_slot *s = atomic_load_explicit(&dsp_node_polled, memory_order_relaxed);
    if (DSP_UNLIKELY(s != NULL)) {
        if (DSP_UNLIKELY(atomic_load_explicit(&s->trim_req, memory_order_relaxed) !=
                         atomic_load_explicit(&dsp_node_trim_seen, memory_order_relaxed)))
            dsp_node_yield(s);
        atomic_store_explicit(&s->pooled, dsp_cached_bytes(m), memory_order_relaxed);
    }
}

/* DSP_POOL_MAX, or a smaller share when the ledger's users together could
 * otherwise keep its cap idle: cap / users. */
size_t dsp_node_pool_max(size_t pool_max);

/* The node figures of the statistics read fresh from the ledger (lock-free:
 * any time, at exit included). */
void dsp_node_publish(void);

/* The rank its launcher set (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK), -1 if none. */
int dsp_node_rank(void);

/* Fork child (manager slot): the parent's slot is not the child's, and
 * the child has pinned nothing; it joins again at its first pin. */
void dsp_node_fork_child(void);

#endif
