/* The caps the configuration and the machine give, computed without touching
 * the manager: the budget (budget.c), the node ledger's auto cap (node.c) and
 * `dspreload doctor` all read the same numbers from here. */
#ifndef DSP_PLAN_H
#define DSP_PLAN_H

#include "cgroup.h"

#include <stddef.h>

/* What the plans need of the machine, read in one pass (dsp_machine_read):
 * by the library at its first pin, by `dspreload doctor` when it runs. Each
 * file is read once: /proc/self/cgroup, every memory cgroup level's limit
 * and usage, and no more (issue 29: the start-up read the hierarchy twice). */
struct dsp_machine {
    size_t ram;     /* physical memory */
    size_t mem;     /* ram, or the memory cgroup's room when smaller: what shares (50%) are of */
    size_t memlock; /* RLIMIT_MEMLOCK, (size_t)-1 when unlimited */
    int ipc_lock;   /* CAP_IPC_LOCK in the effective set */
    int cg_found;   /* 1 when cg describes a memory cgroup */
    struct dsp_cgroup cg;
    /* This process's cgroup: the memory controller's line of
     * /proc/self/cgroup (v1), else the unified one (v2); "" when neither. */
    char cg_path[256];
};
void dsp_machine_read(struct dsp_machine *mc);

struct dsp_budget_plan {
    size_t budget;        /* locked with mlock */
    size_t cap;           /* all pinned, driver-registered included */
    size_t pool_max;      /* DSP_POOL_MAX, at most cap */
    size_t auto_cap;      /* what cap is for DSP_MAX_PINNED=auto: the node ledger's auto cap */
    const char *auto_why; /* what set auto_cap: "80% of RAM", "80% of the memory cgroup's room" */
    const char *why; /* what set budget: "DSP_MAX_PINNED", "80% of RAM", "80% of the memory cgroup's
                        room", "RLIMIT_MEMLOCK" */
};
void dsp_budget_plan(const struct dsp_machine *mc, struct dsp_budget_plan *p);
/* The auto budget (DSP_MAX_PINNED=auto) of a machine with this much memory. */
static inline size_t dsp_budget_auto(size_t memory) {
    return memory / 10 * 8;
}

/* 1 when a virtio balloon under sysfs (/sys) reports free pages to the host
 * (VIRTIO_BALLOON_F_REPORTING), else 0: there the first touch of a free huge
 * page faults in the host (docs/design.md, "Huge pages only where they
 * pay"). Asked by doctor, to explain why large blocks get small pages there. */
int dsp_page_reporting(const char *sysfs);

/* dsp_page_reporting("/sys"), asked once (under the manager's mutex): the
 * manager's question when it chooses a new block's pages (manager.c,
 * page_kind). A function of its own so that tests can answer it. */
int dsp_host_takes_free_pages(void);

#endif
