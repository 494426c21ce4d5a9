/* NUMA placement (src/numa.c, issue 33) on a simulated machine of two nodes:
 * the sysfs tree the code reads is one of the test's own (dsp_numa_sysfs
 * wrapped), and so are the calling CPU (dsp_sys_cpu), the binding
 * (dsp_sys_bind_node: recorded; passed to the kernel for node 0, the only
 * one this machine has) and where pages landed (dsp_sys_page_node). The
 * device query is a hook as the CUDA layer's. */
#include "block.h"
#include "helpers.h"
#include "numa.h"
#include "span_kind.h"
#include "sys.h"

#include "harness.h"
#include <dspreload.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEN (1 << 20) /* above the chunked sizes: one span a block */

static char root[64];
static const char *online = "0-1";
static int cpu, cpu_asked, binds, bound_node = -1, full_node = -1, bind_err;

static void put(const char *rel, const char *text) {
    char path[256], dir[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(s - path), path);
        mkdir(dir, 0700);
    }
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static void teardown(void) {
    nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void machine(void) {
    snprintf(root, sizeof root, "/tmp/dsp-numa-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    atexit(teardown); /* each test is a process of its own */
    put("devices/system/node/online", online);
    put("devices/system/node/node0/cpulist", "0\n");
    put("devices/system/node/node1/cpulist", "1\n");
    put("bus/pci/devices/0000:18:00.0/numa_node", "0\n");
    put("bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
    put("bus/pci/devices/0000:99:00.0/numa_node", "-1\n");
}

const char *__real_dsp_numa_sysfs(void);
const char *__wrap_dsp_numa_sysfs(void) {
    return root;
}
int __real_dsp_sys_cpu(void);
int __wrap_dsp_sys_cpu(void) {
    cpu_asked++;
    return cpu;
}
int __real_dsp_sys_bind_node(void *base, size_t len, int node);
int __wrap_dsp_sys_bind_node(void *base, size_t len, int node) {
    binds++;
    bound_node = node;
    if (bind_err) return bind_err;
    return node == 0 ? __real_dsp_sys_bind_node(base, len, node) : 0;
}
/* Where the pages are: the node bound to, but a full node's pages go to the
 * other one. */
int __real_dsp_sys_page_node(const void *p);
int __wrap_dsp_sys_page_node(const void *p) {
    (void)p;
    if (bound_node < 0) return 0;
    return bound_node == full_node ? 1 - bound_node : bound_node;
}

/* The device current on the calling thread, as the CUDA layer answers. */
static int device = -1, device_asked;
static const char *const bus[] = {"0000:18:00.0", "0000:3b:00.0", "0000:99:00.0"};
static int current(void) {
    device_asked++;
    return device;
}
static int bus_id(int dev, char *buf, int len) {
    snprintf(buf, (size_t)len, "%s", bus[dev]);
    return 0;
}
static const struct dsp_numa_device gpus = {current, bus_id};

static void freed(uintptr_t base, size_t len) {
    (void)base, (void)len;
}
static const struct dsp_span_kind cuda = {freed, kind_no_room, kind_nothing, kind_none, NULL, NULL};

static void two_nodes(void) {
    machine();
    dsp_numa_set_device(&gpus);
}
/* Two nodes and DSP_NUMA=value. */
static void numa_mode(const char *value) {
    two_nodes();
    setenv("DSP_NUMA", value, 1);
}

/* A block of dsp_alloc from a thread on cpu: the node it was bound to. */
static void *alloc_on_cpu(int c) {
    cpu = c;
    bound_node = -1;
    void *p = dsp_alloc(LEN);
    cr_assert_not_null(p);
    return p;
}

Test(numa, a_block_goes_on_the_calling_cpus_node, .init = two_nodes) {
    alloc_on_cpu(1);
    cr_assert_eq(bound_node, 1, "a thread on CPU 1 gets node 1's memory");
    alloc_on_cpu(0);
    cr_assert_eq(bound_node, 0);
    cr_assert_eq(stat_of("numa_nodes"), 2);
    cr_assert_eq(stat_of("numa_node1_pinned_bytes"), LEN);
    cr_assert_eq(stat_of("numa_node0_pinned_bytes"), LEN);
    cr_assert_eq(stat_of("numa_fallbacks"), 0);
}

/* A CPU that is in no node's cpulist (or on a node beyond those pooled apart)
 * is left to first touch, as without the shim: it was bound to node 0. */
Test(numa, a_cpu_of_no_known_node_is_left_to_first_touch_not_node_0, .init = two_nodes) {
    alloc_on_cpu(5);
    cr_assert_eq(binds, 0, "bound to node %d", bound_node);
    alloc_on_cpu(1);
    cr_assert_eq(bound_node, 1, "a known CPU is still placed");
    cr_assert_eq(stat_of("numa_fallbacks"), 0);
}

/* A CUDA allocation (served by the CUDA layer's kind) goes on the node of the
 * device current on the thread, wherever the thread runs; its pool too. */
Test(numa, a_cuda_block_goes_on_its_devices_node, .init = two_nodes) {
    int k = dsp_span_kind_add(&cuda);
    struct dsp_block blk;
    cpu = 0;
    device = 1; /* on node 1 */
    void *p = dsp_block_alloc(LEN, DSP_BLK_SERVED(k), &blk);
    cr_assert_not_null(p);
    cr_assert_eq(bound_node, 1, "device 1's node, not the CPU's");
    cr_assert_eq(dsp_block_set_registered((uintptr_t)p, k, 0), 0);
    cr_assert_eq(dsp_block_free((uintptr_t)p), 0);
    cr_assert_eq(stat_of("numa_node1_pooled_bytes"), LEN);
    device = 0;
    bound_node = -1;
    void *q = dsp_block_alloc(LEN, DSP_BLK_SERVED(k), &blk);
    cr_assert_neq(q, p, "device 1's pooled block is not handed to device 0");
    cr_assert_eq(bound_node, 0);
    device = 1;
    void *r = dsp_block_alloc(LEN, DSP_BLK_SERVED(k), &blk);
    cr_assert_eq(r, p, "device 1's next allocation reuses it");
    /* A device whose node sysfs does not know: the calling CPU's. */
    device = 2;
    cpu = 1;
    bound_node = -1;
    dsp_block_alloc(LEN, DSP_BLK_SERVED(k), &blk);
    cr_assert_eq(bound_node, 1);
    /* Plain blocks never ask the device under auto. */
    int asked = device_asked;
    alloc_on_cpu(0);
    cr_assert_eq(device_asked, asked);
    cr_assert_eq(bound_node, 0);
}

Test(numa, the_pool_never_hands_a_block_across_nodes, .init = two_nodes) {
    void *p = alloc_on_cpu(1);
    cr_assert_eq(dsp_free(p), 0);
    long long misses = stat_of("pool_misses");
    void *q = alloc_on_cpu(0);
    cr_assert_neq(q, p, "node 1's block is not reused on node 0");
    cr_assert_eq(stat_of("pool_misses"), misses + 1);
    cr_assert_eq(bound_node, 0, "a new block, placed on node 0");
    int before = binds;
    void *r = alloc_on_cpu(1);
    cr_assert_eq(r, p, "node 1's request takes node 1's block");
    cr_assert_eq(binds, before, "a pool hit binds nothing");
    cr_assert_eq(dsp_free(q), 0);
    cr_assert_eq(stat_of("numa_node0_pooled_bytes"), LEN);
    cr_assert_eq(stat_of("numa_node1_pooled_bytes"), 0);
}

/* Freed neighbours on different nodes stay apart: a merge would make one
 * span of two nodes' memory. */
Test(numa, neighbours_of_two_nodes_never_merge, .init = two_nodes) {
    void *a = alloc_on_cpu(0), *b = alloc_on_cpu(1);
    cr_assert_eq(dsp_free(a), 0);
    cr_assert_eq(dsp_free(b), 0);
    void *c = alloc_on_cpu(0);
    cr_assert_eq(c, a);
    cr_assert_eq(stat_of("numa_node1_pooled_bytes"), LEN);
}

static void node1_full(void) {
    two_nodes();
    full_node = 1;
}
Test(numa, a_full_node_falls_back_with_one_log_line, .init = node1_full) {
    log_capture_start();
    void *p = alloc_on_cpu(1);
    alloc_on_cpu(1);
    const char *log = log_capture_collect();
    cr_assert(strstr(log, "NUMA node 1 had no room"), "%s", log);
    cr_assert_null(strstr(strstr(log, "no room") + 1, "no room"), "one line: %s", log);
    cr_assert_eq(stat_of("numa_node1_fallbacks"), 2);
    cr_assert_eq(stat_of("numa_fallbacks"), 2);
    cr_assert_eq(stat_of("numa_node0_pinned_bytes"), 2 * LEN, "counted where they landed");
    /* Pooled where its pages are: node 0's requests reuse it. */
    cr_assert_eq(dsp_free(p), 0);
    cr_assert_eq(stat_of("numa_node0_pooled_bytes"), LEN);
    cr_assert_eq(alloc_on_cpu(0), p);
}

static void bind_refused(void) {
    two_nodes();
    bind_err = -EINVAL;
}
Test(numa, a_node_that_cannot_be_bound_still_serves, .init = bind_refused) {
    log_capture_start();
    void *p = alloc_on_cpu(1);
    alloc_on_cpu(1);
    const char *log = log_capture_collect();
    cr_assert(dsp_is_pinned(p, LEN), "the caller gets its block all the same");
    cr_assert(strstr(log, "cannot place a block of 1 MiB on NUMA node 1 (EINVAL)"), "%s", log);
    cr_assert_null(strstr(strstr(log, "cannot place") + 1, "cannot place"), "one line: %s", log);
    cr_assert_eq(stat_of("numa_node1_fallbacks"), 2);
}

static void fixed_node(void) {
    numa_mode("1");
}
Test(numa, a_fixed_node_takes_every_block, .init = fixed_node) {
    alloc_on_cpu(0);
    cr_assert_eq(bound_node, 1);
    cr_assert_eq(cpu_asked, 0, "no CPU asked");
}

static void missing_node(void) {
    numa_mode("5");
}
/* A DSP_NUMA that cannot be followed: said, and the CPU's node instead. */
static void placed_by_the_cpu_saying(const char *said) {
    log_capture_start();
    alloc_on_cpu(1);
    cr_assert_eq(bound_node, 1);
    const char *log = log_capture_collect();
    cr_assert(strstr(log, said), "%s", log);
}
Test(numa, a_fixed_node_not_online_falls_back_to_the_cpus, .init = missing_node) {
    placed_by_the_cpu_saying("DSP_NUMA=5: no such node online");
}

static void device_mode(void) {
    numa_mode("device");
}
Test(numa, device_mode_places_plain_blocks_by_the_last_device, .init = device_mode) {
    int k = dsp_span_kind_add(&cuda);
    struct dsp_block blk;
    alloc_on_cpu(0);
    cr_assert_eq(bound_node, 0, "no device yet: the CPU's node");
    device = 1;
    cr_assert_not_null(dsp_block_alloc(LEN, DSP_BLK_SERVED(k), &blk));
    alloc_on_cpu(0);
    cr_assert_eq(bound_node, 1, "the thread's device's node");
}

static void cpu_mode(void) {
    numa_mode("cpu");
}
Test(numa, cpu_mode_never_asks_the_device, .init = cpu_mode) {
    int k = dsp_span_kind_add(&cuda);
    struct dsp_block blk;
    cpu = 0;
    device = 1;
    cr_assert_not_null(dsp_block_alloc(LEN, DSP_BLK_SERVED(k), &blk));
    cr_assert_eq(bound_node, 0);
    cr_assert_eq(device_asked, 0);
}

static void off(void) {
    numa_mode("off");
}
Test(numa, off_places_nothing, .init = off) {
    alloc_on_cpu(1);
    cr_assert_eq(binds, 0);
    cr_assert_eq(cpu_asked, 0);
    cr_assert_eq(stat_of("numa_nodes"), 0);
    cr_assert_eq(stat_of("numa_node0_pinned_bytes"), -1, "no figures per node");
}

static void one_node(void) {
    online = "0\n";
    two_nodes();
}
/* The common machine: nothing is bound, nothing asked, at no cost. */
Test(numa, one_node_places_nothing, .init = one_node) {
    void *p = alloc_on_cpu(0);
    cr_assert_eq(dsp_free(p), 0);
    alloc_on_cpu(0);
    cr_assert_eq(binds, 0);
    cr_assert_eq(cpu_asked, 0);
    cr_assert_eq(stat_of("numa_nodes"), 0);
}

static void bad_value(void) {
    numa_mode("socket");
}
Test(numa, a_value_of_no_mode_is_auto_with_a_warning, .init = bad_value) {
    placed_by_the_cpu_saying("DSP_NUMA=socket is none of");
}

/* The threads that populate a large block run on its node's CPUs: the
 * affinity they are created with, recorded. */
static int affinity_set, affinity_cpu1_only;
int __real_pthread_attr_setaffinity_np(pthread_attr_t *a, size_t n, const cpu_set_t *set);
int __wrap_pthread_attr_setaffinity_np(pthread_attr_t *a, size_t n, const cpu_set_t *set) {
    affinity_set++;
    affinity_cpu1_only = CPU_COUNT_S(n, set) == 1 && CPU_ISSET_S(1, n, set);
    return __real_pthread_attr_setaffinity_np(a, n, set);
}
static void two_threads(void) {
    numa_mode("auto");
    setenv("DSP_PREFAULT_THREADS", "2", 1);
}
Test(numa, a_large_blocks_populating_threads_run_on_its_node, .init = two_threads) {
    cpu = 1;
    cr_assert_not_null(dsp_alloc(256 << 20));
    cr_assert_eq(bound_node, 1);
    cr_assert_eq(affinity_set, 1, "the helper threads get an affinity");
    cr_assert(affinity_cpu1_only, "node 1's CPUs: CPU 1");
}

/* The sysfs readers themselves, on the simulated tree. */
Test(numa, a_pci_devices_node_is_read_from_sysfs, .init = machine) {
    cr_assert_eq(dsp_numa_node_of_bus(root, "0000:3b:00.0"), 1);
    cr_assert_eq(dsp_numa_node_of_bus(root, "0000:99:00.0"), -1, "-1: unknown");
    cr_assert_eq(dsp_numa_node_of_bus(root, "0000:00:00.9"), -1, "no such device");
}

/* Real placement, on node 0 (the machine's): the mapping is bound to it, as
 * /proc/self/numa_maps says, and its pages are there. */
static int numa_maps_line(const void *p, char *out, size_t cap) {
    FILE *f = fopen("/proc/self/numa_maps", "r");
    if (!f) return -1;
    char want[32];
    snprintf(want, sizeof want, "%lx ", (unsigned long)(uintptr_t)p);
    int found = -1;
    while (found && fgets(out, (int)cap, f))
        if (strncmp(out, want, strlen(want)) == 0) found = 0;
    fclose(f);
    return found;
}
Test(numa, a_block_on_node_0_is_bound_there_and_lands_there, .init = two_nodes) {
    char *p = alloc_on_cpu(0);
    char line[1024];
    cr_assert_eq(numa_maps_line(p, line, sizeof line), 0, "its mapping in /proc/self/numa_maps");
    cr_assert(strstr(line, "prefer:0"), "bound with MPOL_PREFERRED to node 0: %s", line);
    cr_assert(strstr(line, " N0="), "its pages are on node 0: %s", line);
    cr_assert_eq(__real_dsp_sys_page_node(p + LEN - 4096), 0);
}
