/* NUMA placement of new blocks (issue 33): pinned memory placed by first
 * touch lands wherever the allocating thread ran, often on another node than
 * the GPU that copies from it (about 330 GB/s local against 115 GB/s across
 * nodes on GB200, torchtitan PR 3519). Each new block is bound to the node
 * its request is for before it is populated: MPOL_PREFERRED, not MPOL_BIND,
 * so that a node without room spills to another (counted and said once)
 * instead of failing the pin, or invoking the OOM killer for the node, where
 * the caller without the shim would have had its memory (docs/memory.md,
 * "Placement on NUMA nodes"). */
#include "errname.h"
#include "fmt.h"
#include "internal.h"
#include "log.h"
#include "numa.h"
#include "stats.h"
#include "sys.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

/* The CPUs whose node is known, ids below this. */
#define CPU_MAX 1024
/* Devices whose node is cached, ordinals below this. */
#define DEVICE_MAX 64

int dsp_numa_active;
static const char *root = "/sys"; /* the sysfs root of the plan */
static int mode = DSP_NUMA_AUTO;
static uint64_t online;           /* bit n: node n online (ids below 64) */
static uint8_t cpu_node[CPU_MAX]; /* node + 1 of each CPU, 0 unknown */
static cpu_set_t node_cpus[DSP_NUMA_NODES];
static uint8_t node_cpus_known[DSP_NUMA_NODES];
static const struct dsp_numa_device *_Atomic device_ops;
static _Atomic int device_node[DEVICE_MAX]; /* node + 2 of each device; 0 not asked, 1 unknown */
static DSP_TLS int last_device_node;        /* node + 1 of this thread's last CUDA allocation */

static struct { _Atomic uint64_t pinned, fallbacks; } st[DSP_NUMA_NODES];
uint64_t dsp_numa_pooled[DSP_NUMA_NODES];

DSP_STARTUP_TEXT int dsp_numa_configure(const char *value) {
    static const struct {
        const char *word;
        int mode;
    } words[] = {{"auto", DSP_NUMA_AUTO},
                 {"device", DSP_NUMA_DEVICE},
                 {"cpu", DSP_NUMA_CPU},
                 {"off", DSP_NUMA_OFF}};
    mode = DSP_NUMA_AUTO;
    /* Unset, as in most processes: no strcmp, whose lazy binding is a symbol
     * lookup at start-up (issue 29). */
    if (!*value) return 0;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcmp(value, words[i].word) == 0) return mode = words[i].mode, 0;
    int n = 0;
    const char *p = value;
    for (; *p >= '0' && *p <= '9' && n < 1000; p++) n = n * 10 + (*p - '0');
    if (*p || p == value) return -EINVAL;
    mode = n;
    return 0;
}

/* A sysfs list ("0-3,8,10-11") into a bit per member below max, calling
 * each(member, arg); the number of members. */
static int parse_list(const char *s, int max, void (*each)(int, void *), void *arg) {
    int count = 0;
    while (*s >= '0' && *s <= '9') {
        int lo = 0, hi;
        for (; *s >= '0' && *s <= '9'; s++) lo = lo * 10 + (*s - '0');
        hi = lo;
        if (*s == '-')
            for (hi = 0, s++; *s >= '0' && *s <= '9'; s++) hi = hi * 10 + (*s - '0');
        for (int i = lo; i <= hi && i < max; i++, count++) each(i, arg);
        if (*s == ',') s++;
    }
    return count;
}

static void set_online(int node, void *arg) {
    (void)arg;
    online |= (uint64_t)1 << node;
}

static void set_cpu(int cpu, void *arg) {
    int node = *(int *)arg;
    cpu_node[cpu] = (uint8_t)(node + 1);
    CPU_SET(cpu, &node_cpus[node]);
}

int dsp_numa_online(int node) {
    return node >= 0 && node < 64 && (online >> node & 1);
}

static const char *mode_name(void) {
    switch (mode) {
    case DSP_NUMA_AUTO:
        return "auto";
    case DSP_NUMA_DEVICE:
        return "device";
    case DSP_NUMA_CPU:
        return "cpu";
    default:
        return "a fixed node";
    }
}

void dsp_numa_plan(const char *sysfs) {
    char path[512], buf[1024];
    online = 0;
    root = sysfs;
    if (mode == DSP_NUMA_OFF) return;
    dsp_fmt(path, sizeof path, "%s/devices/system/node/online", sysfs);
    int nodes = dsp_sys_read(path, buf, sizeof buf) > 0 ? parse_list(buf, 64, set_online, NULL) : 0;
    if (nodes < 2) return; /* one node (or no NUMA): nothing to place, at no cost */
    for (int n = 0; n < DSP_NUMA_NODES; n++) {
        if (!dsp_numa_online(n)) continue;
        dsp_fmt(path, sizeof path, "%s/devices/system/node/node%d/cpulist", sysfs, n);
        CPU_ZERO(&node_cpus[n]);
        if (dsp_sys_read(path, buf, sizeof buf) > 0)
            node_cpus_known[n] = parse_list(buf, CPU_MAX, set_cpu, &n) > 0;
    }
    if (mode >= 0 && (mode >= DSP_NUMA_NODES || !dsp_numa_online(mode))) {
        dsp_warn("DSP_NUMA=%d: no such node online (or not below %d); blocks go on the calling "
                 "CPU's node",
                 mode, DSP_NUMA_NODES);
        mode = DSP_NUMA_CPU;
    }
    __atomic_store_n(&dsp_numa_active, 1, __ATOMIC_RELEASE);
    dsp_stat_set(DSP_ST_numa_nodes, (uint64_t)nodes);
    dsp_info("NUMA placement (DSP_NUMA): %d nodes, blocks placed by %s", nodes, mode_name());
}

const char *dsp_numa_sysfs(void) {
    return "/sys";
}

void dsp_numa_set_device(const struct dsp_numa_device *d) {
    atomic_store_explicit(&device_ops, d, memory_order_release);
}

int dsp_numa_node_of_bus(const char *sysfs, const char *bus) {
    char path[512];
    size_t n; /* "-1" (no node) is no number */
    dsp_fmt(path, sizeof path, "%s/bus/pci/devices/%s/numa_node", sysfs, bus);
    return dsp_sys_read_size(path, &n) && n < 1000 ? (int)n : -1;
}

/* The node of the device current on the calling thread, read once per
 * device; -1 when there is none or its node is unknown (then the CPU's). */
static int current_device_node(void) {
    const struct dsp_numa_device *d = atomic_load_explicit(&device_ops, memory_order_acquire);
    int dev = d ? d->current() : -1;
    if (dev < 0 || dev >= DEVICE_MAX) return -1;
    int known = atomic_load_explicit(&device_node[dev], memory_order_relaxed);
    if (known) return known - 2;
    char bus[64] = "";
    int node = d->bus_id(dev, bus, sizeof bus) == 0 ? dsp_numa_node_of_bus(root, bus) : -1;
    if (node >= DSP_NUMA_NODES || !dsp_numa_online(node)) {
        dsp_once(DSP_LOG_INFO,
                 "the NUMA node of CUDA device %d (PCI %s) is unknown: its blocks go on the "
                 "calling CPU's node",
                 dev, bus[0] ? bus : "bus id unknown");
        node = -1;
    } else {
        dsp_info("CUDA device %d (PCI %s) is on NUMA node %d: its pinned blocks go there", dev, bus,
                 node);
    }
    atomic_store_explicit(&device_node[dev], node + 2, memory_order_relaxed);
    return node;
}

/* The calling CPU's node, or -1 when it is unknown or beyond the nodes
 * pooled apart: such a block is left to first touch, which puts it where the
 * thread runs, as without the shim; binding it to node 0 would not. */
static int cpu_node_now(void) {
    int cpu = dsp_sys_cpu();
    int n = cpu >= 0 && cpu < CPU_MAX ? cpu_node[cpu] - 1 : -1;
    return n >= 0 && n < DSP_NUMA_NODES ? n : -1;
}

int dsp_numa_pick(int device) {
    if (mode >= 0) return mode; /* checked at plan: online, below DSP_NUMA_NODES */
    if (device && mode != DSP_NUMA_CPU) {
        int n = current_device_node();
        if (n >= 0) {
            last_device_node = n + 1;
            return n;
        }
    } else if (mode == DSP_NUMA_DEVICE && last_device_node) {
        return last_device_node - 1;
    }
    return cpu_node_now();
}

const cpu_set_t *dsp_numa_cpus(int node) {
    return node >= 0 && node < DSP_NUMA_NODES && node_cpus_known[node] ? &node_cpus[node] : NULL;
}

/* Under the manager's mutex, as dsp_numa_count_pooled: one writer, so a
 * load and a store; nothing at all while placement is off, where no figure
 * of a node is shown. */
void dsp_numa_count_pinned(int node, size_t len, int sign) {
    if (!__atomic_load_n(&dsp_numa_active, __ATOMIC_RELAXED) || node < 0 || node >= DSP_NUMA_NODES)
        return;
    uint64_t v = atomic_load_explicit(&st[node].pinned, memory_order_relaxed);
    atomic_store_explicit(&st[node].pinned, sign > 0 ? v + len : v - len, memory_order_relaxed);
}

/* One line for every fallback of the process (issue 33: "one log line"); the
 * figures per node count them all. */
static int fallback_said;

void dsp_numa_fallback(int want, int got, size_t len) {
    if (want < 0 || want >= DSP_NUMA_NODES) return;
    atomic_fetch_add_explicit(&st[want].fallbacks, 1, memory_order_relaxed);
    dsp_stat_add(DSP_ST_numa_fallbacks, 1);
    char a[32];
    if (got >= 0)
        dsp_log_once(&fallback_said, DSP_LOG_WARN,
                     "NUMA node %d had no room for a block of %s: it is on node %d (further "
                     "fallbacks are counted per node in the statistics)",
                     want, dsp_fmt_bytes(a, sizeof a, len), got);
    else
        dsp_log_once(&fallback_said, DSP_LOG_WARN,
                     "cannot place a block of %s on NUMA node %d (%s): the kernel puts its "
                     "pages (further fallbacks are counted per node in the statistics)",
                     dsp_fmt_bytes(a, sizeof a, len), want, dsp_errname(-got));
}

int dsp_numa_node_stats(int node, struct dsp_numa_node_stats *out) {
    if (!__atomic_load_n(&dsp_numa_active, __ATOMIC_RELAXED) || node < 0 ||
        node >= DSP_NUMA_NODES || !dsp_numa_online(node))
        return 0;
    out->pinned = atomic_load_explicit(&st[node].pinned, memory_order_relaxed);
    out->pooled = __atomic_load_n(&dsp_numa_pooled[node], __ATOMIC_RELAXED);
    out->fallbacks = atomic_load_explicit(&st[node].fallbacks, memory_order_relaxed);
    return 1;
}

void dsp_numa_fork_child(void) {
    for (int n = 0; n < DSP_NUMA_NODES; n++) {
        atomic_store_explicit(&st[n].pinned, 0, memory_order_relaxed);
        __atomic_store_n(&dsp_numa_pooled[n], 0, __ATOMIC_RELAXED);
        atomic_store_explicit(&st[n].fallbacks, 0, memory_order_relaxed);
    }
}
