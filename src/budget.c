/* The budget: DSP_MAX_PINNED caps the bytes the process keeps locked. */
#include "config.h"
#include "fmt.h"
#include "log.h"
#include "manager.h"
#include "stats.h"
#include "sys.h"

#include <errno.h>

void dsp_budget_configure(void) {
    struct dsp_manager *m = &dsp_mgr;
    size_t ram = dsp_sys_ram(), budget = (size_t)dsp_opt(DSP_OPT_MAX_PINNED);
    char a[32], b[32];
    if (budget == DSP_SIZE_AUTO) {
        budget = ram / 10 * 8;
        size_t lim = dsp_sys_memlock_limit();
        /* Without CAP_IPC_LOCK the kernel refuses mlock past RLIMIT_MEMLOCK:
         * a budget above it would only turn into refused mlocks. */
        if (!dsp_sys_has_ipc_lock() && lim < budget) {
            budget = lim;
            dsp_info(
                "budget %s: RLIMIT_MEMLOCK without CAP_IPC_LOCK (raise with `ulimit -l unlimited`)",
                dsp_fmt_bytes(a, sizeof a, budget));
        } else {
            dsp_info("budget %s: 80%% of %s RAM", dsp_fmt_bytes(a, sizeof a, budget),
                     dsp_fmt_bytes(b, sizeof b, ram));
        }
    }
    m->budget = budget;
    m->pool_max = (size_t)dsp_opt(DSP_OPT_POOL_MAX);
    if (m->pool_max > budget) m->pool_max = budget;
    dsp_stat_set(DSP_ST_budget_bytes, m->budget);
    dsp_stat_set(DSP_ST_pool_max_bytes, m->pool_max);
}

static int budget_logged;

int dsp_budget_reserve(size_t len) {
    struct dsp_manager *m = &dsp_mgr;
    if (len <= m->budget && m->pinned > m->budget - len) {
        /* Make room from the pool, cached blocks being the cheapest to lose,
         * but only when that can be enough: a request that would not fit even
         * with the pool empty must not empty it (regression:
         * budget.hopeless_request_keeps_the_pool). */
        size_t locked_cached = m->cached.bytes < m->pinned ? m->cached.bytes : m->pinned;
        size_t excess = m->pinned + len - m->budget;
        if (excess <= locked_cached) dsp_pool_release_until(m->cached.bytes - excess);
    }
    if (len > m->budget || m->pinned > m->budget - len) {
        char a[32], b[32], c[32];
        dsp_log_once(
            &budget_logged, DSP_LOG_WARN,
            "pinning %s refused: DSP_MAX_PINNED=%s reached (%s pinned); raise DSP_MAX_PINNED or "
            "free pinned memory; the caller falls back",
            dsp_fmt_bytes(a, sizeof a, len), dsp_fmt_bytes(b, sizeof b, m->budget),
            dsp_fmt_bytes(c, sizeof c, m->pinned));
        dsp_stat_add(DSP_ST_budget_refusals, 1);
        return -ENOMEM;
    }
    m->pinned += len;
    dsp_stat_set(DSP_ST_pinned_bytes, m->pinned);
    dsp_stat_max(DSP_ST_pinned_bytes_peak, m->pinned);
    return 0;
}

void dsp_budget_release(size_t len) {
    dsp_mgr.pinned -= len;
    dsp_stat_set(DSP_ST_pinned_bytes, dsp_mgr.pinned);
}
