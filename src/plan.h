/* The caps the configuration and the machine give, computed without touching
 * the manager: the budget (budget.c), the node ledger's auto cap (node.c) and
 * `dspreload doctor` all read the same numbers from here. */
#ifndef DSP_PLAN_H
#define DSP_PLAN_H

#include <stddef.h>

struct dsp_budget_plan {
    size_t budget;        /* locked with mlock */
    size_t cap;           /* all pinned, driver-registered included */
    size_t pool_max;      /* DSP_POOL_MAX, at most cap */
    size_t auto_cap;      /* what cap is for DSP_MAX_PINNED=auto: the node ledger's auto cap */
    const char *auto_why; /* what set auto_cap: "80% of RAM", "80% of the memory cgroup's room" */
    const char *why; /* what set budget: "DSP_MAX_PINNED", "80% of RAM", "80% of the memory cgroup's
                        room", "RLIMIT_MEMLOCK" */
};
void dsp_budget_plan(struct dsp_budget_plan *p);
/* The auto budget (DSP_MAX_PINNED=auto) of a machine with this much memory. */
static inline size_t dsp_budget_auto(size_t memory) {
    return memory / 10 * 8;
}

#endif
