/* GPU check, C side (tests/gpu/run.sh): against the real driver, linked with the
 * shared libcudart. Prints one line per figure: name value unit. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define OK(call)                                                                       \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "FAIL %s: %s\n", #call, cudaGetErrorString(e_));           \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 1000;
    size_t big = (size_t)(argc > 2 ? atoi(argv[2]) : 8) << 30;
    OK(cudaFree(0)); /* context up front: not part of any timing */
    void *p;
    double t = now();
    OK(cudaHostAlloc(&p, big, 0));
    double first = now() - t;
    memset(p, 1, 1 << 20);
    OK(cudaFreeHost(p));
    printf("first_alloc_%zuGiB %.6f s\n", big >> 30, first);

    size_t len = 64 << 20;
    void *dev;
    OK(cudaMalloc(&dev, len));
    t = now();
    for (int i = 0; i < cycles; i++) {
        OK(cudaHostAlloc(&p, len, 0));
        OK(cudaFreeHost(p));
    }
    printf("cycle_64MiB %.9f s\n", (now() - t) / cycles);

    /* Data through a served block, both directions, async on a stream. */
    cudaStream_t s;
    OK(cudaStreamCreate(&s));
    unsigned char *h;
    OK(cudaHostAlloc((void **)&h, len, 0));
    for (size_t i = 0; i < len; i++) h[i] = (unsigned char)(i * 131);
    OK(cudaMemcpyAsync(dev, h, len, cudaMemcpyHostToDevice, s));
    OK(cudaStreamSynchronize(s));
    memset(h, 0, len);
    OK(cudaMemcpyAsync(h, dev, len, cudaMemcpyDeviceToHost, s));
    OK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < len; i++)
        if (h[i] != (unsigned char)(i * 131)) {
            fprintf(stderr, "FAIL data mismatch at %zu\n", i);
            return 1;
        }
    struct cudaPointerAttributes a;
    OK(cudaPointerGetAttributes(&a, h + 4096));
    if (a.type != cudaMemoryTypeHost) {
        fprintf(stderr, "FAIL slice of a served block is not host-pinned (type %d)\n", a.type);
        return 1;
    }
    t = now();
    for (int i = 0; i < 20; i++) OK(cudaMemcpyAsync(dev, h, len, cudaMemcpyHostToDevice, s));
    OK(cudaStreamSynchronize(s));
    printf("h2d_GBps %.2f GB/s\n", 20.0 * len / (now() - t) / 1e9);
    OK(cudaFreeHost(h));
    printf("PASS\n");
    return 0;
}
