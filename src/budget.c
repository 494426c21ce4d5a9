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
#include "budget.h"
#include "manager.h"
#include "node.h"
#include "stats.h"
#include "sys.h"

#include <errno.h>

void dsp_budget_configure(struct dsp_manager *m) {
    struct dsp_budget_plan p;
    dsp_budget_plan(&m->machine, &p);
    char a[32], b[32], c[32];
    dsp_fmt_bytes(c, sizeof c, p.pool_max);
    if (p.budget < p.cap)
        dsp_info("budget %s: RLIMIT_MEMLOCK without CAP_IPC_LOCK (raise with `ulimit -l "
                 "unlimited`); CUDA-registered blocks up to %s; pool %s",
                 dsp_fmt_bytes(a, sizeof a, p.budget), dsp_fmt_bytes(b, sizeof b, p.cap), c);
    else
        dsp_info("budget %s: %s; pool %s", dsp_fmt_bytes(a, sizeof a, p.budget), p.why, c);
    m->budget = p.budget;
    m->cap = p.cap;
    m->pool_max = p.pool_max;
    m->auto_cap = p.auto_cap;
    dsp_stat_set(DSP_ST_budget_bytes, m->budget);
    dsp_stat_set(DSP_ST_pool_max_bytes, m->pool_max);
}

int dsp_budget_fits_after_release(struct dsp_manager *m, size_t len, size_t released) {
    size_t rest = m->pinned > released ? m->pinned - released : 0;
    return len <= m->cap && rest <= m->cap - len;
}

static int fits(struct dsp_manager *m, size_t len, int lock) {
    if (!dsp_budget_fits_after_release(m, len, 0)) return 0;
    return !lock || (len <= m->budget && m->locked <= m->budget - len);
}

static void publish(struct dsp_manager *m) {
    dsp_stat_set(DSP_ST_pinned_bytes, m->pinned);
    dsp_stat_set(DSP_ST_locked_bytes, m->locked);
    dsp_stat_max(DSP_ST_pinned_bytes_peak, m->pinned);
}

size_t dsp_budget_excess(struct dsp_manager *m, size_t len, int lock) {
    if (fits(m, len, lock)) return 0;
    /* Only when the general pool can be enough: a request that would not fit
     * even with the pool empty must not empty it (regression:
     * budget.hopeless_request_keeps_the_pool). The general pool's spans are
     * all locked and counted in both. */
    size_t cached = dsp_cached_bytes(m);
    if (cached > m->locked) cached = m->locked;
    size_t excess = 0;
    if (len <= m->cap && m->pinned > m->cap - len) excess = m->pinned + len - m->cap;
    if (lock && len <= m->budget && m->locked > m->budget - len &&
        m->locked + len - m->budget > excess)
        excess = m->locked + len - m->budget;
    return excess <= cached ? excess : 0;
}

int dsp_budget_reserve(struct dsp_manager *m, size_t len, int lock, int refuse) {
    if (!fits(m, len, lock)) {
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
    publish(m);
    return 0;
}

void dsp_budget_release(struct dsp_manager *m, size_t len, int locked) {
    dsp_node_release(len);
    m->pinned -= len;
    if (locked) m->locked -= len;
    publish(m);
}

void dsp_budget_unlock(struct dsp_manager *m, size_t len) {
    m->locked -= len;
    publish(m);
}
