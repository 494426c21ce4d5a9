/* The CUDA layer's benchmark, against the libcudart test double:
 *   1. a 64 MiB cudaHostAlloc + cudaFreeHost cycle, through the shim (pooled)
 *      against the double alone (which populates and locks like real pinning);
 *   2. the overhead of calls the shim passes through: cudaPointerGetAttributes
 *      on ordinary memory, with and without the shim;
 *   3. a fork with 2 GiB (--quick: 256 MiB) of cudaHostAlloc memory, in a
 *      process with a second thread (as every CUDA process has): the
 *      double's is shared, as the driver's, so fork copies nothing; the
 *      shim's must do as well (issue 13: within 1.5x);
 *   4. the first pin of 1 GiB served (cudaHostAlloc of memory not pooled):
 *      the shim's is shared memory now, as the driver's; against the double's
 *      cudaHostAlloc (shared anonymous memory, FOLL_PIN) and against
 *      posix_memalign+mlock (measured on the side without the shim).
 * Run as `cuda_bench LIBDSPRELOAD [--quick] [--schema-json FILE]`: it runs
 * itself without and with LD_PRELOAD and prints one table (FILE: the figures in
 * bench/schema.h's format, for bench/run). On a GPU machine, tests/gpu/
 * measures the same against the real driver. */
#define DSP_CUDA_PROTOTYPES
#include "cuda_types.h"
#include "schema.h"
#include "side.h"
#include "timing.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Forks timed per side (see measure). */
enum { FORKS = 201, QUICK_FORKS = 51 };

static void *idle(void *arg) {
    pause();
    return arg;
}

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
    /* Fork with cudaHostAlloc memory held: until fork returns in the parent.
     * In a thread of its own the whole time, on both sides: a CUDA process
     * always has the driver's threads, and the double alone would leave the
     * baseline single-threaded, where glibc's fork skips its own malloc and
     * stdio locks (three page faults fewer, each a visible part of a
     * fork's time; issue 13). Many forks, each well under a millisecond: a
     * fork's time swings with what the other CPU runs (whether the child
     * starts beside the parent or preempts it, its exit then counted in the
     * parent's fork), so a median of 15 moved the ratio from 0.62 to 0.98
     * between two runs on a loaded machine (issue 29). */
    pthread_t idler;
    if (pthread_create(&idler, NULL, idle, NULL) != 0) return 1;
    size_t flen = (size_t)(quick ? 256 : 2048) << 20;
    int forks = quick ? QUICK_FORKS : FORKS;
    double fk[FORKS];
    if (cudaHostAlloc(&p, flen, 0)) return 1;
    memset(p, 7, flen);
    for (int r = 0; r < forks; r++) {
        double t = now();
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        fk[r] = (now() - t) * 1e3;
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) return 1;
    }
    if (cudaFreeHost(p)) return 1;
    /* First pins of 1 GiB: the shim's pool is emptied after each (dsp_trim),
     * so every cudaHostAlloc maps, populates and locks new memory. */
    size_t (*trim)(void) = (size_t(*)(void))dlsym(RTLD_DEFAULT, "dsp_trim");
    size_t glen = (size_t)1 << 30;
    int fr = quick ? 3 : 5;
    double first[8], pm[8];
    for (int r = 0; r < fr; r++) {
        double t = now();
        if (cudaHostAlloc(&p, glen, 0)) return 1;
        first[r] = now() - t;
        if (cudaFreeHost(p)) return 1;
        if (trim) trim();
        t = now();
        if (posix_memalign(&p, 4096, glen) || mlock(p, glen)) return 1;
        pm[r] = now() - t;
        munlock(p, glen);
        free(p);
    }
    double *v[5] = {cyc, pt, fk, first, pm};
    int n[5] = {reps, reps, forks, fr, fr};
    bench_emit_n(v, n, 5, reps);
    return 0;
}

int main(int argc, char **argv) {
    int quick, done;
    const char *json;
    struct bench_figs w, s; /* without, with the shim */
    int rc = bench_two_sides(argc, argv, "cuda_bench", measure, &quick, &json, &w, &s, &done);
    if (done) return rc;
    printf(
        "| benchmark (libcudart test double) | dspreload (median) | without (median) | ratio |\n");
    printf("|---|---|---|---|\n");
    printf("| 64 MiB cudaHostAlloc+cudaFreeHost cycle | %.2f us | %.2f ms | %.0fx |\n",
           s.f[0][0] * 1e6, w.f[0][0] * 1e3, w.f[0][0] / s.f[0][0]);
    printf("| cudaPointerGetAttributes passed through | %.1f ns | %.1f ns | +%.1f ns |\n",
           s.f[1][0], w.f[1][0], s.f[1][0] - w.f[1][0]);
    printf("| fork with %d MiB of cudaHostAlloc memory | %.3f ms | %.3f ms | %.3gx |\n",
           quick ? 256 : 2048, s.f[2][0], w.f[2][0], w.f[2][0] / s.f[2][0]);
    printf("| first pin of 1 GiB served (cudaHostAlloc) | %.1f ms | %.1f ms | %.2fx |\n",
           s.f[3][0] * 1e3, w.f[3][0] * 1e3, w.f[3][0] / s.f[3][0]);
    printf("| first pin of 1 GiB served, against posix_memalign+mlock | %.1f ms | %.1f ms | "
           "%.2fx |\n",
           s.f[3][0] * 1e3, w.f[4][0] * 1e3, w.f[4][0] / s.f[3][0]);
    if (!json) return 0;
    struct schema_fig *f = schema_figure(
        "cuda.cycle.64MiB", "64 MiB cudaHostAlloc+cudaFreeHost cycle (libcudart test double)", "us",
        s.f[0][0] * 1e6, s.f[0][1] * 1e6, s.f[0][2] * 1e6, s.reps, 0);
    schema_baseline(f, "the test double without the shim (populates, locks, unmaps)",
                    w.f[0][0] * 1e6, w.f[0][1] * 1e6, w.f[0][2] * 1e6);
    f = schema_figure("cuda.passthrough.cudaPointerGetAttributes",
                      "cudaPointerGetAttributes on ordinary memory, passed through", "ns",
                      s.f[1][0], s.f[1][1], s.f[1][2], s.reps, 0);
    schema_baseline(f, "the test double without the shim", w.f[1][0], w.f[1][1], w.f[1][2]);
    f = schema_figure("cuda.passthrough.overhead", "cost the shim adds to a passed-through call",
                      "ns", s.f[1][0] - w.f[1][0], s.f[1][1] - w.f[1][2], s.f[1][2] - w.f[1][1],
                      s.reps, 0);
    f = schema_figure(quick ? "cuda.fork.256MiB" : "cuda.fork.2GiB",
                      quick ? "fork with 256 MiB of cudaHostAlloc memory"
                            : "fork with 2 GiB of cudaHostAlloc memory",
                      "ms", s.f[2][0], s.f[2][1], s.f[2][2], quick ? QUICK_FORKS : FORKS, 0);
    schema_baseline(f, "the test double without the shim (shared memory, as the driver's)",
                    w.f[2][0], w.f[2][1], w.f[2][2]);
    /* Within 1.5x (issue 13). What the shim adds is the kernel's copy of its
     * own mappings (about ten; docs/cuda.md, "Keeping the promises the real
     * calls make"): 1.2x on the development VM. */
    schema_goal(f, "ratio >= 0.67");
    f = schema_figure("cuda.first_pin.1GiB", "first pin of 1 GiB served by cudaHostAlloc", "ms",
                      s.f[3][0] * 1e3, s.f[3][1] * 1e3, s.f[3][2] * 1e3, s.reps, 0);
    schema_baseline(f, "the test double's cudaHostAlloc (shared memory, FOLL_PIN)", w.f[3][0] * 1e3,
                    w.f[3][1] * 1e3, w.f[3][2] * 1e3);
    f = schema_figure("cuda.first_pin.1GiB.vs_mlock",
                      "first pin of 1 GiB served, against posix_memalign+mlock", "ms",
                      s.f[3][0] * 1e3, s.f[3][1] * 1e3, s.f[3][2] * 1e3, s.reps, 0);
    schema_baseline(f, "posix_memalign + mlock of 1 GiB", w.f[4][0] * 1e3, w.f[4][1] * 1e3,
                    w.f[4][2] * 1e3);
    return schema_write(json, "cuda_bench", quick) ? 1 : 0;
}
