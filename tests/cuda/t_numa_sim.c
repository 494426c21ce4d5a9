/* NUMA placement end to end (issue 33), under the library built for a
 * simulated machine of two nodes (numa_sim.c): the runtime double's device d
 * has PCI bus id 0000:(0x18+d):00.0, and the test's sysfs tree puts device 0
 * on node 0, device 1 and CPU 1 on node 1. A cudaHostAlloc block goes on its
 * device's node, whatever CPU the thread runs on; the pool hands it back
 * only to the same node; a dsp_alloc block goes on the calling CPU's. */
#include "cuda_test.h"

#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int cudaSetDevice(int device);

static char root[64];

static void put(const char *rel, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "%s", path);
    fputs(text, f);
    fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static long long node_pinned(int node) {
    char key[64];
    snprintf(key, sizeof key, "numa_node%d_pinned_bytes", node);
    return stat_of(key);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/dsp-numa-sim-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    put("devices/system/node/online", "0-1\n");
    put("devices/system/node/node0/cpulist", "0\n");
    put("devices/system/node/node1/cpulist", "1\n");
    put("bus/pci/devices/0000:18:00.0/numa_node", "0\n");
    put("bus/pci/devices/0000:19:00.0/numa_node", "1\n");
    setenv("DSP_TEST_SYSFS", root, 1); /* read at the first pin */
    setenv("DSP_TEST_CPU", "0", 1);

    size_t n = 1 << 20;
    void *p, *q, *r;
    CHECK(cudaSetDevice(1) == cudaSuccess);
    CHECK(cudaHostAlloc(&p, n, 0) == cudaSuccess && is_pinned(p, n));
    CHECK(stat_of("numa_nodes") == 2, "two nodes read from the test's sysfs");
    CHECK(node_pinned(1) == (long long)n, "device 1's node, not CPU 0's: %lld", node_pinned(1));
    CHECK(node_pinned(0) == 0);
    CHECK(cudaFreeHost(p) == cudaSuccess);
    CHECK(cudaSetDevice(0) == cudaSuccess);
    CHECK(cudaHostAlloc(&q, n, 0) == cudaSuccess);
    CHECK(q != p, "device 1's pooled block is not handed to device 0");
    CHECK(node_pinned(0) == (long long)n);
    CHECK(cudaSetDevice(1) == cudaSuccess);
    CHECK(cudaHostAlloc(&r, n, 0) == cudaSuccess && r == p, "device 1 takes its own back");
    /* No device involved: the calling CPU's node. */
    void *(*alloc)(size_t) = (void *(*)(size_t))shim("dsp_alloc");
    setenv("DSP_TEST_CPU", "1", 1);
    CHECK(alloc(4 << 20) != NULL);
    CHECK(node_pinned(1) == (long long)n + (4 << 20), "%lld", node_pinned(1));
    CHECK(stat_of("numa_fallbacks") == 0);
    nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    PASS();
}
