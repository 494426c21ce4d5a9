/* NUMA placement (issue 33) is free where it does nothing: on a machine of
 * one node (this one) a CUDA allocation asks the device nothing, binds
 * nothing and shows no figures per node. The doubles answer the device
 * query the shim makes on machines of several nodes (each fake device has a
 * PCI bus id). The decisions on several nodes: tests/unit/test_numa.c. */
#include "cuda_test.h"

#include <string.h>

int cudaDeviceGetPCIBusId(char *buf, int len, int device);

static int one_node(void) {
    char buf[64] = "";
    FILE *f = fopen("/sys/devices/system/node/online", "r");
    if (!f) return 1; /* no NUMA: one node */
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    return ok && strcmp(buf, "0\n") == 0;
}

int main(void) {
    char bus[32];
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 1) == cudaSuccess);
    CHECK(strcmp(bus, "0000:19:00.0") == 0, "device 1's bus id: %s", bus);
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 2) == 101, "no device 2");
    cudaGetLastError();
    if (!one_node()) {
        printf("SKIP: this machine has several NUMA nodes; the unit test checks them\n");
        return 77;
    }
    int asked = fakecuda_count("cudaDeviceGetPCIBusId");
    void *p, *q;
    CHECK(cudaHostAlloc(&p, 1 << 20, 0) == cudaSuccess && is_pinned(p, 1 << 20));
    CHECK(cudaFreeHost(p) == cudaSuccess);
    CHECK(cudaHostAlloc(&q, 1 << 20, 0) == cudaSuccess && q == p, "a pool hit");
    CHECK(fakecuda_count("cudaDeviceGetPCIBusId") == asked, "no device query on one node");
    CHECK(stat_of("numa_nodes") == 0);
    CHECK(stat_of("numa_node0_pinned_bytes") == -1, "no figures per node");
    PASS();
}
