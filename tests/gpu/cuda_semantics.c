/* GPU check (tests/gpu/run.sh): the driver's memory behaviours that decide
 * whether data survives and what a fork costs (issue 13; docs/internals.md,
 * "The driver's memory and fork" and "Copies and graph capture"), measured the same way without the
 * shim (the driver's answer) and with it (ours, malloc hints on): cuda_semantics MODE [--gib G]
 * MODE:
 *   freehost_wait      does cudaFreeHost wait while another stream is busy
 *   nonblocking_reuse  malloc, async H2D, free, the next malloc written at
 *                      once: does the device still get the first data
 *   d2h_hinted         async D2H into malloc'd memory: landed on return?
 *   fork_time          fork with G GiB of cudaHostAlloc memory, then with G GiB
 *                      registered; does the child see the parent's data
 *   capture            cudaPointerGetAttributes during a global-mode capture
 *                      (allowed), then cudaHostAlloc during one (the driver
 *                      refuses it with 900 and invalidates the capture)
 *   numa               the NUMA node of the device (its PCI bus id's
 *                      numa_node) and the node where a 64 MiB cudaHostAlloc
 *                      block's pages landed (/proc/self/numa_maps; issue 33)
 * A stream is kept busy by a host function that sleeps (cudaLaunchHostFunc),
 * standing in for a kernel: no nvcc needed. Copies use min(G, 0.25) GiB. */
#include "gpu_check.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUSY_MS 300

static size_t copy_len;

static int all_are(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

static void busy(cudaStream_t s) {
    OK(cudaLaunchHostFunc(s, gpu_sleep_ms, (void *)(size_t)BUSY_MS));
}

static int freehost_wait(void) {
    void *h;
    OK(cudaHostAlloc(&h, copy_len, 0));
    memset(h, 1, copy_len);
    cudaStream_t s;
    OK(cudaStreamCreate(&s));
    busy(s);
    double t = gpu_now();
    OK(cudaFreeHost(h));
    double ms = (gpu_now() - t) * 1e3;
    OK(cudaStreamSynchronize(s));
    printf("freehost_ms %.3f ms\n", ms);
    printf("freehost_waits_for_device %d flag\n", ms >= BUSY_MS * 0.8);
    return 0;
}

static int nonblocking_reuse(void) {
    void *dev;
    OK(cudaMalloc(&dev, copy_len));
    cudaStream_t s;
    OK(cudaStreamCreate(&s));
    unsigned char *x = malloc(copy_len);
    if (!x) return printf("FAIL malloc(%zu)\n", copy_len), 1;
    memset(x, 0x5a, copy_len);
    busy(s); /* the copy runs after the program has moved on */
    OK(cudaMemcpyAsync(dev, x, copy_len, cudaMemcpyHostToDevice, s));
    free(x);
    unsigned char *y = malloc(copy_len); /* the next owner writes at once */
    if (!y) return printf("FAIL malloc(%zu)\n", copy_len), 1;
    memset(y, 0xa5, copy_len);
    OK(cudaStreamSynchronize(s));
    unsigned char *back = malloc(copy_len);
    if (!back) return printf("FAIL malloc(%zu)\n", copy_len), 1;
    OK(cudaMemcpy(back, dev, copy_len, cudaMemcpyDeviceToHost));
    printf("nonblocking_reuse_same_address %d flag\n", y == x);
    printf("nonblocking_reuse_intact %d flag\n", all_are(back, copy_len, 0x5a));
    free(y), free(back);
    OK(cudaFree(dev));
    return 0;
}

static int d2h_hinted(void) {
    void *dev;
    OK(cudaMalloc(&dev, copy_len));
    cudaStream_t s;
    OK(cudaStreamCreate(&s));
    OK(cudaMemsetAsync(dev, 0x77, copy_len, s));
    OK(cudaStreamSynchronize(s));
    unsigned char *h = malloc(copy_len);
    if (!h) return printf("FAIL malloc(%zu)\n", copy_len), 1;
    memset(h, 0, copy_len);
    busy(s);
    OK(cudaMemcpyAsync(h, dev, copy_len, cudaMemcpyDeviceToHost, s));
    int landed = all_are(h, copy_len, 0x77);
    OK(cudaStreamSynchronize(s));
    printf("d2h_pageable_landed_before_return %d flag\n", landed);
    printf("d2h_data_after_sync %d flag\n", all_are(h, copy_len, 0x77));
    free(h);
    OK(cudaFree(dev));
    return 0;
}

/* The fastest of 5 forks (until fork returns in the parent: one fork of
 * well under a millisecond is mostly noise); each child checks the data. */
static double timed_fork(const unsigned char *p, size_t len, unsigned char v, int *child_ok) {
    double best = 1e30;
    *child_ok = 1;
    for (int i = 0; i < 5; i++) {
        double t = gpu_now();
        pid_t pid = fork();
        if (pid == 0) _exit(p[0] == v && p[len / 2] == v && p[len - 1] == v ? 0 : 3);
        double ms = (gpu_now() - t) * 1e3;
        int st = 0;
        *child_ok &=
            pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (ms < best) best = ms;
    }
    return best;
}

static int fork_time(double gib) {
    size_t len = (size_t)(gib * (1 << 30));
    unsigned char *h;
    OK(cudaHostAlloc((void **)&h, len, 0));
    memset(h, 0x3c, len);
    printf("hostalloc_shared %d flag\n", gpu_vm_flag(h, "sh"));
    printf("hostalloc_dontdump %d flag\n", gpu_vm_flag(h, "dd"));
    printf("hostalloc_dontcopy %d flag\n", gpu_vm_flag(h, "dc")); /* MADV_DONTFORK */
    int ok1, ok2;
    double ms = timed_fork(h, len, 0x3c, &ok1);
    printf("fork_hostalloc_ms %.3f ms\n", ms);
    OK(cudaFreeHost(h));
    unsigned char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) return printf("NOT RUN: cannot map %g GiB\n", gib), 77;
    memset(r, 0x4b, len);
    OK(cudaHostRegister(r, len, 0));
    ms = timed_fork(r, len, 0x4b, &ok2);
    printf("fork_registered_ms %.3f ms\n", ms);
    OK(cudaHostUnregister(r));
    munmap(r, len);
    printf("fork_child_reads_parent_data %d flag\n", ok1 && ok2);
    return 0;
}

static int capture(void) {
    size_t n = 1 << 20;
    cudaStream_t s;
    OK(cudaStreamCreate(&s));
    void *dev, *h;
    OK(cudaMalloc(&dev, n));
    OK(cudaHostAlloc(&h, n, 0));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    OK(cudaMemsetAsync(dev, 0x42, n, s));
    struct gpu_attrs a;
    memset(&a, 0, sizeof a);
    cudaError_t e = cudaPointerGetAttributes(&a, h); /* what torch's is_pinned() calls */
    cudaGraph_t g = NULL;
    cudaError_t end = cudaStreamEndCapture(s, &g);
    cudaGetLastError();
    printf("capture_attributes_ok %d flag\n", e == 0 && a.type == 1);
    printf("capture_still_valid %d flag\n", end == 0 && g);
    int replay = 0;
    if (end == 0 && g) {
        cudaGraphExec_t x;
        OK(cudaGraphInstantiate(&x, g, 0));
        OK(cudaGraphLaunch(x, s));
        OK(cudaStreamSynchronize(s));
        unsigned char *back = malloc(n);
        if (!back) return printf("FAIL malloc\n"), 1;
        OK(cudaMemcpy(back, dev, n, cudaMemcpyDeviceToHost));
        replay = all_are(back, n, 0x42);
        free(back);
        cudaGraphExecDestroy(x);
        cudaGraphDestroy(g);
    }
    printf("capture_replay_ok %d flag\n", replay);
    /* An allocation inside a global capture: the driver's answer is 900, and
     * the capture is lost. The shim should answer the same. */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    OK(cudaMemsetAsync(dev, 0x43, n, s));
    void *q = NULL;
    cudaError_t ha = cudaHostAlloc(&q, n, 0);
    g = NULL;
    end = cudaStreamEndCapture(s, &g);
    cudaGetLastError();
    if (g) cudaGraphDestroy(g);
    if (ha == 0 && q) OK(cudaFreeHost(q));
    printf("capture_hostalloc_rc %d code\n", ha);
    printf("capture_hostalloc_invalidates %d flag\n", end != 0);
    OK(cudaFreeHost(h));
    OK(cudaFree(dev));
    return 0;
}

/* The node with most of the pages of the mapping holding p in
 * /proc/self/numa_maps ("N0=12 N1=3": the one starting last at or below p,
 * since neighbouring blocks share a mapping), -1 when not found. */
static int landed_node(const void *p) {
    char line[4096], found[4096] = "";
    uintptr_t at = 0;
    FILE *f = fopen("/proc/self/numa_maps", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        uintptr_t start = (uintptr_t)strtoull(line, NULL, 16);
        if (start <= (uintptr_t)p && start >= at)
            at = start, snprintf(found, sizeof found, "%s", line);
    }
    fclose(f);
    printf("numa_maps: %s", found[0] ? found : "(not found)\n");
    int best = -1;
    long most = 0;
    for (char *s = strstr(found, " N"); s; s = strstr(s + 1, " N")) {
        int node;
        long pages;
        if (sscanf(s, " N%d=%ld", &node, &pages) == 2 && pages > most) best = node, most = pages;
    }
    return best;
}

static int numa(void) {
    int dev = 0, node = -1;
    char bus[32] = "", path[128], buf[16];
    OK(cudaGetDevice(&dev));
    OK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
    for (char *c = bus; *c; c++)
        if (*c >= 'A' && *c <= 'F') *c = (char)(*c - 'A' + 'a');
    /* sysfs names the domain with 4 digits, the runtime with 4 or 8 */
    const char *name = strlen(bus) > 12 ? bus + strlen(bus) - 12 : bus;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", name);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(buf, sizeof buf, f)) node = atoi(buf);
        fclose(f);
    }
    size_t n = 64 << 20;
    void *h;
    OK(cudaHostAlloc(&h, n, 0));
    memset(h, 1, n);
    int got = landed_node(h);
    printf("device %d, PCI %s: NUMA node %d; the block's pages on node %d\n", dev, name, node, got);
    printf("device_numa_node %d node\n", node);
    printf("served_numa_node %d node\n", got);
    /* 1 where the device's node is unknown (nothing to place by) or matches */
    printf("served_on_device_node %d flag\n", node < 0 || got == node);
    OK(cudaFreeHost(h));
    return 0;
}

int main(int argc, char **argv) {
    double gib = 8;
    if (argc < 2) goto usage;
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 < argc && !strcmp(argv[i], "--gib") && atof(argv[i + 1]) > 0)
            gib = atof(argv[i + 1]);
        else
            goto usage;
    }
    copy_len = (size_t)((gib < 0.25 ? gib : 0.25) * (1 << 30));
    const char *m = argv[1];
    if (strcmp(m, "freehost_wait") && strcmp(m, "nonblocking_reuse") && strcmp(m, "d2h_hinted") &&
        strcmp(m, "fork_time") && strcmp(m, "capture") && strcmp(m, "numa"))
        goto usage;
    gpu_need_device();
    int rc = !strcmp(m, "freehost_wait")       ? freehost_wait()
             : !strcmp(m, "nonblocking_reuse") ? nonblocking_reuse()
             : !strcmp(m, "d2h_hinted")        ? d2h_hinted()
             : !strcmp(m, "fork_time")         ? fork_time(gib)
             : !strcmp(m, "numa")              ? numa()
                                               : capture();
    if (!rc) printf("PASS %s\n", m);
    return rc;
usage:
    printf("FAIL usage: cuda_semantics "
           "freehost_wait|nonblocking_reuse|d2h_hinted|fork_time|capture|numa "
           "[--gib G]\n");
    return 1;
}
