/* The node ledger's cost (issue 16), each figure against today's per-process
 * budget (DSP_NODE=off) measured in the same run, the two interleaved:
 *   1. the first pin of a 64 MiB block (DSP_POOL_MAX=0: every alloc pins new
 *      memory and every free gives it back, so each cycle makes one ledger
 *      reservation and one release); goal <= 1.05x. Single-threaded and with
 *      a thread of the program's own, as 2.
 *   2. the 64 MiB alloc+free cycle served by the pool: no ledger call; goal:
 *      unchanged (<= 1.05x). Twice: in a single-threaded program, where the
 *      ledger starts no timer thread (it would cost glibc's single-thread
 *      shortcut for mutexes: lock and unlock without atomic instructions),
 *      and in a program with one thread of its own (PyTorch has dozens),
 *      which has the timer and had lost that shortcut either way
 *   3. an allocation storm: 8 processes at once, each pinning and freeing
 *      blocks of 1 to 16 MiB (four live at a time, no pool) for 2 s after
 *      its first block; throughput (blocks a second, all together) against
 *      8 processes with budgets of their own; goal >= 0.95x. And, reported,
 *      the slowest of the 8 first blocks: with the ledger, the joins that
 *      processes starting together wait for (up to 150 ms on 2 CPUs), which
 *      inside the 2 s window had cost the storm 5%
 *   4. an idle rank's pool given back to another rank (issue 30): a rank with
 *      a thread of its own pins 768 MiB and frees it, into the plain pool
 *      (dsp_alloc) or the registered CUDA pool (cudaHostAlloc and
 *      cudaFreeHost against the runtime double: bench/node_holder.c, under
 *      LD_PRELOAD), and idles; another, under DSP_NODE_MAX_PINNED=1G, times
 *      dsp_alloc(768 MiB): the yield it waits for and its own first pin.
 *      The give-back is that time less the same pin with no one holding
 *      anything (measured beside it). Reported, no goal; the two pools side
 *      by side, and only with the ledger (without it nothing yields)
 * Each variant runs in a child process of its own, since the configuration
 * is read once per process, and an exec'd one: a fork child that never execs
 * starts no timer thread (docs/node-ledger.md, "Fork"), so a forked child would
 * not measure what a rank is. The children of 1 and 2 all run on one CPU,
 * the one the benchmark started on: on this 2-vCPU VM the pool cycle ran at
 * 75 ns on one vCPU and, at times, 110-115 ns on the other (taskset), so
 * children left to the scheduler measured the CPU they landed on, 74 ns or
 * 108 ns, whichever side they were on. They also exec without address-space
 * randomisation and with environments of one length on both sides, so that
 * the layout is the same too. --quick: fewer repeats. Prints a Markdown
 * table; --schema-json FILE also writes bench/schema.h's JSON (bench/run's
 * `node`). --storm ROUNDS: the storm alone, ROUNDS alternating rounds, each
 * round's figures printed (the storm is the noisiest figure on a shared
 * machine: several rounds of it alone are cheaper than full runs). */
#include <dspreload.h>

#include "ledger.h"
#include "schema.h"
#include "timing.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static int quick;
static char key[64];
static int cpu; /* where the children of 1 and 2 run (above) */

static void configure(int node, const char *pool_max) {
    setenv("DSP_NODE", node ? "auto" : "off", 1);
    setenv("DSPRELOAD_BENCH_PAD", node ? "" : "x", 1); /* one environment length */
    setenv("DSP_NODE_KEY", key, 1);                    /* a ledger of this run's own */
    setenv("DSP_POOL_MAX", pool_max, 1);
}

/* Seconds per first pin of 64 MiB: the median of n. */
static double first_pin(int n) {
    double *v = malloc(sizeof *v * (size_t)n);
    for (int i = 0; i < n; i++) {
        double t0 = now();
        char *p = dsp_alloc(64 * MiB);
        v[i] = now() - t0;
        if (!p) return -1;
        dsp_free(p);
    }
    double m = median(v, n);
    free(v);
    return m;
}

/* Seconds per pooled alloc+free cycle of 64 MiB: the median of 9 rounds. */
static double pool_cycle(int n) {
    double v[9];
    dsp_free(dsp_alloc(64 * MiB)); /* pooled from now on */
    for (int r = 0; r < 9; r++) {
        double t0 = now();
        for (int i = 0; i < n; i++) dsp_free(dsp_alloc(64 * MiB));
        v[r] = (now() - t0) / n;
    }
    return median(v, 9);
}

/* Blocks pinned in `secs` by one process of the storm, counted from its
 * first block on; *first: how long that first block took (the process's
 * start in the manager: with the ledger, its join, which 8 processes
 * starting at once on 2 CPUs make each other wait for). */
static double storm_one(double secs, unsigned seed, double *first) {
    void *live[4] = {0};
    double t0 = now();
    live[0] = dsp_alloc(MiB);
    *first = now() - t0;
    double ops = 0, end = now() + secs;
    for (unsigned i = 1; now() < end; i++) {
        unsigned k = i % 4;
        if (live[k]) dsp_free(live[k]);
        seed = seed * 1103515245u + 12345u;
        live[k] = dsp_alloc(MiB << ((seed >> 16) % 5));
        if (live[k]) ops++;
    }
    for (int k = 0; k < 4; k++)
        if (live[k]) dsp_free(live[k]);
    return ops;
}

static void *idle_thread(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

/* Runs one measurement in a child configured so (threaded: with a thread of
 * the program's own); its figure. */
static double in_child(int node, int which, int n, int threaded) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t c = fork();
    if (c == 0) {
        close(fd[0]);
        configure(node, which == 2 ? "10%" : "0");
        char a[4][24];
        snprintf(a[0], sizeof a[0], "%d", which);
        snprintf(a[1], sizeof a[1], "%d", n);
        snprintf(a[2], sizeof a[2], "%d", threaded);
        snprintf(a[3], sizeof a[3], "%d", fd[1]);
        personality(ADDR_NO_RANDOMIZE); /* one layout for both sides (above) */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        sched_setaffinity(0, sizeof one, &one); /* one CPU for both sides (above) */
        execl("/proc/self/exe", "node_bench", "--child", a[0], a[1], a[2], a[3], (char *)NULL);
        _exit(1);
    }
    close(fd[1]);
    double r = -1;
    if (read(fd[0], &r, sizeof r) != sizeof r) r = -1;
    close(fd[0]);
    waitpid(c, NULL, 0);
    return r;
}

/* Blocks a second of 8 processes started together, after each one's first
 * block; *first_max: the slowest first block. */
static double storm(int node, double secs, double *first_max) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t kids[8];
    for (int k = 0; k < 8; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            close(fd[0]);
            configure(node, "0");
            double r[2];
            r[0] = storm_one(secs, (unsigned)k * 7919u + 1, &r[1]);
            if (write(fd[1], r, sizeof r) != sizeof r) _exit(1);
            _exit(0);
        }
    }
    close(fd[1]);
    double sum = 0, r[2];
    *first_max = 0;
    for (int k = 0; k < 8; k++)
        if (read(fd[0], r, sizeof r) == sizeof r) {
            sum += r[0];
            if (r[1] > *first_max) *first_max = r[1];
        }
    close(fd[0]);
    for (int k = 0; k < 8; k++) waitpid(kids[k], NULL, 0);
    return sum / secs;
}

/* One figure: its Markdown row, and its JSON figure (node and off sorted by
 * median(): their ends are the spread). */
static void row(const char *id, const char *what, const double *node, const double *off, int n,
                const char *unit, double scale, int higher_better, double goal) {
    double vn = node[n / 2], vo = off[n / 2];
    double ratio = higher_better ? vo / vn : vn / vo; /* >1: the ledger costs */
    int met = ratio <= goal;
    printf("| %s | %.3g %s | %.3g %s | %.3fx | <= %.2fx: %s |\n", what, vn * scale, unit,
           vo * scale, unit, ratio, goal, met ? "met" : "NOT met");
    struct schema_fig *f = schema_figure(id, what, unit, vn * scale, node[0] * scale,
                                         node[n - 1] * scale, n, higher_better);
    schema_baseline(f, "per-process budget (DSP_NODE=off)", vo * scale, off[0] * scale,
                    off[n - 1] * scale);
    char g[48]; /* schema's ratio is "times better": at most goal x the cost */
    snprintf(g, sizeof g, "ratio >= %.4f", 1.0 / goal);
    schema_goal(f, g);
}

/* The ledger slot of process pid, read-only (this run's ledger: its file
 * names the shared memory, attached here), or NULL; *map for shmdt. */
static const struct dsp_ledger_slot *slot_of(pid_t pid, struct dsp_ledger_map **map) {
    char k[96], path[160], why_buf[160];
    const char *why;
    struct dsp_ledger_file lf;
    snprintf(k, sizeof k, "key:%s", key);
    dsp_ledger_path(path, sizeof path, "/dev/shm", (unsigned)geteuid(), k);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    int rc = dsp_ledger_read_file(fd, &lf, (unsigned)geteuid(), why_buf, &why);
    close(fd);
    *map = rc == 0 ? dsp_ledger_attach(&lf, (unsigned)geteuid(), 1) : NULL;
    if (!*map) return NULL;
    for (unsigned i = 0; i < DSP_LEDGER_SLOTS; i++)
        if (atomic_load(&(*map)->slot[i].state) == 1 && (*map)->slot[i].pid == pid)
            return &(*map)->slot[i];
    shmdt(*map);
    return NULL;
}

/* Figure 4, one round: an idle rank holding 768 MiB in its pool (holder:
 * "plain" or "cuda") and another process's dsp_alloc(768 MiB) under a 1 GiB
 * node cap. *yield: milliseconds from the request's start until the holder's
 * slot in the ledger holds none of it (the room the other waits for); returns the whole dsp_alloc's
 * milliseconds; -1 when refused or broken. */
#define HELD_MB 768
static double give_back(const char *holder, double *yield) {
    char dir[PATH_MAX], prog[PATH_MAX + 16], lib[PATH_MAX + 32], mb[16], line[16] = "";
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    *yield = -1;
    if (n <= 0) return -1;
    dir[n] = 0;
    *strrchr(dir, '/') = 0;
    snprintf(prog, sizeof prog, "%s/node_holder", dir);
    snprintf(lib, sizeof lib, "%s/../libdspreload.so", dir);
    snprintf(mb, sizeof mb, "%d", HELD_MB);
    configure(1, "1G");
    setenv("DSP_NODE_MAX_PINNED", "1G", 1);
    setenv("DSP_NODE_WAIT", "5000", 1);
    int out[2], fd[2];
    if (pipe(out) != 0) return -1;
    pid_t h = fork();
    if (h == 0) {
        dup2(out[1], 1);
        setenv("LD_PRELOAD", lib, 1);
        execl(prog, "node_holder", holder, mb, (char *)NULL);
        _exit(1);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    int ok = f && fgets(line, sizeof line, f) && !strcmp(line, "pooled\n");
    if (f) fclose(f);
    double r = -1;
    if (ok && pipe(fd) == 0) {
        usleep(200 * 1000); /* its timer publishes the pooled figure every 50 ms */
        double t0 = now();
        pid_t c = fork();
        if (c == 0) {
            close(fd[0]);
            void *p = dsp_alloc((size_t)HELD_MB * MiB);
            double ms = p ? (now() - t0) * 1e3 : -1;
            _exit(write(fd[1], &ms, sizeof ms) == sizeof ms ? 0 : 1);
        }
        close(fd[1]);
        struct dsp_ledger_map *map = NULL;
        const struct dsp_ledger_slot *held = slot_of(h, &map);
        while (held && now() - t0 < 6) {
            if (atomic_load(&held->reserved) < MiB) {
                *yield = (now() - t0) * 1e3;
                break;
            }
            usleep(200);
        }
        if (held) shmdt(map);
        if (read(fd[0], &r, sizeof r) != sizeof r) r = -1;
        close(fd[0]);
        waitpid(c, NULL, 0);
    }
    kill(h, SIGKILL);
    waitpid(h, NULL, 0);
    return r;
}

/* The exec'd child of in_child: --child WHICH N THREADED FD. */
static int child_main(char **argv) {
    int which = atoi(argv[2]), n = atoi(argv[3]), threaded = atoi(argv[4]), fd = atoi(argv[5]);
    pthread_t t;
    if (threaded && pthread_create(&t, NULL, idle_thread, NULL) != 0) return 1;
    double r = which == 1 ? first_pin(n) : pool_cycle(n);
    return write(fd, &r, sizeof r) == sizeof r ? 0 : 1;
}

/* This run's ledger removed. */
static void remove_ledger(void) {
    char k[96], path[160];
    snprintf(k, sizeof k, "key:%s", key);
    dsp_ledger_path(path, sizeof path, "/dev/shm", (unsigned)geteuid(), k);
    unlink(path);
}

/* --storm ROUNDS: figure 3 alone, each round's pair and the medians. */
static int storm_only(int rounds) {
    double n[64], o[64], q[64], jn, jo;
    if (rounds < 1 || rounds > 64) {
        fprintf(stderr, "node_bench: --storm takes 1 to 64 rounds\n");
        return 2;
    }
    printf("| round | node ledger (blocks/s) | per-process budget (blocks/s) | ratio |\n");
    printf("|---|---|---|---|\n");
    for (int r = 0; r < rounds; r++) { /* alternating order, as in main */
        if (r & 1) o[r] = storm(0, 2, &jo);
        n[r] = storm(1, 2, &jn);
        if (!(r & 1)) o[r] = storm(0, 2, &jo);
        q[r] = o[r] / n[r];
        printf("| %d | %.0f | %.0f | %.3fx |\n", r + 1, n[r], o[r], q[r]);
        fflush(stdout);
    }
    double mn = median(n, rounds), mo = median(o, rounds);
    printf("| median | %.0f | %.0f | %.3fx (median of the rounds' ratios: %.3fx) |\n", mn, mo,
           mo / mn, median(q, rounds));
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "--child")) {
        if (argc != 6) return 2;
        return child_main(argv);
    }
    snprintf(key, sizeof key, "node-bench-%010d", (int)getpid()); /* one length every run */
    if (argc == 3 && !strcmp(argv[1], "--storm")) {
        int rc = storm_only(atoi(argv[2]));
        remove_ledger();
        return rc;
    }
    const char *json;
    if (schema_args(argc, argv, 1, "--schema-json",
                    "node_bench [--quick] [--schema-json FILE] | node_bench --storm ROUNDS", &quick,
                    &json) != 0)
        return 2;
    cpu = sched_getcpu();
    if (cpu < 0) cpu = 0;
    int rounds = quick ? 3 : 7, pins = quick ? 10 : 30, cycles = quick ? 20000 : 100000;
    double a[7], b[7], c[7], d[7], e[7], f[7], g[7], h[7];
    /* Interleaved, so that drift hits both sides, and in alternating order
     * (ledger first in even rounds, per-process first in odd ones), so that
     * whatever the first of a pair pays (memory the previous one left to
     * the kernel to reclaim) does not always fall on the same side. */
    for (int r = 0; r < rounds; r++) {
        int x = r & 1; /* 0: the ledger first */
        double *first[4] = {x ? b : a, x ? d : c, x ? f : e, x ? h : g};
        double *second[4] = {x ? a : b, x ? c : d, x ? e : f, x ? g : h};
        int which[4] = {1, 2, 2, 1}, n[4] = {pins, cycles, cycles, pins}, thr[4] = {0, 0, 1, 1};
        for (int i = 0; i < 4; i++) {
            first[i][r] = in_child(!x, which[i], n[i], thr[i]);
            second[i][r] = in_child(x, which[i], n[i], thr[i]);
        }
    }
    double *all[] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; i++) median(all[i], rounds); /* sorted */
    double secs = quick ? 1 : 2, s_node[3], s_off[3], j_node[3], j_off[3];
    int sr = quick ? 1 : 3;
    for (int r = 0; r < sr; r++) { /* alternating order, as above */
        if (r & 1) s_off[r] = storm(0, secs, &j_off[r]);
        s_node[r] = storm(1, secs, &j_node[r]);
        if (!(r & 1)) s_off[r] = storm(0, secs, &j_off[r]);
    }
    median(s_node, sr);
    median(s_off, sr);
    median(j_node, sr);
    median(j_off, sr);
    printf("| benchmark | node ledger (median) | per-process budget (median) | ratio | goal |\n");
    printf("|---|---|---|---|---|\n");
    row("node.first_pin.64MiB", "first pin of 64 MiB, single-threaded program", a, b, rounds, "ms",
        1e3, 0, 1.05);
    row("node.first_pin.64MiB.threaded", "first pin of 64 MiB, program with a thread", g, h, rounds,
        "ms", 1e3, 0, 1.05);
    row("node.pool_cycle.64MiB", "pooled 64 MiB alloc+free, single-threaded program", c, d, rounds,
        "ns", 1e9, 0, 1.05);
    row("node.pool_cycle.64MiB.threaded", "pooled 64 MiB alloc+free, program with a thread", e, f,
        rounds, "ns", 1e9, 0, 1.05);
    row("node.storm.8", "8-process storm, 1-16 MiB blocks (blocks/s)", s_node, s_off, sr,
        "blocks/s", 1, 1, 1.0 / 0.95);
    /* Reported, no goal: what 8 processes starting together wait at their
     * first pin. */
    double jn = j_node[sr / 2], jo = j_off[sr / 2];
    printf("| 8 processes started together: the slowest first block (joining the ledger) | %.3g ms "
           "| %.3g ms | %.3fx | reported |\n",
           jn * 1e3, jo * 1e3, jn / jo);
    struct schema_fig *jf = schema_figure(
        "node.storm.8.first_block", "8 processes started together: the slowest first block", "ms",
        jn * 1e3, j_node[0] * 1e3, j_node[sr - 1] * 1e3, sr, 0);
    schema_baseline(jf, "per-process budget (DSP_NODE=off)", jo * 1e3, j_off[0] * 1e3,
                    j_off[sr - 1] * 1e3);
    /* 4: each pool's give-back beside the other's, in alternating order. */
    int gr = quick ? 1 : 3, refused[2] = {0, 0};
    double gb[2][3], pin[2][3];
    const char *pools[2] = {"plain", "cuda"};
    for (int r = 0; r < gr; r++)
        for (int k = 0; k < 2; k++) {
            int i = r & 1 ? 1 - k : k;
            pin[i][r] = give_back(pools[i], &gb[i][r]);
            refused[i] |= pin[i][r] < 0 || gb[i][r] < 0;
        }
    for (int i = 0; i < 2; i++) {
        char id[64], what[200];
        snprintf(id, sizeof id, "node.give_back.%s.768MiB", pools[i]);
        snprintf(
            what, sizeof what,
            "an idle rank's %s pool of 768 MiB given back (its ledger slot empty) to another's "
            "dsp_alloc(768 MiB) under a 1 GiB cap",
            i ? "registered CUDA" : "plain");
        if (refused[i]) {
            printf("| %s | not given back, or refused | - | - | reported |\n", what);
            continue;
        }
        double m = median(gb[i], gr), p = median(pin[i], gr);
        printf("| %s | %.3g ms (the whole pin %.3g ms) | - | - | reported |\n", what, m, p);
        schema_figure(id, what, "ms", m, gb[i][0], gb[i][gr - 1], gr, 0);
    }
    printf("\nratio = ledger / per-process for times, per-process / ledger for throughput "
           "(1.00x: no cost).\n");
    remove_ledger();
    return json && schema_write(json, "node_bench", quick) ? 1 : 0;
}
