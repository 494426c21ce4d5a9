/* The manager's benchmarks, each against its baseline in the same run:
 *   1. a 64 MiB alloc+free cycle served by the pool, against DeepSpeed's native
 *      way (posix_memalign + mlock, munlock + free); goal >= 1000x
 *   2. the first pin of 1 GiB and 4 GiB, against the same; goal >= 2x
 *      (with the huge-page and prefault-thread variants, to see what pays)
 *   3. dsp_is_pinned with 10^3, 10^4, 10^6 live ranges, against a linear scan;
 *      goal < 50 ns at 10^4
 * Prints a Markdown table; --json FILE also writes every figure.
 * Memory is warmed before timing: first touch of fresh memory on these VMs is
 * far slower than anything measured here. */
#include "../src/config.h"
#include "../src/manager.h"
#include "../src/registry.h"
#include "../src/stats.h"
#include "timing.h"

#include <dspreload.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>


struct sample {
    double median, lo, hi; /* seconds (or ns for lookups) */
};

static struct sample summarize(double *v, int n) {
    struct sample s = {median(v, n), v[0], v[n - 1]}; /* median() sorts v */
    return s;
}

/* --- rows of the report ---------------------------------------------------- */

struct row {
    char name[96];
    char unit[8];
    struct sample shim, base;
    double goal; /* ratio wanted (>=), or an absolute bound in unit when goal < 0 */
};
static struct row rows[32];
static int nrows;

static void add_row(const char *name, const char *unit, struct sample shim, struct sample base,
                    double goal) {
    struct row *r = &rows[nrows++];
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    r->shim = shim;
    r->base = base;
    r->goal = goal;
}

static const char *goal_text(const struct row *r, char *buf, size_t cap) {
    double ratio = r->base.median / r->shim.median;
    if (r->goal > 0)
        snprintf(buf, cap, ">= %.0fx: %s", r->goal, ratio >= r->goal ? "met" : "NOT met");
    else if (r->goal < 0)
        snprintf(buf, cap, "< %.0f %s: %s", -r->goal, r->unit,
                 r->shim.median < -r->goal ? "met" : "NOT met");
    else
        snprintf(buf, cap, "-");
    return buf;
}

static void fmt_val(char *buf, size_t cap, double v, const char *unit) {
    if (!strcmp(unit, "ns"))
        snprintf(buf, cap, "%.1f ns", v);
    else if (v < 1e-3)
        snprintf(buf, cap, "%.2f us", v * 1e6);
    else if (v < 1)
        snprintf(buf, cap, "%.2f ms", v * 1e3);
    else
        snprintf(buf, cap, "%.3f s", v);
}

/* --- 1. pool cycle ---------------------------------------------------------- */

static double ds_native_cycle(size_t len) {
    double t = now();
    void *p;
    if (posix_memalign(&p, 4096, len) != 0 || mlock(p, len) != 0) {
        perror("baseline posix_memalign+mlock");
        exit(1);
    }
    munlock(p, len);
    free(p);
    return now() - t;
}

static void bench_pool_cycle(int quick) {
    size_t len = 64 << 20;
    int base_n = quick ? 7 : 21, shim_batches = quick ? 7 : 21, per_batch = 2000;
    double b[64], s[64];
    for (int i = 0; i < base_n; i++) b[i] = ds_native_cycle(len);
    void *warm = dsp_alloc(len); /* the first pin; then the pool serves */
    dsp_free(warm);
    for (int i = 0; i < shim_batches; i++) {
        double t = now();
        for (int k = 0; k < per_batch; k++) {
            void *p = dsp_alloc(len);
            if (!p) {
                perror("dsp_alloc");
                exit(1);
            }
            dsp_free(p);
        }
        s[i] = (now() - t) / per_batch;
    }
    add_row("64 MiB alloc+free cycle (pool) vs posix_memalign+mlock", "s",
            summarize(s, shim_batches), summarize(b, base_n), 1000);
    dsp_trim();
}

/* --- 2. first pin ----------------------------------------------------------- */

static double ds_native_first(size_t len) {
    void *p;
    double t = now();
    if (posix_memalign(&p, 4096, len) != 0 || mlock(p, len) != 0) {
        perror("baseline posix_memalign+mlock");
        exit(1);
    }
    double d = now() - t;
    munlock(p, len);
    free(p);
    return d;
}

static double shim_first(size_t len) {
    dsp_trim(); /* a pool miss: really pin */
    double t = now();
    void *p = dsp_alloc(len);
    double d = now() - t;
    if (!p) {
        perror("dsp_alloc");
        exit(1);
    }
    dsp_free(p);
    dsp_trim();
    return d;
}

static void bench_first_pin(size_t len, int reps, int variants) {
    double b[16], s[16];
    char name[96];
    int huge = dsp_mgr.huge_mode, threads = dsp_mgr.prefault_threads;
    /* Interleave shim and baseline so drift on a shared machine hits both. */
    for (int i = 0; i < reps; i++) {
        b[i] = ds_native_first(len);
        s[i] = shim_first(len);
    }
    struct sample base = summarize(b, reps);
    snprintf(name, sizeof name, "first pin of %zu GiB vs posix_memalign+mlock", len >> 30);
    add_row(name, "s", summarize(s, reps), base, 2);
    if (!variants) return;
    dsp_mgr.huge_mode = DSP_HUGE_NEVER;
    for (int i = 0; i < reps; i++) s[i] = shim_first(len);
    snprintf(name, sizeof name, "  variant: DSP_HUGEPAGES=never, %zu GiB", len >> 30);
    add_row(name, "s", summarize(s, reps), base, 0);
    dsp_mgr.huge_mode = huge;
    dsp_mgr.prefault_threads = 1;
    for (int i = 0; i < reps; i++) s[i] = shim_first(len);
    snprintf(name, sizeof name, "  variant: DSP_PREFAULT_THREADS=1, %zu GiB", len >> 30);
    add_row(name, "s", summarize(s, reps), base, 0);
    dsp_mgr.prefault_threads = threads;
}

/* --- 3. lookups -------------------------------------------------------------- */

struct lin {
    uintptr_t base, end;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* DeepSpeed's registry: ranges in a map, searched front to back. */
static int linear_is_pinned(const struct lin *r, size_t n, uintptr_t p, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (p >= r[i].base && p + len <= r[i].end) return 1;
    return 0;
}

#define FAKE_BASE ((uintptr_t)1 << 44) /* registry entries only: no memory behind them */

static void bench_lookup(int quick) {
    static const size_t sizes[] = {1000, 10000, 1000000};
    size_t have = 0;
    struct lin *lin = malloc(1000000 * sizeof *lin);
    enum { Q = 1 << 16 };
    uintptr_t *q = malloc(Q * sizeof *q);
    for (int si = 0; si < 3; si++) {
        size_t n = sizes[si];
        for (; have < n; have++) { /* ranges of 64 KiB..1 MiB with gaps */
            uintptr_t b = FAKE_BASE + (uintptr_t)have * (2 << 20);
            size_t len = (64 << 10) * (1 + next_rand() % 16);
            if (dsp_reg_insert(b, len, DSP_RANGE_EXTERNAL, 0, NULL) != 0) {
                fprintf(stderr, "registry insert failed\n");
                exit(1);
            }
            lin[have].base = b;
            lin[have].end = b + len;
        }
        for (int i = 0; i < Q; i++) {
            const struct lin *r = &lin[next_rand() % n];
            q[i] = r->base + next_rand() % (r->end - r->base - 256);
        }
        int reps = quick ? 5 : 11;
        double s[16], b[16];
        long hits = 0;
        for (int k = 0; k < reps; k++) {
            double t = now();
            for (int rep = 0; rep < 8; rep++)
                for (int i = 0; i < Q; i++) hits += dsp_is_pinned((void *)q[i], 256);
            s[k] = (now() - t) / (8.0 * Q) * 1e9;
        }
        int lq = n >= 1000000 ? 64 : n >= 10000 ? 2048 : Q; /* the scan is slow: fewer queries */
        for (int k = 0; k < reps; k++) {
            double t = now();
            for (int i = 0; i < lq; i++) hits += linear_is_pinned(lin, n, q[i], 256);
            b[k] = (now() - t) / lq * 1e9;
        }
        long want = (long)reps * 8 * Q + (long)reps * lq;
        if (hits != want) {
            fprintf(stderr, "lookup results wrong: %ld of %ld\n", hits, want);
            exit(1);
        }
        char name[96];
        snprintf(name, sizeof name, "dsp_is_pinned, %zu ranges vs linear scan", n);
        add_row(name, "ns", summarize(s, reps), summarize(b, reps), n == 10000 ? -50 : 0);
    }
    free(lin);
    free(q);
}

/* --- physical limits, for scale --------------------------------------------- */

static double memcpy_gbs, memset_gbs;

static void warm_machine(size_t len) {
    /* Touch a large region, copy through it once untimed, then time: on these
     * VMs the first pass over fresh memory runs at a tenth of the speed of the
     * next, populated or not, and must not land in a timed run. */
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, len, MADV_POPULATE_WRITE);
    size_t half = len / 2, chunk = 256 << 20;
    for (size_t off = 0; off + chunk <= half; off += chunk) memcpy(p + half + off, p + off, chunk);
    double t = now();
    for (int i = 0; i < 4; i++) memcpy(p + half, p, chunk);
    memcpy_gbs = 4.0 * (double)chunk / (now() - t) / 1e9;
    t = now();
    for (int i = 0; i < 4; i++) memset(p, i, chunk);
    memset_gbs = 4.0 * (double)chunk / (now() - t) / 1e9;
    munmap(p, len);
}

static void machine(char *buf, size_t cap) {
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) snprintf(model, sizeof model, "%s", c + 2);
                model[strcspn(model, "\n")] = 0;
                break;
            }
        fclose(f);
    }
    char thp[128] = "?";
    f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (fgets(thp, sizeof thp, f)) thp[strcspn(thp, "\n")] = 0;
        fclose(f);
    }
    snprintf(buf, cap, "%s, %ld CPUs, %.1f GiB RAM, THP %s", model, sysconf(_SC_NPROCESSORS_ONLN),
             (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / (1 << 30), thp);
}

int main(int argc, char **argv) {
    int quick = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    setenv("DSP_MAX_PINNED", "12G", 0);
    char mach[512], date[64];
    machine(mach, sizeof mach);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    fprintf(stderr, "warming memory...\n");
    warm_machine((size_t)6 << 30);
    fprintf(stderr, "1/3 pool cycle...\n");
    bench_pool_cycle(quick);
    fprintf(stderr, "2/3 first pin...\n");
    bench_first_pin((size_t)1 << 30, quick ? 3 : 5, 1);
    bench_first_pin((size_t)4 << 30, quick ? 3 : 5, !quick);
    fprintf(stderr, "3/3 lookups...\n");
    bench_lookup(quick);

    printf("dspreload %s pin manager benchmark, %s%s\n", dsp_version(), date,
           quick ? " (--quick)" : "");
    printf("machine: %s; memcpy %.1f GB/s, memset %.1f GB/s\n\n", mach, memcpy_gbs, memset_gbs);
    printf("| benchmark | dspreload (median) | baseline (median) | ratio | goal |\n");
    printf("|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        struct row *r = &rows[i];
        char a[32], b[32], g[64];
        fmt_val(a, sizeof a, r->shim.median, r->unit);
        fmt_val(b, sizeof b, r->base.median, r->unit);
        printf("| %s | %s | %s | %.1fx | %s |\n", r->name, a, b, r->base.median / r->shim.median,
               goal_text(r, g, sizeof g));
    }
    printf("\nratio = baseline / dspreload (higher is better); spreads in the JSON file.\n");
    fflush(stdout);
    dsp_stats_at_exit(); /* DSP_STATS=1: what the manager did during the run */
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f,
                "{\"date\":\"%s\",\"machine\":\"%s\",\"quick\":%d,\"memcpy_gbs\":%.2f,\"memset_"
                "gbs\":%.2f,"
                "\"rows\":[",
                date, mach, quick, memcpy_gbs, memset_gbs);
        for (int i = 0; i < nrows; i++) {
            struct row *r = &rows[i];
            fprintf(
                f,
                "%s{\"name\":\"%s\",\"unit\":\"%s\",\"shim\":{\"median\":%g,\"min\":%g,\"max\":%g},"
                "\"baseline\":{\"median\":%g,\"min\":%g,\"max\":%g},\"ratio\":%g}",
                i ? "," : "", r->name, r->unit, r->shim.median, r->shim.lo, r->shim.hi,
                r->base.median, r->base.lo, r->base.hi, r->base.median / r->shim.median);
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    return 0;
}
