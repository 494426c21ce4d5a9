/* The manager's benchmarks, each against its baseline in the same run:
 *   1. a 64 MiB alloc+free cycle served by the pool, against DeepSpeed's native
 *      way (posix_memalign + mlock, munlock + free); goal >= 1000x
 *   2. the first pin of 1 GiB and 4 GiB (--quick: 1 GiB), against the same,
 *      10 pairs (--quick: 5), alternating: goal median >= 2x and no pair
 *      below 0.9x (issue 29; the worst pair's ratio is a row of its own),
 *      with the huge-page and prefault-thread variants, to see what pays
 *   3. pin throughput against block size, 64 KiB to 1 GiB (--quick: 256 MiB):
 *      first pin by the shim, posix_memalign+mlock, malloc + first touch; and
 *      the alloc+free cycle, from the pool against posix_memalign+mlock
 *   4. dsp_is_pinned with 10 to 10^6 (--quick: 10^5) live ranges, against a
 *      linear scan;
 *      goal < 40 ns at 10^4 (issue 29)
 *   5. many live blocks (issue 12): 100,000 (--quick: 30,000) live 4 KiB
 *      dsp_alloc blocks: memory maps per 1,000 blocks (goal < 10) and the
 *      allocation rate (goal >= 5x), against posix_memalign+mlock (10,000
 *      blocks: more would reach vm.max_map_count); 64 KiB blocks the same;
 *      dsp_is_pinned at 100,000 live blocks against 1,000 (goal: within 2x);
 *      the maps left after free + dsp_trim (goal < 10 above the start)
 *   6. the program's own calls on a 64 MiB block (issue 12): DeepSpeed's round
 *      (mlock ... munlock) on a pooled block against posix_memalign+mlock
 *      (goal >= 1000x), and the cycle with the program's mprotect(RW) and
 *      madvise(WILLNEED) through the manager's hooks against the same calls
 *      as plain system calls: the cost of following them (goal <= 1.05x)
 *   7. NUMA placement (issue 33), on against DSP_NUMA=off in the same run:
 *      the first pin of 64 MiB and 1 GiB (--quick: 64 MiB), goal at most 2%
 *      slower (ratio >= 0.98), and the 64 MiB pool cycle, goal nothing
 *      measurable (ratio >= 0.98). On a machine of one node placement is
 *      forced on for node 0 (dsp_numa_active): the mbind, the page's node
 *      and the CPU's are then what a machine of several nodes pays.
 * --only DIGITS runs only those sections (--only 56).
 * Prints a Markdown table; --json FILE also writes every figure, and
 * --schema-json FILE writes them with the plots' series in bench/schema.h's
 * format for bench/run.
 * Memory is warmed before timing: first touch of fresh memory on these VMs is
 * far slower than anything measured here. */
#include "config.h"
#include "manager.h"
#include "memcalls.h"
#include "numa.h"
#include "pin.h"
#include "plan.h"
#include "registry.h"
#include "stats.h"
#include "schema.h"
#include "sys.h"
#include "timing.h"

#include <dspreload.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct sample {
    double median, lo, hi; /* seconds (or ns for lookups) */
    int n;                 /* repeats */
};

static struct sample summarize(double *v, int n) {
    struct sample s = {median(v, n), v[0], v[n - 1], n}; /* median() sorts v */
    return s;
}

/* --- rows of the report ---------------------------------------------------- */

struct row {
    char id[48];
    char name[96];
    char unit[8];
    struct sample shim, base;
    double goal; /* ratio wanted (>=), or an absolute bound in unit when goal < 0 */
    int pair;    /* the worst pair's ratio (add_pair_row): goal is -(the floor) */
};
static struct row rows[48];
static int nrows;

static void add_row(const char *id, const char *name, const char *unit, struct sample shim,
                    struct sample base, double goal) {
    struct row *r = &rows[nrows++];
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    r->shim = shim;
    r->base = base;
    r->goal = goal;
    /* The same figure for bench/run, in a unit that suits its size. */
    double scale = 1;
    const char *u = unit;
    if (!strcmp(unit, "s")) scale = shim.median < 1e-3 ? 1e6 : 1e3, u = scale > 1e3 ? "us" : "ms";
    const char *what = name + strspn(name, " ");
    struct schema_fig *f = schema_figure(id, what, u, shim.median * scale, shim.lo * scale,
                                         shim.hi * scale, shim.n, 0);
    const char *vs = strstr(what, " vs ");
    schema_baseline(f, vs ? vs + 4 : "posix_memalign+mlock", base.median * scale, base.lo * scale,
                    base.hi * scale);
    char g[32];
    if (goal > 0)
        snprintf(g, sizeof g, "ratio >= %g", goal);
    else if (goal < 0)
        snprintf(g, sizeof g, "value < %g", -goal);
    if (goal != 0) schema_goal(f, g);
}

static const char *goal_text(const struct row *r, char *buf, size_t cap) {
    double ratio = r->base.median / r->shim.median;
    if (r->pair)
        snprintf(buf, cap, "none below %gx: %s", -r->goal,
                 r->shim.median >= -r->goal ? "met" : "NOT met");
    else if (r->goal > 0)
        snprintf(buf, cap, ">= %gx: %s", r->goal, ratio >= r->goal ? "met" : "NOT met");
    else if (r->goal < 0)
        snprintf(buf, cap, "< %.0f %s: %s", -r->goal, r->unit,
                 r->shim.median < -r->goal ? "met" : "NOT met");
    else
        snprintf(buf, cap, "-");
    return buf;
}

static void fmt_val(char *buf, size_t cap, double v, const char *unit) {
    if (isnan(v))
        snprintf(buf, cap, "-");
    else if (!strcmp(unit, "x"))
        snprintf(buf, cap, "%.2fx", v);
    else if (strcmp(unit, "s"))
        snprintf(buf, cap, "%.1f %s", v, unit);
    else if (v < 1e-3)
        snprintf(buf, cap, "%.2f us", v * 1e6);
    else if (v < 1)
        snprintf(buf, cap, "%.2f ms", v * 1e3);
    else
        snprintf(buf, cap, "%.3f s", v);
}

static void *must_alloc(size_t len) {
    void *p = dsp_alloc(len);
    if (!p) {
        perror("dsp_alloc");
        exit(1);
    }
    return p;
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
            void *p = must_alloc(len);
            dsp_free(p);
        }
        s[i] = (now() - t) / per_batch;
    }
    add_row("pin.pool_cycle.64MiB", "64 MiB alloc+free cycle (pool) vs posix_memalign+mlock", "s",
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

/* The worst of the pairs: each shim run against the baseline run just before
 * it, so that a moment of load or of cold memory (on a VM whose host took
 * free memory back) meets both sides. A row whose value is the smallest
 * pairwise ratio; its spread is the pairs' min and max (issue 29: "no run
 * below 0.9x in 10"). */
static void add_pair_row(const char *id, const char *name, const double *b, const double *s, int n,
                         double floor) {
    double r[16];
    for (int i = 0; i < n; i++) r[i] = b[i] / s[i];
    /* In the order they ran, with both sides' times (before summarize sorts
     * r): whether a low pair is a slow shim run or a fast baseline, and
     * whether the low ones cluster. */
    char order[512];
    int at = 0;
    for (int i = 0; i < n && at < (int)sizeof order - 32; i++)
        at += snprintf(order + at, sizeof order - (size_t)at, " %.0f/%.0f=%.2f", b[i] * 1e3,
                       s[i] * 1e3, r[i]);
    struct sample q = summarize(r, n);
    struct row *w = &rows[nrows++];
    snprintf(w->id, sizeof w->id, "%s", id);
    snprintf(w->name, sizeof w->name, "%s", name);
    snprintf(w->unit, sizeof w->unit, "x");
    w->shim = (struct sample){q.lo, q.lo, q.hi, n};
    w->base = (struct sample){NAN, NAN, NAN, 0};
    w->goal = -floor; /* printed by goal_text as a floor: see pair_floor */
    w->pair = 1;
    struct schema_fig *f = schema_figure(id, name + strspn(name, " "), "x", q.lo, q.lo, q.hi, n, 1);
    char g[32];
    snprintf(g, sizeof g, "value >= %g", floor);
    schema_goal(f, g);
    fprintf(stderr, "  %s: pairs' ratio min %.2fx, median %.2fx, max %.2fx\n", name, q.lo, q.median,
            q.hi);
    fprintf(stderr, "    in order (baseline ms / shim ms = ratio):%s\n", order);
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
    char id[48];
    snprintf(id, sizeof id, "pin.first_pin.%zuGiB.worst_pair", len >> 30);
    snprintf(name, sizeof name, "  worst of %d pairs (shim vs the baseline run before it), %zu GiB",
             reps, len >> 30);
    add_pair_row(id, name, b, s, reps, 0.9);
    struct sample base = summarize(b, reps);
    snprintf(name, sizeof name, "first pin of %zu GiB vs posix_memalign+mlock", len >> 30);
    snprintf(id, sizeof id, "pin.first_pin.%zuGiB", len >> 30);
    add_row(id, name, "s", summarize(s, reps), base, 2);
    /* The pairs' row after the figure it qualifies. */
    struct row t = rows[nrows - 1];
    rows[nrows - 1] = rows[nrows - 2];
    rows[nrows - 2] = t;
    /* What bounds the figure here, for the report (issue 29: "where a
     * figure is load-sensitive, the report says why"): the baseline
     * populates with one thread, the shim with its threads, at the same
     * cost per page unless huge pages pay. */
    struct schema_fig *fig = schema_find(id);
    int nthreads = dsp_pin_threads(&dsp_mgr, len), cpus = dsp_sys_cpus();
    const char *pages = huge == DSP_HUGEPAGES_ALWAYS  ? "huge pages (DSP_HUGEPAGES=always)"
                        : huge == DSP_HUGEPAGES_NEVER ? "small pages (DSP_HUGEPAGES=never)"
                        : dsp_host_takes_free_pages()
                            ? "small pages (auto: this VM's host takes free memory back, where "
                              "huge pages cost more than small ones)"
                            : "huge pages where they pay (auto)";
    schema_note(fig,
                "the shim populated with %d thread%s on %d CPU%s against the baseline's one, "
                "with %s: with small pages %dx is the ceiling",
                nthreads, nthreads == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s", pages, nthreads);
    reps = reps < 5 ? reps : 5; /* the variants, to see what pays */
    if (!variants) return;
    dsp_mgr.huge_mode = DSP_HUGEPAGES_NEVER;
    for (int i = 0; i < reps; i++) s[i] = shim_first(len);
    snprintf(name, sizeof name, "  variant: DSP_HUGEPAGES=never, %zu GiB", len >> 30);
    snprintf(id, sizeof id, "pin.first_pin.%zuGiB.hugepages_never", len >> 30);
    add_row(id, name, "s", summarize(s, reps), base, 0);
    /* What huge pages cost where auto leaves them out (a VM reporting free
     * pages to its host, docs/design.md "Huge pages only where they pay"). */
    dsp_mgr.huge_mode = DSP_HUGEPAGES_ALWAYS;
    for (int i = 0; i < reps; i++) s[i] = shim_first(len);
    snprintf(name, sizeof name, "  variant: DSP_HUGEPAGES=always, %zu GiB", len >> 30);
    snprintf(id, sizeof id, "pin.first_pin.%zuGiB.hugepages_always", len >> 30);
    struct sample always = summarize(s, reps);
    add_row(id, name, "s", always, base, 0);
    if (fig) {
        size_t at = strlen(fig->note);
        snprintf(fig->note + at, sizeof fig->note - at,
                 "; huge pages forced ran %.2fx (spread %.2f - %.2fx)", base.median / always.median,
                 base.median / always.hi, base.median / always.lo);
    }
    dsp_mgr.huge_mode = huge;
    dsp_mgr.prefault_threads = 1;
    for (int i = 0; i < reps; i++) s[i] = shim_first(len);
    snprintf(name, sizeof name, "  variant: DSP_PREFAULT_THREADS=1, %zu GiB", len >> 30);
    snprintf(id, sizeof id, "pin.first_pin.%zuGiB.prefault_threads_1", len >> 30);
    add_row(id, name, "s", summarize(s, reps), base, 0);
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
    static const size_t sizes[] = {10, 100, 1000, 10000, 100000, 1000000};
    size_t have = 0;
    struct lin *lin = malloc(1000000 * sizeof *lin);
    enum { Q = 1 << 16 };
    uintptr_t *q = malloc(Q * sizeof *q);
    for (int si = 0; si < (quick ? 5 : 6); si++) { /* --quick: up to 10^5 */
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
        /* The scan's time is capped: about 2*10^7 range compares a repeat. */
        size_t lq = 20000000 / n;
        lq = lq < 64 ? 64 : lq > Q ? Q : lq;
        for (int k = 0; k < reps; k++) {
            double t = now();
            for (size_t i = 0; i < lq; i++) hits += linear_is_pinned(lin, n, q[i], 256);
            b[k] = (now() - t) / (double)lq * 1e9;
        }
        long want = (long)reps * 8 * Q + (long)reps * (long)lq;
        if (hits != want) {
            fprintf(stderr, "lookup results wrong: %ld of %ld\n", hits, want);
            exit(1);
        }
        struct sample ss = summarize(s, reps), bs = summarize(b, reps);
        schema_point("lookup_latency", "dsp_is_pinned (shim)", "ranges", "ns", (double)n, ss.median,
                     ss.lo, ss.hi);
        schema_point("lookup_latency", "linear scan (DeepSpeed)", "ranges", "ns", (double)n,
                     bs.median, bs.lo, bs.hi);
        if (n < 1000 || n == 100000) continue; /* in the plot only */
        char name[96], id[48];
        snprintf(name, sizeof name, "dsp_is_pinned, %zu ranges vs linear scan", n);
        snprintf(id, sizeof id, "registry.lookup.%zu", n);
        add_row(id, name, "ns", ss, bs, n == 10000 ? -40 : 0);
    }
    free(lin);
    free(q);
}

/* --- 3. pin throughput against block size ----------------------------------- */

static void touch(char *p, size_t len) {
    for (size_t o = 0; o < len; o += 4096) p[o] = 1;
}

/* Pins (or allocates) n blocks of len bytes the way `how` says and releases
 * them; returns the pinning rate in GB/s, and in *cycle the time of one whole
 * alloc+free of a block in seconds. */
enum how { SHIM, DS, MALLOC };
static double pin_rate(enum how how, size_t len, size_t n, void **p, double *cycle) {
    if (how == SHIM) dsp_trim(); /* pool misses: really pin */
    double t = now();
    for (size_t i = 0; i < n; i++) {
        if (how == SHIM)
            p[i] = dsp_alloc(len);
        else if (how == DS) {
            if (posix_memalign(&p[i], 4096, len) || mlock(p[i], len)) p[i] = NULL;
        } else if ((p[i] = malloc(len)))
            touch(p[i], len);
        if (!p[i]) {
            perror("pin throughput: allocation");
            exit(1);
        }
    }
    double mid = now();
    for (size_t i = 0; i < n; i++) {
        if (how == SHIM)
            dsp_free(p[i]);
        else {
            if (how == DS) munlock(p[i], len);
            free(p[i]);
        }
    }
    double end = now();
    if (how == SHIM) dsp_trim();
    if (cycle) *cycle = (end - t) / (double)n;
    return (double)len * (double)n / (mid - t) / 1e9;
}

/* The alloc+free cycle of a block the pool holds, in seconds. */
static double pool_cycle(size_t len) {
    void *p = dsp_alloc(len); /* first pin; then the pool serves */
    dsp_free(p);
    int per = 500;
    double t = now();
    for (int k = 0; k < per; k++) {
        if (!(p = dsp_alloc(len))) {
            perror("dsp_alloc");
            exit(1);
        }
        dsp_free(p);
    }
    return (now() - t) / per;
}

static void bench_pin_sweep(int quick) {
    static const struct {
        size_t len;
        const char *name;
    } sizes[] = {{64 << 10, "64KiB"},   {256 << 10, "256KiB"}, {1 << 20, "1MiB"},
                 {4 << 20, "4MiB"},     {16 << 20, "16MiB"},   {64 << 20, "64MiB"},
                 {256 << 20, "256MiB"}, {1 << 30, "1GiB"}};
    int reps = quick ? 3 : 5, nsizes = quick ? 7 : 8;
    /* Every large malloc is a fresh mmap, as a process allocating new buffers
     * sees (glibc's dynamic threshold would otherwise reuse touched heap). */
    mallopt(M_MMAP_THRESHOLD, 64 << 10);
    void **p = malloc(1024 * sizeof *p);
    size_t batch = (size_t)(quick ? 32 : 64) << 20; /* bytes pinned per timed run, at least */
    for (int si = 0; si < nsizes; si++) {
        size_t len = sizes[si].len, n = len >= batch ? 1 : batch / len;
        double sh[8], ds[8], mt[8], pc[8], dc[8];
        for (int r = 0; r < reps; r++) { /* interleaved: drift hits all three */
            ds[r] = pin_rate(DS, len, n, p, &dc[r]);
            sh[r] = pin_rate(SHIM, len, n, p, NULL);
            mt[r] = pin_rate(MALLOC, len, n, p, NULL);
            pc[r] = pool_cycle(len);
            dsp_trim();
        }
        struct sample s = summarize(sh, reps), d = summarize(ds, reps), m = summarize(mt, reps),
                      c = summarize(pc, reps), dcs = summarize(dc, reps);
        double x = (double)len;
        schema_point("pin_throughput", "shim (dsp_alloc, first pin)", "bytes", "GB/s", x, s.median,
                     s.lo, s.hi);
        schema_point("pin_throughput", "posix_memalign+mlock (DeepSpeed)", "bytes", "GB/s", x,
                     d.median, d.lo, d.hi);
        schema_point("pin_throughput", "malloc+touch (not pinned)", "bytes", "GB/s", x, m.median,
                     m.lo, m.hi);
        schema_point("pin_cycle", "shim, from the pool", "bytes", "us", x, c.median * 1e6,
                     c.lo * 1e6, c.hi * 1e6);
        schema_point("pin_cycle", "posix_memalign+mlock, munlock+free (DeepSpeed)", "bytes", "us",
                     x, dcs.median * 1e6, dcs.lo * 1e6, dcs.hi * 1e6);
        if (len != (64 << 10) && len != (1 << 20) && len != (16 << 20) && len != (256 << 20))
            continue; /* in the plots only */
        char id[64], what[128];
        snprintf(id, sizeof id, "pin.throughput.%s", sizes[si].name);
        snprintf(what, sizeof what, "first pin of %s blocks (%zu at a time), shim", sizes[si].name,
                 n);
        struct schema_fig *f = schema_figure(id, what, "GB/s", s.median, s.lo, s.hi, reps, 1);
        schema_baseline(f, "posix_memalign+mlock", d.median, d.lo, d.hi);
    }
    free(p);
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
}

/* --- 5. many live blocks ----------------------------------------------------- */

static int count_maps(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = getc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

/* ns per dsp_is_pinned of a random 64-byte range inside one of blocks[0..n). */
static double live_lookup_ns(void **blocks, size_t n, size_t len, uintptr_t *q, int nq) {
    for (int i = 0; i < nq; i++)
        q[i] = (uintptr_t)blocks[next_rand() % n] + next_rand() % (len - 64);
    long hits = 0;
    double t = now();
    for (int rep = 0; rep < 4; rep++)
        for (int i = 0; i < nq; i++) hits += dsp_is_pinned((void *)q[i], 64);
    double ns = (now() - t) / (4.0 * nq) * 1e9;
    if (hits != 4L * nq) {
        fprintf(stderr, "live lookups wrong: %ld of %d\n", hits, 4 * nq);
        exit(1);
    }
    return ns;
}

/* posix_memalign+mlock of n blocks of len: seconds a block, maps per 1,000. */
static void ds_blocks(size_t len, size_t n, void **p, double *per, double *maps) {
    int m0 = count_maps();
    double t = now();
    for (size_t i = 0; i < n; i++)
        if (posix_memalign(&p[i], 4096, len) || mlock(p[i], len)) {
            perror("baseline posix_memalign+mlock");
            exit(1);
        }
    *per = (now() - t) / (double)n;
    *maps = (count_maps() - m0) * 1000.0 / (double)n;
    for (size_t i = 0; i < n; i++) munlock(p[i], len), free(p[i]);
}

static void bench_blocks(int quick) {
    size_t n4 = quick ? 30000 : 100000, n64 = quick ? 10000 : 20000, nds = 10000;
    int reps = quick ? 3 : 5;
    enum { NQ = 1 << 16 };
    void **p = malloc(n4 * sizeof *p);
    uintptr_t *q = malloc(NQ * sizeof *q);
    double rate[8], maps[8], brate[8], bmaps[8], at1k[8], atn[8], left[8];
    double rate64[8], maps64[8], brate64[8], bmaps64[8];
    for (int r = 0; r < reps; r++) {
        ds_blocks(4096, nds, p, &brate[r], &bmaps[r]);
        dsp_trim();
        int m0 = count_maps();
        double t = now(), spent = 0;
        for (size_t i = 0; i < n4; i++) {
            if (!(p[i] = dsp_alloc(4096))) {
                fprintf(stderr, "dsp_alloc(4 KiB) failed at %zu live blocks\n", i);
                exit(1);
            }
            if (i + 1 == 1000) { /* the lookup at 1,000 live blocks, untimed */
                spent += now() - t;
                at1k[r] = live_lookup_ns(p, 1000, 4096, q, NQ);
                t = now();
            }
        }
        spent += now() - t;
        rate[r] = spent / (double)n4;
        maps[r] = (count_maps() - m0) * 1000.0 / (double)n4;
        atn[r] = live_lookup_ns(p, n4, 4096, q, NQ);
        for (size_t i = 0; i < n4; i++) dsp_free(p[i]);
        dsp_trim();
        left[r] = count_maps() - m0;

        ds_blocks(64 << 10, n64 > nds ? nds : n64, p, &brate64[r], &bmaps64[r]);
        m0 = count_maps();
        t = now();
        for (size_t i = 0; i < n64; i++)
            if (!(p[i] = dsp_alloc(64 << 10))) {
                fprintf(stderr, "dsp_alloc(64 KiB) failed at %zu live blocks\n", i);
                exit(1);
            }
        rate64[r] = (now() - t) / (double)n64;
        maps64[r] = (count_maps() - m0) * 1000.0 / (double)n64;
        for (size_t i = 0; i < n64; i++) dsp_free(p[i]);
        dsp_trim();
    }
    char name[96], id[48];
    struct sample none = {NAN, NAN, NAN, 0};
    snprintf(name, sizeof name,
             "maps per 1,000 live 4 KiB blocks (%zu live) vs posix_memalign+mlock", n4);
    add_row("blocks.maps_per_1000.4KiB", name, "maps", summarize(maps, reps),
            summarize(bmaps, reps), -10);
    snprintf(name, sizeof name, "4 KiB dsp_alloc, %zu live, a block vs posix_memalign+mlock", n4);
    add_row("blocks.alloc_rate.4KiB", name, "s", summarize(rate, reps), summarize(brate, reps), 5);
    snprintf(name, sizeof name,
             "maps per 1,000 live 64 KiB blocks (%zu live) vs posix_memalign+mlock", n64);
    add_row("blocks.maps_per_1000.64KiB", name, "maps", summarize(maps64, reps),
            summarize(bmaps64, reps), -10);
    snprintf(name, sizeof name, "64 KiB dsp_alloc, %zu live, a block vs posix_memalign+mlock", n64);
    /* No goal: 16 page faults a block bound both (issue 12 sets one for 4 KiB). */
    add_row("blocks.alloc_rate.64KiB", name, "s", summarize(rate64, reps), summarize(brate64, reps),
            0);
    snprintf(name, sizeof name, "dsp_is_pinned at %zu live blocks vs at 1,000 live blocks", n4);
    snprintf(id, sizeof id, "blocks.lookup.%zu_vs_1000", n4);
    add_row(id, name, "ns", summarize(atn, reps), summarize(at1k, reps), 0.5);
    add_row("blocks.maps_left_after_trim", "maps left above the start after free + dsp_trim",
            "maps", summarize(left, reps), none, -10);
    free(p);
    free(q);
}

/* --- 6. the program's own calls on a pooled block ------------------------------ */

/* alloc, the program's calls, free, per cycle in seconds; hooks: through the
 * manager's interposers (as under LD_PRELOAD), else the plain system calls. */
static double calls_cycle(size_t len, int per, int hooks, int deepspeed) {
    double t = now();
    for (int k = 0; k < per; k++) {
        void *p = must_alloc(len);
        int rc;
        if (deepspeed) /* DeepSpeed pins what it allocated, unpins before free */
            rc = dsp_mem_mlock(p, len, -1) | dsp_mem_munlock(p, len);
        else if (hooks)
            rc = dsp_mem_mprotect(p, len, PROT_READ | PROT_WRITE) |
                 dsp_mem_madvise(p, len, MADV_WILLNEED);
        else
            rc = mprotect(p, len, PROT_READ | PROT_WRITE) | madvise(p, len, MADV_WILLNEED);
        if (rc) {
            perror("the program's calls");
            exit(1);
        }
        dsp_free(p);
    }
    return (now() - t) / per;
}

static void bench_calls(int quick) {
    size_t len = 64 << 20;
    int reps = quick ? 7 : 21, per = 2000;
    double ds[32], round[32], hooked[32], plain[32];
    void *warm = dsp_alloc(len);
    dsp_free(warm);
    uint64_t misses = dsp_stat_get(DSP_ST_pool_misses);
    for (int r = 0; r < reps; r++) {
        if (r < (quick ? 5 : 11)) ds[r] = ds_native_cycle(len); /* DeepSpeed's round, natively */
        round[r] = calls_cycle(len, per, 1, 1);
        /* interleaved, so that drift hits both */
        hooked[r] = calls_cycle(len, per / 4, 1, 0);
        plain[r] = calls_cycle(len, per / 4, 0, 0);
    }
    /* Each cycle must have been served by the pool: a call that made the
     * manager give its block back would be timed as a first pin. */
    if (dsp_stat_get(DSP_ST_pool_misses) != misses) {
        fprintf(stderr, "the program's calls cost the pool its block: %llu misses\n",
                (unsigned long long)(dsp_stat_get(DSP_ST_pool_misses) - misses));
        exit(1);
    }
    add_row("calls.deepspeed_round.64MiB",
            "64 MiB cycle with DeepSpeed's mlock+munlock, pooled vs posix_memalign+mlock", "s",
            summarize(round, reps), summarize(ds, quick ? 5 : 11), 1000);
    add_row("calls.mprotect_madvise.64MiB",
            "64 MiB cycle with mprotect(RW)+madvise(WILLNEED) via hooks vs plain syscalls", "s",
            summarize(hooked, reps), summarize(plain, reps), 1 / 1.05);
    dsp_trim();
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

/* ,"KEY":{"median":M,"min":L,"max":H}, null where not measured */
static void json_sample(FILE *f, const char *key, const struct sample *v) {
    const char *names[] = {"median", "min", "max"};
    double x[] = {v->median, v->lo, v->hi};
    fprintf(f, ",\"%s\":{", key);
    for (int i = 0; i < 3; i++) {
        fprintf(f, "%s\"%s\":", i ? "," : "", names[i]);
        schema_num(f, x[i]);
    }
    fputc('}', f);
}

/* --- 7. NUMA placement ------------------------------------------------------ */

static void placement(int on) {
    __atomic_store_n(&dsp_numa_active, on, __ATOMIC_RELAXED);
}

static void bench_numa(int quick) {
    dsp_plan(); /* the topology read, as at a first pin: then forced either way */
    int active = dsp_numa_active;
    double on[32], off[32];
    char name[96], id[48];
    size_t sizes[] = {(size_t)64 << 20, (size_t)1 << 30};
    for (int k = 0; k < (quick ? 1 : 2); k++) {
        size_t len = sizes[k];
        int reps = len < (256 << 20) ? (quick ? 11 : 21) : 5;
        for (int i = 0; i < reps; i++) { /* interleaved: drift hits both */
            placement(0);
            off[i] = shim_first(len);
            placement(1);
            on[i] = shim_first(len);
        }
        snprintf(name, sizeof name, "first pin of %zu MiB, NUMA placement vs DSP_NUMA=off",
                 len >> 20);
        snprintf(id, sizeof id, "pin.numa.first_pin.%zuMiB", len >> 20);
        add_row(id, name, "s", summarize(on, reps), summarize(off, reps), 0.98);
    }
    size_t len = 64 << 20;
    int batches = quick ? 7 : 21, per_batch = 2000;
    for (int i = 0; i < batches; i++) {
        for (int side = 0; side < 2; side++) {
            placement(side);
            void *warm = must_alloc(len); /* pinned on this side's terms, then pooled */
            dsp_free(warm);
            double t = now();
            for (int n = 0; n < per_batch; n++) dsp_free(must_alloc(len));
            (side ? on : off)[i] = (now() - t) / per_batch;
        }
    }
    add_row("pin.numa.pool_cycle.64MiB",
            "64 MiB alloc+free cycle (pool), NUMA placement vs DSP_NUMA=off", "s",
            summarize(on, batches), summarize(off, batches), 0.98);
    placement(active);
    dsp_trim();
}

static void bench_first_pins(int quick) {
    bench_first_pin((size_t)1 << 30, quick ? 5 : 10, !quick);
    if (!quick) bench_first_pin((size_t)4 << 30, 10, 1);
}

/* The sections, in order: --only 56 runs the fifth and sixth. */
static const struct {
    const char *name;
    void (*run)(int quick);
} sections[] = {
    {"pool cycle", bench_pool_cycle},   {"first pin", bench_first_pins},
    {"lookups", bench_lookup},          {"pin throughput against block size", bench_pin_sweep},
    {"many live blocks", bench_blocks}, {"the program's calls on a pooled block", bench_calls},
    {"NUMA placement", bench_numa},
};

int main(int argc, char **argv) {
    int quick = 0;
    const char *json = NULL, *schema_json = NULL, *only = "1234567";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--schema-json") && i + 1 < argc)
            schema_json = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc &&
                 strspn(argv[i + 1], "1234567") == strlen(argv[i + 1]) && argv[i + 1][0])
            only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--quick] [--only DIGITS (sections 1-7, e.g. 56)] [--json FILE] "
                    "[--schema-json FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    setenv("DSP_MAX_PINNED", "12G", 0);
    char mach[512], date[64];
    machine(mach, sizeof mach);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    double t0 = now();
    fprintf(stderr, "warming memory...\n");
    warm_machine((size_t)(quick ? 2 : 6) << 30); /* more than the largest pin */
    for (size_t k = 0; k < sizeof sections / sizeof *sections; k++) {
        if (!strchr(only, '1' + (int)k)) continue;
        fprintf(stderr, "%zu/7 %s... (%.0f s)\n", k + 1, sections[k].name, now() - t0);
        sections[k].run(quick);
    }
    fprintf(stderr, "done (%.0f s)\n", now() - t0);

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
        char x[32] = "-";
        if (!isnan(r->base.median) && r->shim.median > 0)
            snprintf(x, sizeof x, "%.2fx", r->base.median / r->shim.median);
        printf("| %s | %s | %s | %s | %s |\n", r->name, a, b, x, goal_text(r, g, sizeof g));
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
            fprintf(f, "%s{\"name\":\"%s\",\"unit\":\"%s\"", i ? "," : "", r->name, r->unit);
            json_sample(f, "shim", &r->shim);
            json_sample(f, "baseline", &r->base);
            fprintf(f, ",\"ratio\":");
            schema_num(f, r->base.median / r->shim.median);
            fprintf(f, "}");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    return schema_json && schema_write(schema_json, "pin_bench", quick) ? 1 : 0;
}
