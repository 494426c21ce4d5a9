/* The budget's plan (plan.h): what DSP_MAX_PINNED, DSP_POOL_MAX, RAM, the
 * memory cgroup and RLIMIT_MEMLOCK make of the caps. */
#include "plan.h"

#include "cgroup.h"
#include "config.h"
#include "sys.h"

void dsp_budget_plan(struct dsp_budget_plan *p) {
    /* In a container the memory cgroup is the machine: its room at start-up
     * (its limit less what it already uses) when smaller than RAM. The shares
     * of the options (DSP_POOL_MAX=10%) were taken of the same (manager.c, init_once). */
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
