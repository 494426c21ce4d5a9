/* The budget. Two caps, because two kinds of pinning exist:
 * - `budget` bounds what this process locks with mlock: DSP_MAX_PINNED, whose
 *   auto value also respects RLIMIT_MEMLOCK without CAP_IPC_LOCK;
 * - `cap` bounds all pinned bytes, including blocks the CUDA driver pins by
 *   registration, which RLIMIT_MEMLOCK does not limit (a container with
 *   `ulimit -l 64` must still get shim-served CUDA blocks): DSP_MAX_PINNED,
 *   auto being 80% of RAM, or of the memory cgroup's room (limit less usage)
 *   when that is smaller. */
#include "cgroup.h"
#include "config.h"
#include "fmt.h"
#include "log.h"
#include "manager.h"
#include "node.h"
#include "stats.h"
#include "sys.h"

#include <errno.h>

void dsp_budget_plan(struct dsp_budget_plan *p) {
    /* In a container the memory cgroup is the machine: its room at start-up
     * (its limit less what it already uses) when smaller than RAM. The shares
     * of the options (DSP_POOL_MAX=10%) were taken of the same (init.c). */
    size_t ram = dsp_sys_ram(), mem = dsp_cgroup_ram(), max = (size_t)dsp_opt(DSP_OPT_MAX_PINNED);
    p->why = "DSP_MAX_PINNED";
    p->cap = p->budget = max;
    p->auto_cap = dsp_budget_auto(mem);
    p->auto_why = mem < ram ? "80% of the memory cgroup's room" : "80% of RAM";
    if (max == DSP_SIZE_AUTO) {
        p->cap = p->budget = p->auto_cap;
        p->why = p->auto_why;
        size_t lim = dsp_sys_memlock_limit();
        /* Without CAP_IPC_LOCK the kernel refuses mlock past RLIMIT_MEMLOCK:
         * a budget above it would only turn into refused mlocks. */
        if (!dsp_sys_has_ipc_lock() && lim < p->budget) p->budget = lim, p->why = "RLIMIT_MEMLOCK";
    }
    p->pool_max = (size_t)dsp_opt(DSP_OPT_POOL_MAX);
    if (p->pool_max > p->cap) p->pool_max = p->cap;
}

void dsp_budget_configure(void) {
    struct dsp_manager *m = &dsp_mgr;
    struct dsp_budget_plan p;
    dsp_budget_plan(&p);
    char a[32], b[32];
    if (p.budget < p.cap)
        dsp_info("budget %s: RLIMIT_MEMLOCK without CAP_IPC_LOCK (raise with `ulimit -l "
                 "unlimited`); CUDA-registered blocks up to %s",
                 dsp_fmt_bytes(a, sizeof a, p.budget), dsp_fmt_bytes(b, sizeof b, p.cap));
    else
        dsp_info("budget %s: %s", dsp_fmt_bytes(a, sizeof a, p.budget), p.why);
    m->budget = p.budget;
    m->cap = p.cap;
    m->pool_max = p.pool_max;
    m->auto_cap = p.auto_cap;
    dsp_stat_set(DSP_ST_budget_bytes, m->budget);
    dsp_stat_set(DSP_ST_pool_max_bytes, m->pool_max);
}

int dsp_budget_fits_after_release(size_t len, size_t released) {
    struct dsp_manager *m = &dsp_mgr;
    size_t rest = m->pinned > released ? m->pinned - released : 0;
    return len <= m->cap && rest <= m->cap - len;
}

static int fits(size_t len, int lock) {
    struct dsp_manager *m = &dsp_mgr;
    if (!dsp_budget_fits_after_release(len, 0)) return 0;
    return !lock || (len <= m->budget && m->locked <= m->budget - len);
}

static void publish(void) {
    struct dsp_manager *m = &dsp_mgr;
    dsp_stat_set(DSP_ST_pinned_bytes, m->pinned);
    dsp_stat_set(DSP_ST_locked_bytes, m->locked);
    dsp_stat_max(DSP_ST_pinned_bytes_peak, m->pinned);
}

int dsp_budget_reserve(size_t len, int lock, int refuse) {
    struct dsp_manager *m = &dsp_mgr;
    if (!fits(len, lock)) {
        /* Make room from the pool, cached blocks being the cheapest to lose,
         * but only when that can be enough: a request that would not fit even
         * with the pool empty must not empty it (regression:
         * budget.hopeless_request_keeps_the_pool). The general pool's spans
         * are all locked and counted in both. */
        size_t cached = m->cached.bytes < m->locked ? m->cached.bytes : m->locked;
        size_t excess = 0;
        if (len <= m->cap && m->pinned > m->cap - len) excess = m->pinned + len - m->cap;
        if (lock && len <= m->budget && m->locked > m->budget - len &&
            m->locked + len - m->budget > excess)
            excess = m->locked + len - m->budget;
        if (excess && excess <= cached) dsp_pool_release_until(m->cached.bytes - excess);
    }
    if (!fits(len, lock)) {
        if (refuse == DSP_REFUSE_SILENT) return -ENOMEM;
        dsp_stat_add(DSP_ST_budget_refusals, 1);
        if (refuse == DSP_REFUSE_COUNT) return -ENOMEM;
        char a[32], b[32], c[32];
        dsp_once(DSP_LOG_WARN,
                 "pinning %s refused: DSP_MAX_PINNED=%s reached (%s pinned); raise "
                 "DSP_MAX_PINNED or free pinned memory; the caller falls back",
                 dsp_fmt_bytes(a, sizeof a, len),
                 dsp_fmt_bytes(b, sizeof b, lock ? m->budget : m->cap),
                 dsp_fmt_bytes(c, sizeof c, lock ? m->locked : m->pinned));
        return -ENOMEM;
    }
    /* Then the node's: every process of the ledger together (node.c). */
    int node = dsp_node_reserve(len, refuse == DSP_REFUSE_SILENT);
    if (node != 0) {
        if (node == -EAGAIN || refuse == DSP_REFUSE_SILENT) return -ENOMEM; /* tried again */
        dsp_stat_add(DSP_ST_budget_refusals, 1);
        if (refuse == DSP_REFUSE_LOG) dsp_node_log_refusal(len);
        return -ENOMEM;
    }
    m->pinned += len;
    if (lock) m->locked += len;
    publish();
    return 0;
}

void dsp_budget_release(size_t len, int locked) {
    struct dsp_manager *m = &dsp_mgr;
    dsp_node_release(len);
    m->pinned -= len;
    if (locked) m->locked -= len;
    publish();
}

void dsp_budget_unlock(size_t len) {
    dsp_mgr.locked -= len;
    publish();
}
