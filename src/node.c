/* This process in the node ledger (node.h, ledger.h). All of it runs under
 * the manager's mutex except the wait, the timer thread and the lock-free
 * reads, so the connection needs no lock of its own. */
#include "manager.h"
#include "node.h"

#include "cgroup.h"
#include "config.h"
#include "errname.h"
#include "fmt.h"
#include "ledger.h"
#include "log.h"
#include "stats.h"
#include "sys.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

#define TIMER_NS      (50 * 1000 * 1000) /* how stale a pooled figure or a yield request gets */
#define WAIT_STEP_NS  (5 * 1000 * 1000)
#define RECLAIM_TICKS 20 /* the timer reclaims dead owners' slots once a second */

static struct {
    int state; /* 0 not joined yet, 1 joined (conn open, slot held), -1 alone for good */
    struct dsp_ledger_conn c;
    uint64_t own_cap; /* DSP_NODE_MAX_PINNED's size, or UINT64_MAX for auto */
    uint64_t plan_cap;
    unsigned wait_ms;
    int rank, local_rank;
    _Atomic int timer_running;
    int forked;  /* a fork child, never exec'd: it starts no thread */
    pid_t owner; /* the process that claimed the slot (owner_here) */
    char key[200], path[128];
    struct dsp_manager *m; /* the manager served: its mutex guards all of the above */
    const struct dsp_node_ops *ops;
} node = {.c = {.fd = -1, .slot = -1}, .rank = -1, .local_rank = -1};

/* Published for lock-free readers (the timer, the pool cap). */
static _Atomic(struct dsp_ledger_slot *) node_slot;
static _Atomic(struct dsp_ledger_map *) node_map;
_Atomic uint64_t dsp_node_trim_seen;
struct dsp_ledger_slot *_Atomic dsp_node_polled;
_Atomic int dsp_node_timer_wanted;
DSP_TLS size_t dsp_node_wait_len;
static DSP_TLS int retrying;

extern char **environ;

/* The first of the names (a NULL-ended list) set to a number; -1 if none. */
DSP_STARTUP_TEXT static int env_int(const char *const *names) {
    const char *v = NULL;
    for (; *names && (!v || !*v); names++) v = dsp_config_env(environ, *names);
    if (!v || *v < '0' || *v > '9') return -1;
    long n = 0;
    for (; *v >= '0' && *v <= '9' && n < 1000000; v++) n = n * 10 + (*v - '0');
    return (int)n;
}

/* Which rank of a job this process is, as each launcher says it: torchrun
 * and DeepSpeed, Open MPI, MPICH and Intel MPI (Hydra), then Slurm. Open MPI
 * sets none of the others, so its ranks showed no rank (issue 31). Slurm's
 * comes last: mpirun or mpiexec inside an allocation starts its ranks from
 * per-node daemons that srun started, so every rank inherits a daemon's
 * SLURM_PROCID (the node's index) and all the ranks of a node showed one
 * rank (issue 31's review); where srun starts the ranks itself, the MPI
 * variables it sets say the same as its own. */
static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                        NULL};
static const char *const local_rank_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                              "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};

/* "cgroup:" and the first n bytes of path (dsp_fmt has no precision). A
 * path too long for the key keeps its head and gains the hash of all of it,
 * so that two cgroups whose paths differ only past the cut (container ids
 * at the end of Kubernetes paths) never share a ledger. */
void dsp_node_cgroup_key(char *out, size_t cap, const char *path, size_t n) {
    char dir[192];
    if (n >= sizeof dir) {
        uint64_t h = dsp_ledger_hash(path, n);
        size_t head = sizeof dir - 1 - 17;
        memcpy(dir, path, head);
        dsp_fmt(dir + head, sizeof dir - head, "#%08x%08x", (unsigned)(h >> 32), (unsigned)h);
    } else {
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    dsp_fmt(out, cap, "cgroup:%s", dir);
}

void dsp_node_default_key(const struct dsp_machine *mc, char *out, size_t cap) {
    if (mc->cg_found && mc->cg.file[0]) {
        const char *slash = strrchr(mc->cg.file, '/');
        dsp_node_cgroup_key(out, cap, mc->cg.file,
                            slash ? (size_t)(slash - mc->cg.file) : strlen(mc->cg.file));
        return;
    }
    /* No limit anywhere: the memory controller's line of /proc/self/cgroup
     * (v1), else the unified one (v2, "0::"). */
    if (mc->cg_path[0]) {
        dsp_node_cgroup_key(out, cap, mc->cg_path, strlen(mc->cg_path));
        return;
    }
    dsp_fmt(out, cap, "node");
}

/* A DSP_NODE_KEY that config.c accepted always fits, prefix included: a
 * longer one is ignored there with a warning naming the maximum (the process
 * uses the default key), never cut into another key. */
_Static_assert(sizeof "key:" - 1 + DSP_NODE_KEY_MAX <= DSP_LEDGER_KEY_MAX &&
                   DSP_LEDGER_KEY_MAX <= sizeof((struct dsp_node_plan *)0)->key,
               "DSP_NODE_KEY fits the ledger's key");

void dsp_node_plan(const struct dsp_machine *mc, struct dsp_node_plan *p) {
    size_t opt = (size_t)dsp_opt(DSP_OPT_NODE_MAX_PINNED);
    p->on = dsp_opt(DSP_OPT_NODE) == DSP_NODE_AUTO && opt != DSP_SIZE_OFF;
    p->explicit_cap = opt != DSP_SIZE_AUTO && opt != DSP_SIZE_OFF;
    struct dsp_budget_plan b; /* auto: the process's own auto cap, from one place */
    dsp_budget_plan(mc, &b);
    p->cap = p->explicit_cap ? opt : b.auto_cap;
    p->why = p->explicit_cap ? "DSP_NODE_MAX_PINNED" : b.auto_why;
    if (dsp_opt_str(DSP_OPT_NODE_KEY)[0])
        dsp_fmt(p->key, sizeof p->key, "key:%s", dsp_opt_str(DSP_OPT_NODE_KEY));
    else
        dsp_node_default_key(mc, p->key, sizeof p->key);
    dsp_ledger_path(p->path, sizeof p->path, "/dev/shm", (unsigned)geteuid(), p->key);
}

/* Only the options: the key and the cap need the memory cgroup's files
 * (and a cap given as a share, the memory it is of), read at the first pin,
 * so a process that never pins (a shell under a launcher) pays nothing for
 * the ledger. */
DSP_STARTUP_TEXT void dsp_node_configure(struct dsp_manager *m, const struct dsp_node_ops *ops) {
    node.m = m;
    node.ops = ops;
    size_t opt = (size_t)dsp_opt(DSP_OPT_NODE_MAX_PINNED);
    node.state = dsp_opt(DSP_OPT_NODE) == DSP_NODE_AUTO && opt != DSP_SIZE_OFF ? 0 : -1;
    node.wait_ms = (unsigned)dsp_opt(DSP_OPT_NODE_WAIT);
    node.rank = env_int(rank_vars);
    node.local_rank = env_int(local_rank_vars);
    if (node.state < 0) dsp_info("node ledger off: this process budgets alone");
}

int dsp_node_rank(void) {
    return node.rank;
}

static uint64_t cap_of(const struct dsp_ledger_map *m) {
    uint64_t shared = atomic_load(&m->head.h.cap);
    return node.own_cap < shared ? node.own_cap : shared;
}

static uint64_t cap_now(void) {
    return cap_of(node.c.map);
}

/* The timer only once the process has a second thread: in a single-threaded
 * one it would end glibc's single-thread shortcut for every mutex, and slow
 * the pool cycle. There the manager answers yield requests at its next call
 * instead (dsp_node_poll): an idle single-threaded process yields when it
 * next allocates or frees, not within DSP_NODE_WAIT (docs/node-ledger.md,
 * "The policy"). A fork child of a threaded parent must not start threads
 * before it execs (POSIX allows only async-signal-safe calls there;
 * ThreadSanitizer refuses it) unless it made one itself: until then it
 * polls. At a new pin, under the mutex. */
static int threaded(void) {
    /* Where glibc's flag says one thread it is exact, in a fork child too
     * (the child of a single-threaded parent that made no thread: a
     * launcher's workers, node_bench's storm), so no stat there (it was one
     * at every new pin). */
    if (dsp_single_threaded()) return 0;
    if (!node.forked) return 1;
    /* glibc leaves __libc_single_threaded clear in the child of a threaded
     * parent: the child's own threads are counted (the directory's links:
     * 2 and one a thread). A child that made a thread itself is past the
     * async-signal-safe rule already. One stat, at the new pins of a fork
     * child of a threaded parent only. */
    struct stat st;
    return stat("/proc/self/task", &st) == 0 && st.st_nlink > 3;
}

/* Whether this address space is the one that claimed the slot, for one load:
 * a page of its own marked MADV_WIPEONFORK, which every child that copies
 * this memory finds zeroed, fork and also _Fork or clone, where no fork
 * handler of ours runs and the child still holds the parent's descriptor and
 * mapping (regression: node_fork_without_handlers_leaves_the_parent_slot_alone:
 * a _Fork child's new pins went into its parent's slot for good). It was the
 * pid before: a getpid() system call at every release (glibc caches no pid,
 * and a pid cached by our fork handler would be wrong exactly where no
 * handler runs). A kernel without MADV_WIPEONFORK (before 4.14) leaves
 * owner_mark NULL, and the pid is compared. */
static _Atomic int *owner_mark;

static void mark_owner(void) {
    long page = sysconf(_SC_PAGESIZE);
    if (!owner_mark) { /* once a process: a fork child finds its copy zeroed */
        void *p =
            mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED && syscall(SYS_madvise, p, (size_t)page, MADV_WIPEONFORK) == 0)
            owner_mark = p;
        else if (p != MAP_FAILED)
            munmap(p, (size_t)page);
    }
    if (owner_mark) atomic_store_explicit(owner_mark, 1, memory_order_relaxed);
    node.owner = getpid();
}

static int owner_here(void) {
    if (DSP_LIKELY(owner_mark != NULL))
        return atomic_load_explicit(owner_mark, memory_order_relaxed) != 0;
    return node.owner == getpid();
}

static void want_timer(void) {
    if (!atomic_load(&node.timer_running) && threaded()) atomic_store(&dsp_node_timer_wanted, 1);
}

/* The process joins at its first pin, with nothing pinned yet, so its slot
 * always holds exactly what the manager counts as pinned. 0, or the ledger's
 * -errno (logged: the process budgets alone). */
static int join(void) {
    /* The pid the program started (or exec'd) as: a process that joins with
     * another pid is a fork child, even where the fork handlers were not
     * installed yet (a parent that had not used the shim when it forked). */
    if (getpid() != dsp_loaded_pid) node.forked = 1;
    struct dsp_node_plan p;
    dsp_node_plan(&node.m->machine, &p); /* the manager's plan read the machine (manager.c) */
    node.own_cap = p.explicit_cap ? p.cap : UINT64_MAX;
    /* auto: exactly what the process's own cap is for DSP_MAX_PINNED=auto,
     * planned with the budget (one process alone keeps the budget it had before
     * the ledger), never an explicit DSP_MAX_PINNED: that one caps the
     * process, and must not become the cap of every other one (regression:
     * a test's DSP_MAX_PINNED=4M capped the whole node, and the refusals
     * this made emptied the other processes' pools). */
    node.plan_cap = p.explicit_cap ? p.cap : node.m->auto_cap;
    memcpy(node.key, p.key, sizeof node.key);
    memcpy(node.path, p.path, sizeof node.path);
    const char *why;
    int err;
    int rc = dsp_ledger_open(&node.c, node.path, node.key, node.plan_cap, &why, &err);
    if (rc != 0) {
        node.state = -1;
        dsp_once(DSP_LOG_WARN,
                 "node ledger %s %s%s%s; this process budgets alone (DSP_MAX_PINNED), as with "
                 "DSP_NODE=off",
                 node.path, why, err ? ": " : "", err ? dsp_errname(err) : "");
        return rc;
    }
    uint64_t cap = cap_now();
    rc = dsp_ledger_claim(&node.c, node.rank, node.local_rank, cap);
    if (rc != 0) { /* the owners gone are reclaimed on the way: one more look */
        dsp_ledger_reclaim(&node.c);
        rc = dsp_ledger_claim(&node.c, node.rank, node.local_rank, cap);
    }
    if (rc != 0) {
        dsp_ledger_close(&node.c);
        node.state = -1;
        dsp_once(DSP_LOG_WARN,
                 "node ledger %s: all %d slots are held by live processes; this process budgets "
                 "alone (DSP_MAX_PINNED)",
                 node.path, DSP_LEDGER_SLOTS);
        return rc;
    }
    struct dsp_ledger_slot *s = &node.c.map->slot[node.c.slot];
    atomic_store(&dsp_node_trim_seen, atomic_load(&s->trim_req));
    atomic_store(&node_map, node.c.map);
    atomic_store(&node_slot, s);
    mark_owner();
    node.state = 1;
    dsp_stat_set(DSP_ST_node_cap_bytes, cap);
    char a[32];
    dsp_info("node ledger %s (%s): cap %s (%s), slot %d", node.path, node.key,
             dsp_fmt_bytes(a, sizeof a, cap), p.why, node.c.slot);
    /* No timer yet: the manager answers on its calls (dsp_node_poll) until
     * a new pin finds the process threaded (want_timer). */
    atomic_store(&dsp_node_polled, s);
    want_timer();
    return 0;
}

/* The slot no longer this process's to use: no reader, timer or poll, touches it. */
static void unpublish(void) {
    atomic_store(&dsp_node_polled, NULL);
    atomic_store(&node_slot, NULL);
    atomic_store(&node_map, NULL);
}

static void publish_map(const struct dsp_ledger_map *m) {
    dsp_stat_set(DSP_ST_node_cap_bytes, cap_of(m));
    dsp_stat_set(DSP_ST_node_pinned_bytes, dsp_ledger_total(m));
    dsp_stat_set(DSP_ST_node_users, atomic_load(&m->head.h.users));
}

void dsp_node_publish(void) {
    const struct dsp_ledger_map *m = atomic_load(&node_map);
    if (m) publish_map(m);
}

/* The slot is this process's to use: it joined, and it is the address space
 * that claimed it (owner_here). Reservations and releases need nothing more:
 * they use the mapping, never the descriptor, and the slot's lock belongs to
 * the open file, which the mapping keeps open, so the slot stays this
 * process's even after the program closes the descriptor (closefrom) or
 * reuses its number. No system call: these run at every new pin and unpin,
 * where the checks that were here made an 8-process storm of new blocks
 * pay four more a block (docs/node-ledger.md, "Design notes"). */
static int slot_is_ours(void) {
    return node.state == 1 && owner_here();
}

/* The descriptor still the ledger's: checked before each use of it (the
 * slots' byte locks: reclaims, and leaving at exit), never at a reservation
 * or release, which do not use it. One fstat. A program that closed it may
 * have a file of its own under that number, which our fcntl locks and
 * unlocks must never reach (node_closed_descriptor_never_used_again). Until
 * a use comes (within a second of pinning, or at a refusal) nothing needs
 * it: the slot is still this process's (slot_is_ours). What is left is the
 * check and the use being two system calls: a thread of the program's
 * closing and reusing the number in between is not defended against (it
 * was not when the check ran at every pin either). */
static int fd_is_ours(void) {
    return dsp_ledger_fd_ok(&node.c);
}

/* The process stops using the ledger for good and budgets alone, with one
 * warning: the program closed its descriptor (fd_is_ours), or the ledger was
 * truncated or overwritten by another process, or its counters make no sense
 * (dsp_ledger_verify, issue 34). leave: the slot is given back (through the
 * descriptor, checked by the caller), so that processes still using the
 * segment stop counting this one; without it (the descriptor is not ours)
 * its lock, kept by the file's mapping, goes at exit. The segment stays
 * attached until exit either way (the timer may still read it; it cannot
 * fault). */
static void stop_using(const char *sep, const char *why, int leave) {
    unpublish();
    if (leave) dsp_ledger_leave(&node.c);
    node.state = -1;
    dsp_once(DSP_LOG_WARN,
             "node ledger %s%s%s; this process budgets alone from now on (DSP_MAX_PINNED), as "
             "with DSP_NODE=off",
             node.path, sep, why);
}

/* Under the mutex, with the slot ours: dead owners' slots zeroed and freed
 * (ledger.c), their bytes counted. At a refusal, and once a second from the
 * timer or, in a process without it, from a new pin (reclaim_due), so that
 * users (the pool caps' divisor) and the sum are not inflated by the dead
 * until someone is refused. The descriptor checked first (fd_is_ours), then
 * the ledger itself (dsp_ledger_verify: the file still names the segment, the
 * counters make sense): so a closed descriptor, or a ledger another process
 * truncated or scribbled over, is noticed within a second of pinning, or at
 * the next refusal, before any refusal is believed. 0, or -1 when the
 * process stopped using the ledger. */
static int reclaim_dead(void) {
    if (DSP_UNLIKELY(!fd_is_ours())) {
        stop_using(": ", "the program closed its descriptor", 0);
        return -1;
    }
    const char *why;
    if (DSP_UNLIKELY(dsp_ledger_verify(&node.c, &why) != 0)) {
        stop_using(" ", why, 1);
        return -1;
    }
    uint64_t got = dsp_ledger_reclaim(&node.c);
    if (got) dsp_stat_add(DSP_ST_node_reclaimed_bytes, got);
    return 0;
}

/* A process without the timer (single-threaded, or a fork child) reclaims
 * at its new pins instead, at most once a second: one coarse clock read a
 * pin (vDSO), and the slots' byte locks once a second; never on a pool hit
 * (regression: node_dead_slot_reclaimed_by_a_single_threaded_process: a
 * node of single-threaded processes kept a dead one's slot until a refusal). */
static int reclaim_due(void) {
    static long long last; /* seconds, CLOCK_MONOTONIC_COARSE; under the mutex */
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0 || ts.tv_sec == last) return 0;
    last = ts.tv_sec;
    return reclaim_dead();
}

int dsp_node_reserve(size_t len, int silent) {
    if (node.state < 0) return 0;
    if (node.state == 0 && (node.m->pinned != 0 || join() != 0)) return 0;
    if (DSP_UNLIKELY(!owner_here())) {
        /* A child made without our fork handlers (_Fork, clone): the slot is
         * its parent's, and its manager counts the parent's pins, so it
         * cannot join with a slot of its own. */
        unpublish();
        node.state = -1;
        dsp_info("node ledger %s: a child made without fork handlers budgets alone", node.path);
        return 0;
    }
    if (DSP_UNLIKELY(atomic_load_explicit(&dsp_node_polled, memory_order_relaxed) != NULL))
        want_timer(); /* a thread made since the last pin */
    dsp_node_poll(&node.m->cached_bytes);
    if (!atomic_load_explicit(&node.timer_running, memory_order_relaxed) && reclaim_due() != 0)
        return 0;
    uint64_t cap = cap_now();
    if (dsp_ledger_try_reserve(&node.c, len, cap) == 0) return 0;
    /* The slow path, on a refusal only: owners that are gone give their
     * share back at once, then this process's own pool, then the others'. */
    if (reclaim_dead() != 0) return 0;
    if (dsp_ledger_try_reserve(&node.c, len, cap) == 0) return 0;
    if (silent || len > cap) return -ENOMEM;
    if (dsp_cached_bytes(node.m)) {
        node.ops->release_pool(node.m);
        if (dsp_ledger_try_reserve(&node.c, len, cap) == 0) return 0;
    }
    publish_map(node.c.map);
    if (!retrying && node.wait_ms && dsp_ledger_ask_yield(&node.c)) {
        dsp_node_wait_len = len;
        return -EAGAIN;
    }
    atomic_fetch_add(&node.c.map->slot[node.c.slot].refused, 1);
    dsp_stat_add(DSP_ST_node_refusals, 1);
    return -ENOMEM;
}

void dsp_node_release(size_t len) {
    if (slot_is_ours()) dsp_ledger_sub(&node.c, len);
}

void dsp_node_log_refusal(size_t len) {
    char a[32], b[32], c[32];
    struct dsp_ledger_map *m = node.c.map;
    dsp_once(DSP_LOG_WARN,
             "pinning %s refused: the node's pinned memory is at DSP_NODE_MAX_PINNED=%s (%s "
             "pinned by %u processes of ledger %s); free pinned memory in one of them, raise "
             "DSP_NODE_MAX_PINNED, or set DSP_NODE=off; the caller falls back",
             dsp_fmt_bytes(a, sizeof a, len), dsp_fmt_bytes(b, sizeof b, cap_now()),
             dsp_fmt_bytes(c, sizeof c, dsp_ledger_total(m)), atomic_load(&m->head.h.users),
             node.key);
}

static void nap(long ns) {
    struct timespec ts = {0, ns};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void dsp_node_wait(void) {
    size_t len = dsp_node_wait_len;
    dsp_node_wait_len = 0;
    retrying = 1;
    struct dsp_ledger_map *m = atomic_load(&node_map);
    if (!m) return;
    dsp_stat_add(DSP_ST_node_waits, 1);
    uint64_t t0 = dsp_sys_mono_ns();
    int saved = errno;
    for (;;) {
        if (dsp_ledger_total(m) + len <= cap_of(m)) break;
        if (dsp_sys_mono_ns() - t0 >= (uint64_t)node.wait_ms * 1000000u) break;
        nap(WAIT_STEP_NS);
    }
    errno = saved;
}

/* Under the mutex, from dsp_node_poll: a yield request answered by the
 * manager itself (the whole unregistered pool; registered spans as the
 * timer, below). */
/* 1 when the slot holds a yield request not answered yet, claimed for the
 * caller (the timer and the manager's poll race for it: one answers). */
static int claim_request(struct dsp_ledger_slot *s) {
    uint64_t g = atomic_load(&s->trim_req), seen = atomic_load(&dsp_node_trim_seen);
    return g != seen && atomic_compare_exchange_strong(&dsp_node_trim_seen, &seen, g);
}

void dsp_node_yield(struct dsp_ledger_slot *s) {
    if (!claim_request(s)) return;
    dsp_stat_add(DSP_ST_node_yields, 1);
    dsp_stat_add(DSP_ST_node_yielded_bytes, node.ops->release_pool(node.m));
}

void dsp_node_retry_done(void) {
    retrying = 0;
}

size_t dsp_node_pool_max(size_t pool_max) {
    struct dsp_ledger_map *m = atomic_load_explicit(&node_map, memory_order_relaxed);
    if (!m) return pool_max;
    uint32_t users = atomic_load_explicit(&m->head.h.users, memory_order_relaxed);
    /* users past the slot count is nonsense (the next check drops the
     * ledger): no share from it meanwhile. */
    uint64_t share = users > 1 && users <= DSP_LEDGER_SLOTS
                         ? atomic_load_explicit(&m->head.h.cap, memory_order_relaxed) / users
                         : UINT64_MAX;
    return share < pool_max ? (size_t)share : pool_max;
}

/* Every 50 ms: the pooled figure others read before asking, and their
 * requests answered by giving the pool back (live blocks are never touched).
 * A thread, because the process holding an idle pool is often idle itself (a
 * rank waiting on a collective). The registered pool is offered and given
 * back too, but only what its kind's yield hook can give back from this
 * thread without a wait (span_kind.h; the CUDA layer's says why that is safe
 * for its spans; issue 30: an idle rank's registered pool never yielded). The manager
 * sets ops->trim and ops->yieldable accordingly. */
static void *timer_main(void *arg) {
    (void)arg;
    for (unsigned tick = 1;; tick++) {
        nap(TIMER_NS);
        struct dsp_ledger_slot *s = atomic_load(&node_slot);
        if (!s) continue;
        if (claim_request(s)) {
            size_t n = node.ops->trim();
            dsp_stat_add(DSP_ST_node_yields, 1);
            dsp_stat_add(DSP_ST_node_yielded_bytes, n);
        }
        dsp_lock(DSP_MGR_MU); /* the pool's figure is the lock's: read under it */
        size_t pooled = node.ops->yieldable(node.m);
        /* One fstat, and one fcntl per used slot, once a second; a closed
         * descriptor detaches the process here (reclaim_dead). */
        if (tick % RECLAIM_TICKS == 0 && slot_is_ours()) reclaim_dead();
        dsp_unlock(DSP_MGR_MU);
        if (s == atomic_load(&node_slot)) atomic_store(&s->pooled, pooled); /* not left (exit) */
    }
    return NULL;
}

void dsp_node_start_timer(void) {
    int one = 1;
    if (!atomic_compare_exchange_strong(&dsp_node_timer_wanted, &one, 0)) return;
    /* Signals stay with the program's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 64 * 1024);
    pthread_t t;
    int rc = pthread_create(&t, &at, timer_main, NULL);
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        atomic_store(&node.timer_running, 1);
        atomic_store(&dsp_node_polled, NULL); /* the timer answers from now on */
        return;
    }
    dsp_once(DSP_LOG_WARN,
             "node ledger: no thread for yield requests (%s): this process's idle pool is "
             "given back only when it allocates",
             dsp_errname(rc));
}

void dsp_node_fork_child(void) {
    unpublish();
    atomic_store(&dsp_node_timer_wanted, 0);
    atomic_store(&node.timer_running, 0); /* threads are not inherited */
    node.forked = 1;
    /* The file's mapping goes in every case: it holds the open file, and with
     * it the parent's slot lock, which a detached parent's child would
     * otherwise keep alive after the parent exits (review of issue 16's
     * change); the segment goes with it. */
    dsp_ledger_unmap(&node.c);
    if (node.state == 1) {
        /* The parent's slot stays the parent's: this copy of the descriptor
         * is closed without unlocking (the lock belongs to the open file,
         * which the parent keeps), and only if it still is the ledger's: the
         * program may have closed it and reused the number for a file of its
         * own before the parent noticed (one fstat a fork). */
        if (fd_is_ours()) close(node.c.fd);
        node.c.fd = -1;
        node.c.slot = -1;
        node.state = 0;
    }
}

/* At exit the slot is freed at once rather than at the next refusal
 * somewhere. Not from inside our own lock (exit from a signal handler). */
__attribute__((destructor)) static void node_fini(void) {
    /* The state first: dsp_reentered reads the fork locks' page, which a
     * process that never forked with threads has not touched (a page fault
     * at every exit, issue 29). */
    if (node.state != 1 || dsp_reentered()) return;
    /* A vfork (CLONE_VM) child that calls exit shares this memory, the owner
     * page too: only the pid tells it apart, and it must change nothing, not
     * even our state, which is its parent's (review of issue 16's change:
     * it freed the parent's slot). One getpid, at exit. */
    if (node.owner != getpid()) return;
    dsp_lock(DSP_MGR_MU);
    if (node.state == 1 && !fd_is_ours()) {
        /* Not through this descriptor (the program closed it: the unlock
         * would reach a file of its own): the kernel drops our lock with the
         * mapping, and a refusal or a timer somewhere reclaims the slot. A
         * child made without fork handlers has another pid: it left above. */
        unpublish();
        node.state = -1;
    } else if (node.state == 1) {
        publish_map(node.c.map); /* the exit statistics show the node as it was */
        unpublish();
        dsp_ledger_leave(&node.c);
        node.state = -1;
    }
    dsp_unlock(DSP_MGR_MU);
}
