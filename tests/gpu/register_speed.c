/* GPU check (tests/gpu/run.sh), run without and with the shim:
 *   register_speed SIZE...      (SIZE: 64M, 1G, 16G)
 * For each size: anonymous memory, every page touched first (as torch's
 * pinned_use_cuda_host_register does), then cudaHostRegister timed
 * (register_<size>_GBps) and cudaHostUnregister. The driver pins page by page;
 * under the shim a registration of program memory passes through, so the
 * ratio shows what the shim's hook costs. A single registration larger than
 * r580 drivers accept (512 GiB, docs/internals.md, "The driver's memory and fork") cannot be tried
 * on a 128 GiB machine: the shim registers each of its blocks in one call. */
#include "gpu_check.h"

#include <string.h>
#include <sys/mman.h>

static int parse(const char *s, size_t *len, char *name, size_t cap) {
    char *end;
    double v = strtod(s, &end);
    size_t mul = *end == 'G' ? (size_t)1 << 30 : *end == 'M' ? (size_t)1 << 20 : 0;
    if (v <= 0 || !mul || end[1]) return -1;
    *len = (size_t)(v * (double)mul);
    snprintf(name, cap, "%g%s", v, *end == 'G' ? "GiB" : "MiB");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("FAIL usage: register_speed SIZE... (SIZE: a number and M or G: 64M, 16G)\n");
        return 1;
    }
    gpu_need_device();
    for (int i = 1; i < argc; i++) {
        size_t len;
        char name[32];
        if (parse(argv[i], &len, name, sizeof name)) {
            printf("FAIL size %s: a number and M or G (64M, 16G)\n", argv[i]);
            return 1;
        }
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            printf("NOT RUN: cannot map %s here\n", name);
            return 77;
        }
        for (size_t o = 0; o < len; o += 4096) ((volatile char *)p)[o] = (char)o;
        double t = gpu_now();
        OK(cudaHostRegister(p, len, 0));
        double reg = gpu_now() - t;
        struct gpu_attrs a;
        memset(&a, 0, sizeof a);
        OK(cudaPointerGetAttributes(&a, (char *)p + len - 1));
        if (a.type != 1) {
            printf("FAIL the last byte of a registered %s is not host-pinned memory (type %d)\n",
                   name, a.type);
            return 1;
        }
        t = gpu_now();
        OK(cudaHostUnregister(p));
        double unreg = gpu_now() - t;
        munmap(p, len);
        printf("register_%s_GBps %.2f GB/s\n", name, (double)len / reg / 1e9);
        printf("unregister_%s_s %.6f s\n", name, unreg);
    }
    printf("PASS register_speed\n");
    return 0;
}
