/* The budget's plan (plan.h): what DSP_MAX_PINNED, DSP_POOL_MAX, RAM, the
 * memory cgroup and RLIMIT_MEMLOCK make of the caps. */
#include "plan.h"

#include "cgroup.h"
#include "config.h"
#include "fmt.h"
#include "sys.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void dsp_machine_read(struct dsp_machine *mc) {
    memset(mc, 0, sizeof *mc);
    mc->ram = dsp_sys_ram();
    mc->cg_found = dsp_cgroup_query(&mc->cg, mc->cg_path, sizeof mc->cg_path) == 0;
    if (!mc->cg_found) mc->cg.limit = mc->cg.room = (size_t)-1;
    mc->mem = mc->cg.room < mc->ram ? mc->cg.room : mc->ram;
    mc->memlock = dsp_sys_memlock_limit();
    mc->ipc_lock = dsp_sys_has_ipc_lock();
}

void dsp_budget_plan(const struct dsp_machine *mc, struct dsp_budget_plan *p) {
    /* In a container the memory cgroup is the machine: its room (its limit
     * less what it already uses) when smaller than RAM. The shares of the
     * options (DSP_POOL_MAX=10%) are taken of the same (dsp_config_set_memory). */
    size_t max = (size_t)dsp_opt(DSP_OPT_MAX_PINNED);
    p->why = "DSP_MAX_PINNED";
    p->cap = p->budget = max;
    p->auto_cap = dsp_budget_auto(mc->mem);
    p->auto_why = mc->mem < mc->ram ? "80% of the memory cgroup's room" : "80% of RAM";
    if (max == DSP_SIZE_AUTO) {
        p->cap = p->budget = p->auto_cap;
        p->why = p->auto_why;
        /* Without CAP_IPC_LOCK the kernel refuses mlock past RLIMIT_MEMLOCK:
         * a budget above it would only turn into refused mlocks. */
        if (!mc->ipc_lock && mc->memlock < p->budget)
            p->budget = mc->memlock, p->why = "RLIMIT_MEMLOCK";
    }
    p->pool_max = (size_t)dsp_opt(DSP_OPT_POOL_MAX);
    if (p->pool_max > p->cap) p->pool_max = p->cap;
}

/* The virtio balloon's features, one character a bit from bit 0: bit 5 is
 * VIRTIO_BALLOON_F_REPORTING (free page reporting). Listed with getdents64
 * and read into stack buffers: no allocation (this runs inside malloc). */
#define BALLOON_F_REPORTING 5

int dsp_page_reporting(const char *sysfs) {
    char dir[256], path[512], feat[256];
    dsp_fmt(dir, sizeof dir, "%s/bus/virtio/drivers/virtio_balloon", sysfs);
    int fd = dsp_sys_open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return 0;
    char buf[2048];
    int on = 0;
    long got;
    while (!on && (got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got && !on;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            off += d->reclen;
            if (strncmp(d->name, "virtio", 6) != 0) continue;
            dsp_fmt(path, sizeof path, "%s/%s/features", dir, d->name);
            long len = dsp_sys_read(path, feat, sizeof feat);
            on = len > BALLOON_F_REPORTING && feat[BALLOON_F_REPORTING] == '1';
        }
    }
    dsp_sys_close(fd);
    return on;
}

int dsp_host_takes_free_pages(void) {
    static int asked; /* 1 yes, -1 no: under the manager's mutex */
    if (!asked) asked = dsp_page_reporting("/sys") ? 1 : -1;
    return asked > 0;
}
