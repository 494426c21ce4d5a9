/* Placement of new blocks on a NUMA node (DSP_NUMA, issue 33): which node a
 * request is for, binding a span there before it is populated, where its
 * pages landed, and the figures per node. The machine's topology is read
 * once, at the first pin (dsp_numa_plan); with DSP_NUMA=off or one node
 * online nothing here runs again. The core knows nothing of CUDA: the CUDA
 * layer registers the device query (struct dsp_numa_device). */
#ifndef DSP_NUMA_H
#define DSP_NUMA_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

/* Nodes blocks are placed on and pooled apart, ids 0 to DSP_NUMA_NODES-1.
 * A node of a higher id is never asked for: its requests go to the
 * calling CPU's node, or node 0. */
#define DSP_NUMA_NODES 8

/* DSP_NUMA's modes; a number 0 or more is a fixed node. */
enum {
    DSP_NUMA_OFF = -1,
    DSP_NUMA_AUTO = -2,
    DSP_NUMA_DEVICE = -3,
    DSP_NUMA_CPU = -4,
};

/* At init, no I/O: the mode of DSP_NUMA's value ("" is auto). 0, or -EINVAL
 * for a value that is none of them (the mode is then auto). */
int dsp_numa_configure(const char *value);

/* At the first pin, under the manager's lock: reads node/online under
 * sysfs and, with more than one node and a mode other than off, each node's
 * cpulist. Placement is active from then on (dsp_numa_active). */
void dsp_numa_plan(const char *sysfs);

/* 1 while blocks are placed: more than one node online and DSP_NUMA not off.
 * Read on every allocation: with it 0 nothing below is called. */
extern int dsp_numa_active;

/* The sysfs root the manager hands dsp_numa_plan: "/sys". A function so
 * that the unit tests can replace it (--wrap) with a tree of their own, as
 * they replace the system calls (sys.h: dsp_sys_cpu, dsp_sys_bind_node,
 * dsp_sys_page_node). */
const char *dsp_numa_sysfs(void);

/* The CUDA device query, which the CUDA layer registers at its start
 * (preload/cuda_core.c): current() the device current on the calling thread
 * (the runtime's cudaGetDevice, or the driver's context's device), -1 when
 * none; bus_id() its PCI bus id ("0000:3b:00.0"), 0 or -1. Called outside
 * the manager's lock, on CUDA allocations only; the node of each device is
 * read once (/sys/bus/pci/devices/<bus id>/numa_node) and cached. */
struct dsp_numa_device {
    int (*current)(void);
    int (*bus_id)(int dev, char *buf, int len);
};
void dsp_numa_set_device(const struct dsp_numa_device *d);

/* The node a new block is for, outside the manager's lock, when
 * dsp_numa_active: device, 1 for a CUDA allocation (whose device decides
 * under auto and device), 0 for the rest (malloc hints, dsp_alloc: the
 * calling CPU's node, or under device the node of the device the thread last
 * allocated for). A node below DSP_NUMA_NODES, or -1 for none: the calling
 * CPU's node is unknown or beyond them, and the block is left to first touch
 * (pooled with node 0's). */
int dsp_numa_pick(int device);

/* The node of a PCI device under sysfs (bus/pci/devices/<bus>/numa_node),
 * or -1 when unknown. */
int dsp_numa_node_of_bus(const char *sysfs, const char *bus);

/* The CPUs of node (its cpulist, read at plan), or NULL when unknown: the
 * prefault threads of a block placed there run on them. */
const cpu_set_t *dsp_numa_cpus(int node);

/* Whether node is online (as read at plan): 1 or 0. */
int dsp_numa_online(int node);

/* The figures per node, for the statistics: bytes pinned (counted in the
 * budget) and pooled, and blocks that landed on another node than asked
 * (fallbacks), counted under the manager's lock. */
struct dsp_numa_node_stats {
    uint64_t pinned, pooled, fallbacks;
};
void dsp_numa_count_pinned(int node, size_t len, int sign);
/* Bytes pooled on each node, counted by the pool under the manager's lock
 * (pool.c), read by the statistics without it. */
extern uint64_t dsp_numa_pooled[DSP_NUMA_NODES];
static inline void dsp_numa_count_pooled(int node, size_t len, int sign) {
    uint64_t *c = &dsp_numa_pooled[node];
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + (sign > 0 ? len : -len),
                     __ATOMIC_RELAXED);
}
/* A block asked on want that landed on got (-1: could not be bound at all):
 * counted on want, and said once (the first time). */
void dsp_numa_fallback(int want, int got, size_t len);
/* Copies node's figures: 1 when node is online and placement active, else 0. */
int dsp_numa_node_stats(int node, struct dsp_numa_node_stats *out);
/* The fork child: nothing is pinned there, nothing pooled. */
void dsp_numa_fork_child(void);

#endif
