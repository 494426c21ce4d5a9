/* The CUDA layer's benchmark, against the libcudart test double:
 *   1. a 64 MiB cudaHostAlloc + cudaFreeHost cycle, through the shim (pooled)
 *      against the double alone (which populates and locks like real pinning);
 *   2. the overhead of calls the shim passes through: cudaPointerGetAttributes
 *      on ordinary memory, with and without the shim;
 *   3. a fork with 2 GiB (--quick: 256 MiB) of cudaHostAlloc memory: the
 *      double's is shared, as the driver's, so fork copies nothing; the
 *      shim's must do as well (issue 13: within 1.5x).
 * Run as `cuda_bench LIBDSPRELOAD [--quick] [--schema-json FILE]`: it runs
 * itself without and with LD_PRELOAD and prints one table (FILE: the figures in
 * bench/schema.h's format, for bench/run). On a GPU machine, tests/gpu/
 * measures the same against the real driver. */
#define DSP_CUDA_PROTOTYPES
#include "cuda_types.h"
#include "schema.h"
#include "side.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One side of the comparison, in this process: prints the median, min and max
 * of the cycle (s), then of the pass-through call (ns), and the repeats. */
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
    /* Fork with cudaHostAlloc memory held: until fork returns in the parent. */
    size_t flen = (size_t)(quick ? 256 : 2048) << 20;
    double fk[32];
    if (cudaHostAlloc(&p, flen, 0)) return 1;
    memset(p, 7, flen);
    for (int r = 0; r < reps; r++) {
        double t = now();
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        fk[r] = (now() - t) * 1e3;
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) return 1;
    }
    if (cudaFreeHost(p)) return 1;
    double mc = median(cyc, reps), mp = median(pt, reps), mf = median(fk, reps); /* sorts */
    printf("%.9f %.9f %.9f %.2f %.2f %.2f %.4f %.4f %.4f %d\n", mc, cyc[0], cyc[reps - 1], mp,
           pt[0], pt[reps - 1], mf, fk[0], fk[reps - 1], reps);
    return 0;
}

struct side {
    double cycle[3], pass[3], fork[3]; /* median, min, max */
    int reps;
};

static int run_side(char *const argv0, const char *preload, int quick, struct side *r) {
    char buf[256];
    if (bench_side(argv0, preload, quick, buf, sizeof buf) != 0 ||
        sscanf(buf, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %d", &r->cycle[0], &r->cycle[1],
               &r->cycle[2], &r->pass[0], &r->pass[1], &r->pass[2], &r->fork[0], &r->fork[1],
               &r->fork[2], &r->reps) != 10)
        return -1;
    return 0;
}

int main(int argc, char **argv) {
    if (getenv(BENCH_SIDE_ENV)) return measure(argc > 1 && !strcmp(argv[1], "--quick"));
    int quick;
    const char *json;
    if (schema_args(argc, argv, 2, "--schema-json",
                    "cuda_bench LIBDSPRELOAD [--quick] [--schema-json FILE]", &quick, &json) != 0)
        return 2;
    struct side w, s; /* without, with the shim */
    if (run_side(argv[0], NULL, quick, &w) || run_side(argv[0], argv[1], quick, &s)) {
        fprintf(stderr, "cuda_bench: a run failed\n");
        return 1;
    }
    printf(
        "| benchmark (libcudart test double) | dspreload (median) | without (median) | ratio |\n");
    printf("|---|---|---|---|\n");
    printf("| 64 MiB cudaHostAlloc+cudaFreeHost cycle | %.2f us | %.2f ms | %.0fx |\n",
           s.cycle[0] * 1e6, w.cycle[0] * 1e3, w.cycle[0] / s.cycle[0]);
    printf("| cudaPointerGetAttributes passed through | %.1f ns | %.1f ns | +%.1f ns |\n",
           s.pass[0], w.pass[0], s.pass[0] - w.pass[0]);
    printf("| fork with %d MiB of cudaHostAlloc memory | %.3f ms | %.3f ms | %.3gx |\n",
           quick ? 256 : 2048, s.fork[0], w.fork[0], w.fork[0] / s.fork[0]);
    if (!json) return 0;
    struct schema_fig *f = schema_figure(
        "cuda.cycle.64MiB", "64 MiB cudaHostAlloc+cudaFreeHost cycle (libcudart test double)", "us",
        s.cycle[0] * 1e6, s.cycle[1] * 1e6, s.cycle[2] * 1e6, s.reps, 0);
    schema_baseline(f, "the test double without the shim (populates, locks, unmaps)",
                    w.cycle[0] * 1e6, w.cycle[1] * 1e6, w.cycle[2] * 1e6);
    f = schema_figure("cuda.passthrough.cudaPointerGetAttributes",
                      "cudaPointerGetAttributes on ordinary memory, passed through", "ns",
                      s.pass[0], s.pass[1], s.pass[2], s.reps, 0);
    schema_baseline(f, "the test double without the shim", w.pass[0], w.pass[1], w.pass[2]);
    f = schema_figure("cuda.passthrough.overhead", "cost the shim adds to a passed-through call",
                      "ns", s.pass[0] - w.pass[0], s.pass[1] - w.pass[2], s.pass[2] - w.pass[1],
                      s.reps, 0);
    f = schema_figure(quick ? "cuda.fork.256MiB" : "cuda.fork.2GiB",
                      quick ? "fork with 256 MiB of cudaHostAlloc memory"
                            : "fork with 2 GiB of cudaHostAlloc memory",
                      "ms", s.fork[0], s.fork[1], s.fork[2], s.reps, 0);
    schema_baseline(f, "the test double without the shim (shared memory, as the driver's)",
                    w.fork[0], w.fork[1], w.fork[2]);
    schema_goal(f, "ratio >= 0.67"); /* within 1.5x (issue 13) */
    return schema_write(json, "cuda_bench", quick) ? 1 : 0;
}
