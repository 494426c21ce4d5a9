/* The CUDA layer's benchmark, against the libcudart test double:
 *   1. a 64 MiB cudaHostAlloc + cudaFreeHost cycle, through the shim (pooled)
 *      against the double alone (which populates and locks like real pinning);
 *   2. the overhead of calls the shim passes through: cudaPointerGetAttributes
 *      on ordinary memory, with and without the shim.
 * Run as `cuda_bench LIBDSPRELOAD [--quick]`: it runs itself without and with
 * LD_PRELOAD and prints one table. On a GPU machine, tests/gpu/ measures the
 * same against the real driver. */
#define DSP_CUDA_PROTOTYPES
#include "../preload/cuda_types.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>



/* One side of the comparison, in this process: prints "cycle_s passthrough_ns". */
static int measure(int quick) {
    size_t len = 64 << 20;
    int reps = quick ? 7 : 15, per = 0;
    double cyc[32], pt[32];
    void *p;
    if (cudaHostAlloc(&p, len, 0) || cudaFreeHost(p)) return 1; /* warm: first pin out of the way */
    for (int r = 0; r < reps; r++) {
        per = 0;
        double t = now(), budget = quick ? 0.05 : 0.2;
        do {
            if (cudaHostAlloc(&p, len, 0) || cudaFreeHost(p)) return 1;
            per++;
        } while (now() - t < budget);
        cyc[r] = (now() - t) / per;
    }
    char *heap = malloc(1 << 20), attr[128];
    for (int r = 0; r < reps; r++) {
        double t = now();
        for (int k = 0; k < 100000; k++) cudaPointerGetAttributes(attr, heap + (k & 1023));
        pt[r] = (now() - t) / 100000 * 1e9;
    }
    free(heap);
    printf("%.9f %.2f\n", median(cyc, reps), median(pt, reps));
    return 0;
}

static int run_side(char *const argv0, const char *preload, int quick, double *cycle, double *pass) {
    int fds[2];
    if (pipe(fds)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        if (preload) setenv("LD_PRELOAD", preload, 1);
        setenv("DSPRELOAD_BENCH_SIDE", "1", 1);
        execl(argv0, argv0, quick ? "--quick" : "--full", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[128] = {0};
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) || sscanf(buf, "%lf %lf", cycle, pass) != 2) return -1;
    return 0;
}

int main(int argc, char **argv) {
    int quick = argc > 2 && !strcmp(argv[2], "--quick");
    if (getenv("DSPRELOAD_BENCH_SIDE")) return measure(argc > 1 && !strcmp(argv[1], "--quick"));
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_bench LIBDSPRELOAD [--quick]\n");
        return 2;
    }
    double c0, p0, c1, p1;
    if (run_side(argv[0], NULL, quick, &c0, &p0) || run_side(argv[0], argv[1], quick, &c1, &p1)) {
        fprintf(stderr, "cuda_bench: a run failed\n");
        return 1;
    }
    printf("| benchmark (libcudart test double) | dspreload (median) | without (median) | ratio |\n");
    printf("|---|---|---|---|\n");
    printf("| 64 MiB cudaHostAlloc+cudaFreeHost cycle | %.2f us | %.2f ms | %.0fx |\n", c1 * 1e6, c0 * 1e3, c0 / c1);
    printf("| cudaPointerGetAttributes passed through | %.1f ns | %.1f ns | +%.1f ns |\n", p1, p0, p1 - p0);
    return 0;
}
