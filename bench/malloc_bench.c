/* The malloc layer's benchmark. Run as `malloc_bench LIBDSPRELOAD [--quick]
 * [--json FILE]`: it runs itself as child processes, without the shim and
 * with it, alternating, and reports medians and ratios:
 *   1. a malloc(64) + free loop, hints off (the shim's cost on every program);
 *   2. a mixed-size allocation workload on two threads, hints off;
 *   3. start-up of a trivial program (/bin/true, and `/usr/bin/python3 -c
 *      pass` where it exists) with and without the shim;
 *   4. with hints on: a large allocation served pinned (fresh, and from the
 *      pool) against glibc's malloc plus the first touch of the same memory;
 *   5. hints off: an allocation churn over 1M live slots of 8-1024 B, and a
 *      Python dict of 2M objects (Python's own allocator, and with
 *      PYTHONMALLOC=malloc every object from malloc), where /usr/bin/python3
 *      exists.
 * Goals: 1 and 2 at most 1.05x (issue 5); 1, the churn and the dict at most
 * 1.03x, 3 at most +0.1 ms (issue 29). Ratios are per round (each round runs
 * both sides; the churn and the dict each side twice, the faster run kept;
 * the dicts that twice, two ratios a round), shown as min / median / max. */
#include "schema.h"
#include "timing.h"

#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory") /* keep GCC from eliding malloc */

/* CPU time, not wall time, for the hints-off overhead: the machine these
 * figures come from is shared, and other jobs' load inflates wall time of
 * both sides by different amounts (under load a run's wall-time ratio came
 * out well above its CPU-time ratio). */
static double cpu_now(clockid_t which) {
    struct timespec t;
    clock_gettime(which, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* --- the workloads, run in a child ------------------------------------------ */

static double loop64(long n) {
    double t = cpu_now(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        ESCAPE(p);
        free(p);
    }
    return (cpu_now(CLOCK_THREAD_CPUTIME_ID) - t) / (double)n * 1e9; /* ns per pair */
}

/* The same loop through the program's malloc and free (with hints off the
 * shim binds them to glibc's: the hooks only where that failed) and straight
 * into glibc (__libc_malloc, __libc_free: the same PLT hop an application
 * without the shim makes), in alternating batches in one process, so that
 * both sides see the same load. The median of the per-batch ratios, and
 * *hook_ns. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static double loop64_ab(int batches, long n, double *hook_ns, double *libc_ns) {
    double ratio[64], h[64], l[64];
    for (int b = 0; b < batches; b++) {
        double t = cpu_now(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < n; i++) {
            void *p = malloc(64);
            ESCAPE(p);
            free(p);
        }
        double t1 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < n; i++) {
            void *p = __libc_malloc(64);
            ESCAPE(p);
            __libc_free(p);
        }
        double t2 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
        h[b] = (t1 - t) / (double)n * 1e9;
        l[b] = (t2 - t1) / (double)n * 1e9;
        ratio[b] = h[b] / l[b];
    }
    *hook_ns = median(h, batches);
    *libc_ns = median(l, batches);
    return median(ratio, batches);
}

struct mixed_arg {
    long ops;
    unsigned seed;
};

static void *mixed_thread(void *arg) {
    struct mixed_arg *a = arg;
    void *slot[256] = {0};
    uint64_t s = a->seed * 0x9e3779b97f4a7c15ull + 1;
    for (long i = 0; i < a->ops; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int k = (int)(s & 255);
        size_t n = (s >> 8) % 16 == 0 ? 4096 + (s >> 20) % (60 << 10) : 16 + (s >> 20) % 1000;
        free(slot[k]);
        slot[k] = (s >> 12) % 4 == 0 ? calloc(1, n) : malloc(n);
        ((char *)slot[k])[0] = 1;
        if ((s >> 16) % 8 == 0) slot[k] = realloc(slot[k], n * 2);
    }
    for (int k = 0; k < 256; k++) free(slot[k]);
    return NULL;
}

static double mixed(long ops) {
    pthread_t t[2];
    struct mixed_arg a[2] = {{ops, 1}, {ops, 2}};
    double t0 = cpu_now(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, mixed_thread, &a[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return (cpu_now(CLOCK_PROCESS_CPUTIME_ID) - t0) / (double)(2 * ops) * 1e9; /* CPU ns per op */
}

/* A large allocation and the first write to each of its pages: what a
 * program pays to have the memory in hand. ms per allocation. */
static double large(size_t len, int rounds) {
    double best[64];
    for (int r = 0; r < rounds; r++) {
        double t = now();
        char *p = malloc(len);
        for (size_t off = 0; off < len; off += 4096) p[off] = 1;
        best[r] = now() - t;
        ESCAPE(p);
        free(p);
    }
    return median(best, rounds) * 1e3;
}

/* 1M live slots of 8-1024 B, each op freeing one at random and allocating
 * anew: the allocator under a large live set. CPU ns per op. */
static double churn(long ops) {
    enum { SLOTS = 1 << 20 };
    void **slot = calloc(SLOTS, sizeof *slot);
    uint64_t s = 88172645463325252ull;
#define NEXT() (s ^= s << 13, s ^= s >> 7, s ^= s << 17)
    for (long k = 0; k < SLOTS; k++) slot[k] = malloc(8 + NEXT() % 1017);
    double t = cpu_now(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < ops; i++) {
        size_t k = NEXT() % SLOTS;
        free(slot[k]);
        slot[k] = malloc(8 + (s >> 24) % 1017);
        ESCAPE(slot[k]);
    }
    t = cpu_now(CLOCK_THREAD_CPUTIME_ID) - t;
#undef NEXT
    for (long k = 0; k < SLOTS; k++) free(slot[k]);
    free(slot);
    return t / (double)ops * 1e9;
}

static int child(const char *what, int quick) {
    double v = 0;
    if (!strcmp(what, "loop64ab")) {
        double h, l, r = loop64_ab(quick ? 9 : 31, 1000000, &h, &l);
        printf("%.6f %.4f %.4f\n", r, h, l);
        return 0;
    }
    if (!strcmp(what, "loop64"))
        v = loop64(quick ? 5000000 : 20000000);
    else if (!strcmp(what, "churn"))
        v = churn(quick ? 2000000 : 8000000);
    else if (!strcmp(what, "mixed"))
        v = mixed(quick ? 500000 : 2000000);
    else if (!strcmp(what, "large"))
        v = large((size_t)256 << 20, quick ? 3 : 5);
    else
        return 2;
    printf("%.6f\n", v);
    return 0;
}

/* --- the driver ----------------------------------------------------------------- */

static const char *self;

/* Runs `self --child what` with extra environment entries; its number. */
/* Runs `self --child what` with extra environment entries; its output into
 * out: 0, or -1 when it failed. */
static const char *python = "/usr/bin/python3";
/* The dict: CPU ms of building and dropping it, measured by Python; printed
 * with one write (the driver reads once). */
static const char pydict[] = "import time\n"
                             "t = time.process_time()\n"
                             "d = {i: object() for i in range(2000000)}\n"
                             "del d\n"
                             "print((time.process_time() - t) * 1e3, end='')\n";

static int child_output(const char *what, int quick, const char *const *env_add, char *out,
                        size_t cap) {
    char *env[256];
    int n = 0;
    for (char **e = environ; *e && n < 200; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "DSP_", 4) &&
            strncmp(*e, "GLIBC_TUNABLES=", 15))
            env[n++] = *e;
    for (; env_add && *env_add; env_add++) env[n++] = (char *)*env_add;
    env[n] = NULL;
    int fds[2];
    if (pipe(fds)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {(char *)self, "--child", (char *)what, quick ? "--quick" : "--full", NULL};
    char *pyargv[] = {(char *)python, "-c", (char *)pydict, NULL};
    int py = !strcmp(what, "pydict");
    pid_t pid;
    if (posix_spawn(&pid, py ? python : self, &fa, NULL, py ? pyargv : argv, env)) return -1;
    close(fds[1]);
    memset(out, 0, cap);
    ssize_t got = read(fds[0], out, cap - 1);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) ? -1 : 0;
}

/* The child's one number, or -1. */
static double run_child(const char *what, int quick, const char *const *env_add) {
    char buf[64];
    return child_output(what, quick, env_add, buf, sizeof buf) ? -1 : atof(buf);
}

/* Each side twice, in the order A B B A, and each side's faster run: a run
 * that another job's burst slowed is dropped, and neither side always goes
 * first (issue 29's goals are 3% where this machine's runs swing by 50%). */
static void best_of_abba(const char *what, int quick, const char *const *env_a,
                         const char *const *env_b, double *a, double *b) {
    double a1 = run_child(what, quick, env_a), b1 = run_child(what, quick, env_b);
    double b2 = run_child(what, quick, env_b), a2 = run_child(what, quick, env_a);
    *a = a1 < 0 || a2 < 0 ? -1 : a1 < a2 ? a1 : a2;
    *b = b1 < 0 || b2 < 0 ? -1 : b1 < b2 ? b1 : b2;
}

/* One program (argv) spawned and reaped: wall ms, and the child's CPU ms in
 * *cpu. */
static double spawn_one(char *const *argv, const char *preload, double *cpu) {
    char pre[4200];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", preload ? preload : "");
    char *env[] = {pre, NULL};
    double t = now();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, preload ? env : env + 1)) return -1;
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    *cpu = ((double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6) *
           1e3;
    return (now() - t) * 1e3;
}

/* Start-up of argv under each of the k preloads of pre (NULL: none; at most
 * 3), spawned in turn so that all see the same load: the medians of wall ms
 * in wall[], and of the child's CPU ms in cpu[]. */
static int startup(char *const *argv, const char *const *pre, int k, int count, double *wall,
                   double *cpu) {
    double w[3][512], c[3][512];
    for (int i = 0; i < count; i++)
        for (int j = 0; j < k; j++)
            if ((w[j][i] = spawn_one(argv, pre[j], &c[j][i])) < 0) return -1;
    for (int j = 0; j < k; j++) wall[j] = median(w[j], count), cpu[j] = median(c[j], count);
    return 0;
}

struct result {
    const char *key, *what, *unit, *goal;
    double with, without;
};

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "--child"))
        return child(argv[2], argc > 3 && !strcmp(argv[3], "--quick"));
    if (argc < 2) {
        fprintf(stderr, "usage: malloc_bench LIBDSPRELOAD [--quick] [--json FILE]\n");
        return 2;
    }
    self = "/proc/self/exe";
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) exe[len] = 0, self = exe;
    const char *lib = argv[1], *json;
    int quick;
    if (schema_args(argc, argv, 2, "--json", "malloc_bench LIBDSPRELOAD [--quick] [--json FILE]",
                    &quick, &json) != 0)
        return 2;
    int reps = quick ? 3 : 11;
    char pre[4200];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", lib);
    const char *off[] = {pre, NULL}, *none[] = {NULL};
    const char *off_pym[] = {pre, "PYTHONMALLOC=malloc", NULL},
               *none_pym[] = {"PYTHONMALLOC=malloc", NULL};
    int have_python = access(python, X_OK) == 0;
    /* The empty preloaded library, beside this program (bench/meson.build). */
    char empty[4200];
    snprintf(empty, sizeof empty, "%s", self);
    char *slash = strrchr(empty, '/');
    snprintf(slash ? slash + 1 : empty, sizeof empty - (size_t)(slash ? slash + 1 - empty : 0),
             "libdsp_bench_empty.so");
    int have_empty = access(empty, R_OK) == 0;
    /* Hints on at 1 MiB; pool off so every large block is pinned anew, or on. */
    const char *fresh[] = {pre, "DSP_MALLOC_MIN=1M", "DSP_POOL_MAX=0", NULL};
    const char *pooled[] = {pre, "DSP_MALLOC_MIN=1M", NULL};
    /* glibc: large blocks stay mmapped and are unmapped at free, so every
     * round touches fresh memory (its dynamic threshold would otherwise keep
     * a freed 256 MiB block in the heap, already touched). */
    const char *glibc_fresh[] = {"GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576", NULL};

    struct result res[] = {
        /* Goals: at most 1.05x the time (ratio >= 1/1.05); start-up at most
         * +0.1 ms (issue 29). */
        {"loop64_ns", "malloc(64)+free, hints off (CPU time)", "ns", "ratio >= 0.971", 0, 0},
        {"mixed_ns", "mixed sizes, 2 threads, hints off (CPU time)", "ns/op", "ratio >= 0.952", 0,
         0},
        {"startup_ms", "start-up of /bin/true (wall)", "ms", "delta <= 0.1", 0, 0},
        {"large_fresh_ms", "256 MiB hinted, pinned anew vs malloc+first touch", "ms", NULL, 0, 0},
        {"large_pooled_ms", "256 MiB hinted, from the pool vs malloc+first touch", "ms", NULL, 0,
         0},
        {"startup_cpu_ms", "start-up of /bin/true (CPU time of the child)", "ms", NULL, 0, 0},
        {"churn_ns", "churn of 1M live slots of 8-1024 B, hints off (CPU time)", "ns/op",
         "ratio >= 0.971", 0, 0},
        {"pydict_ms", "Python dict of 2M objects, hints off (CPU time)", "ms", "ratio >= 0.971", 0,
         0},
        {"pydict_malloc_ms", "Python dict of 2M objects, PYTHONMALLOC=malloc, hints off (CPU time)",
         "ms", "ratio >= 0.971", 0, 0},
        /* 15-20 ms a run with a spread of a millisecond or more: each round's
         * figure is the median of 100 alternating pairs (40 quick). */
        {"startup_python_ms",
         "start-up of /usr/bin/python3 -c pass (wall; a round: median of 100 pairs, 40 quick)",
         "ms", "delta <= 0.1", 0, 0},
        /* No goal: the floor under the one above. */
        {"startup_python_empty_ms",
         "start-up of /usr/bin/python3 -c pass with an empty preloaded library, what any "
         "LD_PRELOAD costs (wall; as above)",
         "ms", NULL, 0, 0},
    };
    enum { CHURN = 6, PYDICT = 7, PYDICT_MALLOC = 8, STARTUP_PY = 9, STARTUP_EMPTY = 10 };
    enum { N = sizeof res / sizeof *res };
    /* The dicts: two ratios a round. A dict's CPU time is mostly the kernel's
     * page faults, which on this VM swing with whether each page was handed
     * back to the host (free page reporting): in 120 alternating runs of each
     * side the paired ratio ran from 0.34 to 3.5 around a median of 1.000,
     * the same 64,449 faults and system calls on both sides, and 11 rounds
     * of one ratio put the median of a shim identical to glibc below 0.971
     * one time in eleven (22: one in fifty; issue 29). */
    int n[N];
    for (int k = 0; k < N; k++) n[k] = k == PYDICT || k == PYDICT_MALLOC ? 2 * reps : reps;
    double a[N][32], b[N][32], ratio[N][32], delta[N][32];
    for (int r = 0; r < reps; r++) { /* alternate sides within each round */
        a[0][r] = run_child("loop64", quick, off);
        b[0][r] = run_child("loop64", quick, none);
        b[1][r] = run_child("mixed", quick, none);
        a[1][r] = run_child("mixed", quick, off);
        char *true_argv[] = {"/bin/true", NULL}, *py_argv[] = {(char *)python, "-c", "pass", NULL};
        /* The shim, no preload, and for Python an empty preloaded library. */
        const char *pre[] = {lib, NULL, empty};
        double wall[3], cpu[3];
        if (startup(true_argv, pre, 2, quick ? 40 : 100, wall, cpu))
            a[2][r] = -1;
        else
            a[2][r] = wall[0], b[2][r] = wall[1], a[5][r] = cpu[0], b[5][r] = cpu[1];
        b[3][r] = b[4][r] = run_child("large", quick, glibc_fresh);
        a[3][r] = run_child("large", quick, fresh);
        a[4][r] = run_child("large", quick, pooled);
        best_of_abba("churn", quick, off, none, &a[CHURN][r], &b[CHURN][r]);
        a[STARTUP_PY][r] = b[STARTUP_PY][r] = a[STARTUP_EMPTY][r] = b[STARTUP_EMPTY][r] = 1;
        if (have_python && startup(py_argv, pre, have_empty ? 3 : 2, quick ? 40 : 100, wall, cpu))
            a[STARTUP_PY][r] = -1;
        else if (have_python) {
            a[STARTUP_PY][r] = wall[0], b[STARTUP_PY][r] = wall[1];
            if (have_empty) a[STARTUP_EMPTY][r] = wall[2], b[STARTUP_EMPTY][r] = wall[1];
        }
        for (int i = 2 * r; i < 2 * r + 2; i++) {
            a[PYDICT][i] = b[PYDICT][i] = a[PYDICT_MALLOC][i] = b[PYDICT_MALLOC][i] = 1;
            if (!have_python) continue;
            best_of_abba("pydict", quick, off, none, &a[PYDICT][i], &b[PYDICT][i]);
            best_of_abba("pydict", quick, off_pym, none_pym, &a[PYDICT_MALLOC][i],
                         &b[PYDICT_MALLOC][i]);
        }
    }
    for (int k = 0; k < N; k++)
        for (int i = 0; i < n[k]; i++) {
            ratio[k][i] = a[k][i] / b[k][i];
            delta[k][i] = a[k][i] - b[k][i];
            if (a[k][i] < 0 || b[k][i] < 0) {
                fprintf(stderr, "malloc_bench: a child failed (%s)\n", res[k].key);
                return 1;
            }
        }
    double rmed[N];
    for (int k = 0; k < N; k++) {
        rmed[k] = median(ratio[k], n[k]); /* sorted: [0] min */
        if (!have_python && (k == PYDICT || k == PYDICT_MALLOC || k == STARTUP_PY)) continue;
        if ((!have_python || !have_empty) && k == STARTUP_EMPTY) continue;
        res[k].with = median(a[k], n[k]); /* sorted: [0] min */
        res[k].without = median(b[k], n[k]);
        char id[64];
        snprintf(id, sizeof id, "malloc.%s", res[k].key);
        struct schema_fig *f = schema_figure(id, res[k].what, res[k].unit, res[k].with, a[k][0],
                                             a[k][n[k] - 1], n[k], 0);
        schema_baseline(f, k == STARTUP_EMPTY ? "without any preload" : "without the shim",
                        res[k].without, b[k][0], b[k][n[k] - 1]);
        if (res[k].goal) schema_goal(f, res[k].goal);
        if (res[k].goal && !strncmp(res[k].goal, "delta", 5)) {
            median(delta[k], n[k]); /* sorted */
            schema_delta_spread(f, delta[k][0], delta[k][n[k] - 1]);
        }
    }
    /* The floor under the start-up figure, for the report: what the loader
     * alone costs for a preloaded library, measured in the same rounds. */
    if (have_python && have_empty)
        schema_note(schema_find("malloc.startup_python_ms"),
                    "an empty preloaded library added %+.3f ms in the same rounds (what any "
                    "LD_PRELOAD costs this program here); the shim's own share: %+.3f ms",
                    res[STARTUP_EMPTY].with - res[STARTUP_EMPTY].without,
                    (res[STARTUP_PY].with - res[STARTUP_PY].without) -
                        (res[STARTUP_EMPTY].with - res[STARTUP_EMPTY].without));
    /* The in-process A/B of the malloc(64)+free loop: both sides under the
     * same load, but sensitive to the code layout of this program (runs of
     * different builds put it on either side of 1); the goal needs both figures. */
    double ab[3] = {0, 0, 0};
    char abuf[128];
    if (child_output("loop64ab", quick, off, abuf, sizeof abuf) ||
        sscanf(abuf, "%lf %lf %lf", &ab[0], &ab[1], &ab[2]) != 3) {
        fprintf(stderr, "malloc_bench: the A/B child failed\n");
        return 1;
    }
    printf("malloc_bench (%s, %d rounds, medians)\n\n", quick ? "quick" : "full", reps);
    printf("| benchmark | dspreload | without | ratio | ratio per round: min / median / max |\n"
           "|---|---|---|---|---|\n");
    for (int k = 0; k < N; k++) {
        if (!have_python && (k == PYDICT || k == PYDICT_MALLOC || k == STARTUP_PY))
            printf("| %s | skipped: %s not found | | | |\n", res[k].what, python);
        else if ((!have_python || !have_empty) && k == STARTUP_EMPTY)
            printf("| %s | skipped: %s not found | | | |\n", res[k].what,
                   have_python ? empty : python);
        else if (k == 2 || k == 5 || k == STARTUP_PY || k == STARTUP_EMPTY)
            printf("| %s | %.3f %s | %.3f %s | %+.3f ms |\n", res[k].what, res[k].with, res[k].unit,
                   res[k].without, res[k].unit, res[k].with - res[k].without);
        else
            printf("| %s | %.2f %s | %.2f %s | %.3fx | %.3f / %.3f / %.3f |\n", res[k].what,
                   res[k].with, res[k].unit, res[k].without, res[k].unit,
                   res[k].with / res[k].without, ratio[k][0], rmed[k], ratio[k][n[k] - 1]);
    }
    printf("| malloc(64)+free, hints off, in one process: malloc/free vs __libc_* (CPU time) | "
           "%.2f ns | "
           "%.2f ns | %.3fx | |\n",
           ab[1], ab[2], ab[0]);
    printf("\ngoals: malloc(64)+free %s (<= 1.05x, both ways), mixed %s (<= 1.05x), start-up of "
           "/bin/true %s, of python3 -c pass %s (<= +0.1 ms, issue 29)\n",
           ab[0] <= 1.05 && res[0].with / res[0].without <= 1.05 ? "met" : "NOT met",
           res[1].with / res[1].without <= 1.05 ? "met" : "NOT met",
           res[2].with - res[2].without <= 0.1 ? "met" : "NOT met",
           !have_python                                            ? "skipped"
           : res[STARTUP_PY].with - res[STARTUP_PY].without <= 0.1 ? "met"
                                                                   : "NOT met");
    printf("goals (issue 29), median ratio per round <= 1.03x: malloc(64)+free %s, churn %s, "
           "Python dict %s, with PYTHONMALLOC=malloc %s\n",
           rmed[0] <= 1.03 ? "met" : "NOT met", rmed[CHURN] <= 1.03 ? "met" : "NOT met",
           !have_python           ? "skipped"
           : rmed[PYDICT] <= 1.03 ? "met"
                                  : "NOT met",
           !have_python                  ? "skipped"
           : rmed[PYDICT_MALLOC] <= 1.03 ? "met"
                                         : "NOT met");
    struct schema_fig *f =
        schema_figure("malloc.loop64_ab",
                      "malloc(64)+free, hints off, one process: malloc/free vs __libc_* (CPU time)",
                      "ns", ab[1], NAN, NAN, 1, 0);
    schema_baseline(f, "glibc's __libc_malloc/__libc_free in the same process", ab[2], NAN, NAN);
    if (json && schema_write(json, "malloc_bench", quick) != 0) return 1;
    return 0;
}
