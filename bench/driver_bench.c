/* The driver API layer's benchmark (issue 15), against the libcuda.so.1 test
 * double, found as JAX/XLA find the driver (dlopen RTLD_LOCAL, dlsym):
 *   1. the cost the dlsym hook adds to lookups it does not serve: a handle
 *      lookup (dlsym(libm, "cos"), the hook's C path) and an RTLD_DEFAULT
 *      lookup (its jump straight to glibc), with and without the shim (goal:
 *      at most 1.1x);
 *   2. a 64 MiB cuMemHostAlloc + cuMemFreeHost cycle, through the shim
 *      (pooled) against the double alone, which populates and pins like the
 *      driver (goal: at least 1000x).
 * Run as `driver_bench LIBDSPRELOAD [--quick] [--schema-json FILE]`: it runs
 * itself without and with LD_PRELOAD and prints one table. Both sides run
 * with a second thread, as every CUDA program does: glibc's dlsym takes the
 * loader's lock, which costs atomics only once a process has two threads,
 * and the shim then started one at the first pin (the node ledger's timer;
 * now only in a process that has a second thread already), so a
 * single-threaded baseline would charge that to the hook. */
#include "schema.h"
#include "side.h"
#include "timing.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NLOOKUPS 200000

static double lookups(void *h, const char *name) {
    double t = now();
    for (int k = 0; k < NLOOKUPS; k++)
        if (!dlsym(h, name)) return -1;
    return (now() - t) / NLOOKUPS * 1e9;
}

/* One side, in this process: prints median, min, max of the handle lookup
 * (ns), the default lookup (ns), the cycle (s), then the repeats. */
static void *idle_thread(void *arg) {
    pause();
    return arg;
}

static int measure(int quick) {
    int reps = quick ? 7 : 15;
    pthread_t idle;
    if (pthread_create(&idle, NULL, idle_thread, NULL)) return 1;
    double hl[32], dl[32], cyc[32];
    void *libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!libm || !cu) return 1;
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(cu, "cuInit");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(cu, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(cu, "cuCtxSetCurrent");
    int (*alloc)(void **, size_t, unsigned) =
        (int (*)(void **, size_t, unsigned))dlsym(cu, "cuMemHostAlloc");
    int (*release)(void *) = (int (*)(void *))dlsym(cu, "cuMemFreeHost");
    void *ctx = NULL, *p = NULL;
    if (!init || !retain || !set || !alloc || !release || init(0) || retain(&ctx, 0) || set(ctx))
        return 1;
    size_t len = 64 << 20;
    if (alloc(&p, len, 1) || release(p)) return 1; /* warm: the first pin out of the way */
    for (int r = 0; r < reps; r++) {
        hl[r] = lookups(libm, "cos");
        dl[r] = lookups(RTLD_DEFAULT, "printf");
        int per = 0;
        double t = now(), budget = quick ? 0.05 : 0.2;
        do {
            if (alloc(&p, len, 1) || release(p)) return 1;
            per++;
        } while (now() - t < budget);
        cyc[r] = (now() - t) / per;
        if (hl[r] < 0 || dl[r] < 0) return 1;
    }
    bench_emit(hl, dl, cyc, reps);
    return 0;
}

int main(int argc, char **argv) {
    int quick, done;
    const char *json;
    struct bench_figs w, s; /* without, with the shim */
    int rc = bench_two_sides(argc, argv, "driver_bench", measure, &quick, &json, &w, &s, &done);
    if (done) return rc;
    printf("| benchmark (libcuda test double) | dspreload (median) | without (median) | ratio |\n");
    printf("|---|---|---|---|\n");
    printf("| dlsym(handle, \"cos\"), not served | %.1f ns | %.1f ns | %.2fx |\n", s.f[0][0],
           w.f[0][0], s.f[0][0] / w.f[0][0]);
    printf("| dlsym(RTLD_DEFAULT, \"printf\") | %.1f ns | %.1f ns | %.2fx |\n", s.f[1][0],
           w.f[1][0], s.f[1][0] / w.f[1][0]);
    printf("| 64 MiB cuMemHostAlloc+cuMemFreeHost cycle (dlsym'd) | %.2f us | %.2f ms | %.0fx |\n",
           s.f[2][0] * 1e6, w.f[2][0] * 1e3, w.f[2][0] / s.f[2][0]);
    if (!json) return 0;
    struct schema_fig *f =
        schema_figure("driver.dlsym.handle", "dlsym on a handle, a name the shim does not serve",
                      "ns", s.f[0][0], s.f[0][1], s.f[0][2], s.reps, 0);
    schema_baseline(f, "glibc's dlsym without the shim", w.f[0][0], w.f[0][1], w.f[0][2]);
    schema_goal(f, "ratio >= 0.909"); /* at most 1.1x the cost (issue 15) */
    f = schema_figure("driver.dlsym.default", "dlsym(RTLD_DEFAULT), a name the shim does not serve",
                      "ns", s.f[1][0], s.f[1][1], s.f[1][2], s.reps, 0);
    schema_baseline(f, "glibc's dlsym without the shim", w.f[1][0], w.f[1][1], w.f[1][2]);
    schema_goal(f, "ratio >= 0.909");
    f = schema_figure("driver.cycle.64MiB",
                      "64 MiB cuMemHostAlloc+cuMemFreeHost cycle, found by dlsym (XLA's way)", "us",
                      s.f[2][0] * 1e6, s.f[2][1] * 1e6, s.f[2][2] * 1e6, s.reps, 0);
    schema_baseline(f, "the libcuda test double without the shim (populates, pins, unmaps)",
                    w.f[2][0] * 1e6, w.f[2][1] * 1e6, w.f[2][2] * 1e6);
    schema_goal(f, "ratio >= 1000");
    return schema_write(json, "driver_bench", quick) ? 1 : 0;
}
