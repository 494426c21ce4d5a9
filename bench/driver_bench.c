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
 * and the shim starts one at the first pin (the node ledger's timer), so a
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
    double a = median(hl, reps), b = median(dl, reps), c = median(cyc, reps);
    printf("%.3f %.3f %.3f %.3f %.3f %.3f %.9f %.9f %.9f %d\n", a, hl[0], hl[reps - 1], b, dl[0],
           dl[reps - 1], c, cyc[0], cyc[reps - 1], reps);
    return 0;
}

struct side {
    double handle[3], dflt[3], cycle[3];
    int reps;
};

static int run_side(char *const argv0, const char *preload, int quick, struct side *r) {
    char buf[256];
    if (bench_side(argv0, preload, quick, buf, sizeof buf) != 0 ||
        sscanf(buf, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %d", &r->handle[0], &r->handle[1],
               &r->handle[2], &r->dflt[0], &r->dflt[1], &r->dflt[2], &r->cycle[0], &r->cycle[1],
               &r->cycle[2], &r->reps) != 10)
        return -1;
    return 0;
}

int main(int argc, char **argv) {
    if (getenv(BENCH_SIDE_ENV)) return measure(argc > 1 && !strcmp(argv[1], "--quick"));
    int quick;
    const char *json;
    if (schema_args(argc, argv, 2, "--schema-json",
                    "driver_bench LIBDSPRELOAD [--quick] [--schema-json FILE]", &quick, &json) != 0)
        return 2;
    struct side w, s; /* without, with the shim */
    if (run_side(argv[0], NULL, quick, &w) || run_side(argv[0], argv[1], quick, &s)) {
        fprintf(stderr, "driver_bench: a run failed (is libcuda.so.1, the test double, found?)\n");
        return 1;
    }
    printf("| benchmark (libcuda test double) | dspreload (median) | without (median) | ratio |\n");
    printf("|---|---|---|---|\n");
    printf("| dlsym(handle, \"cos\"), not served | %.1f ns | %.1f ns | %.2fx |\n", s.handle[0],
           w.handle[0], s.handle[0] / w.handle[0]);
    printf("| dlsym(RTLD_DEFAULT, \"printf\") | %.1f ns | %.1f ns | %.2fx |\n", s.dflt[0],
           w.dflt[0], s.dflt[0] / w.dflt[0]);
    printf("| 64 MiB cuMemHostAlloc+cuMemFreeHost cycle (dlsym'd) | %.2f us | %.2f ms | %.0fx |\n",
           s.cycle[0] * 1e6, w.cycle[0] * 1e3, w.cycle[0] / s.cycle[0]);
    if (!json) return 0;
    struct schema_fig *f =
        schema_figure("driver.dlsym.handle", "dlsym on a handle, a name the shim does not serve",
                      "ns", s.handle[0], s.handle[1], s.handle[2], s.reps, 0);
    schema_baseline(f, "glibc's dlsym without the shim", w.handle[0], w.handle[1], w.handle[2]);
    schema_goal(f, "ratio >= 0.909"); /* at most 1.1x the cost (issue 15) */
    f = schema_figure("driver.dlsym.default", "dlsym(RTLD_DEFAULT), a name the shim does not serve",
                      "ns", s.dflt[0], s.dflt[1], s.dflt[2], s.reps, 0);
    schema_baseline(f, "glibc's dlsym without the shim", w.dflt[0], w.dflt[1], w.dflt[2]);
    schema_goal(f, "ratio >= 0.909");
    f = schema_figure("driver.cycle.64MiB",
                      "64 MiB cuMemHostAlloc+cuMemFreeHost cycle, found by dlsym (XLA's way)", "us",
                      s.cycle[0] * 1e6, s.cycle[1] * 1e6, s.cycle[2] * 1e6, s.reps, 0);
    schema_baseline(f, "the libcuda test double without the shim (populates, pins, unmaps)",
                    w.cycle[0] * 1e6, w.cycle[1] * 1e6, w.cycle[2] * 1e6);
    schema_goal(f, "ratio >= 1000");
    return schema_write(json, "driver_bench", quick) ? 1 : 0;
}
