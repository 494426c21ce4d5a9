/* GPU check (tests/gpu/run.sh), run without and with the shim:
 *   cuda_cycle --cycles N --big-gib G
 * - the first cudaHostAlloc of G GiB (first_alloc_s): the driver pins at a few
 *   GB/s, the shim's parallel pre-fault and registration should be 3-10x faster;
 * - cudaHostAlloc + cudaFreeHost of 64 MiB, N times (cycle_s, per cycle): the
 *   driver pins and unpins each time, the shim's pool hands the block back;
 * - H2D and D2H bandwidth from that 64 MiB block (h2d_GBps, d2h_GBps), with
 *   the data checked both ways and the block's interior reported pinned. */
#include "gpu_check.h"

#include <string.h>

int main(int argc, char **argv) {
    int cycles = 100;
    double big_gib = 8;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--cycles"))
            cycles = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--big-gib"))
            big_gib = atof(argv[i + 1]);
        else {
            printf("FAIL usage: cuda_cycle [--cycles N] [--big-gib G]\n");
            return 1;
        }
    }
    if (cycles < 1 || big_gib <= 0) {
        printf("FAIL usage: --cycles takes a positive count, --big-gib a positive size\n");
        return 1;
    }
    gpu_need_device();
    size_t big = (size_t)(big_gib * (1 << 30));
    void *p;
    double t = gpu_now();
    OK(cudaHostAlloc(&p, big, 0));
    double first = gpu_now() - t;
    memset(p, 1, 1 << 20);
    OK(cudaFreeHost(p));
    printf("big_GiB %g GiB\n", big_gib);
    printf("first_alloc_s %.6f s\n", first);
    printf("first_alloc_GBps %.2f GB/s\n", (double)big / first / 1e9);

    size_t len = (size_t)64 << 20;
    t = gpu_now();
    for (int i = 0; i < cycles; i++) {
        OK(cudaHostAlloc(&p, len, 0));
        OK(cudaFreeHost(p));
    }
    printf("cycle_s %.9f s\n", (gpu_now() - t) / cycles);

    /* Data through a 64 MiB block, both directions, async on a stream. */
    void *dev;
    OK(cudaMalloc(&dev, len));
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
            printf("FAIL data differs at byte %zu after H2D and D2H\n", i);
            return 1;
        }
    struct gpu_attrs a;
    memset(&a, 0, sizeof a);
    OK(cudaPointerGetAttributes(&a, h + 4096));
    if (a.type != 1) {
        printf("FAIL the interior of a cudaHostAlloc block is not host-pinned memory (type %d)\n",
               a.type);
        return 1;
    }
    /* Best of 5 loops of 20 copies (about 25 ms each on an H200): one loop
     * alone is too short for a 0.98 goal. */
    for (int dir = 0; dir < 2; dir++) {
        double best = 1e30;
        for (int loop = 0; loop < 5; loop++) {
            t = gpu_now();
            for (int i = 0; i < 20; i++)
                OK(dir ? cudaMemcpyAsync(h, dev, len, cudaMemcpyDeviceToHost, s)
                       : cudaMemcpyAsync(dev, h, len, cudaMemcpyHostToDevice, s));
            OK(cudaStreamSynchronize(s));
            if (gpu_now() - t < best) best = gpu_now() - t;
        }
        printf("%s %.2f GB/s\n", dir ? "d2h_GBps" : "h2d_GBps", 20.0 * (double)len / best / 1e9);
    }
    OK(cudaFreeHost(h));
    OK(cudaFree(dev));
    OK(cudaStreamDestroy(s));
    printf("PASS cuda_cycle\n");
    return 0;
}
