/* Benchmarks that compare a program without and with the shim run themselves
 * twice, in fresh child processes: one without LD_PRELOAD, one with it. */
#ifndef DSP_BENCH_SIDE_H
#define DSP_BENCH_SIDE_H

#include "schema.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Set in the children: the program measures and prints instead. */
#define BENCH_SIDE_ENV "DSPRELOAD_BENCH_SIDE"

/* Runs argv0 (--quick or --full) with LD_PRELOAD=preload (NULL: without) and
 * BENCH_SIDE_ENV set; its standard output, NUL-terminated, into out. 0, or
 * -1 when it could not run or did not exit 0. */
static inline int bench_side(char *const argv0, const char *preload, int quick, char *out,
                             size_t size) {
    int fds[2];
    if (pipe(fds)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        if (preload) setenv("LD_PRELOAD", preload, 1);
        setenv(BENCH_SIDE_ENV, "1", 1);
        execl(argv0, argv0, quick ? "--quick" : "--full", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    memset(out, 0, size);
    size_t got = 0;
    ssize_t n;
    while (got < size - 1 && (n = read(fds[0], out + got, size - 1 - got)) > 0) got += (size_t)n;
    close(fds[0]);
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
    return got > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* What a side measured: up to BENCH_FIGS figures, each median, min and max
 * (a series may be shorter than reps: its own length is given), and the
 * repeats. The child prints it (bench_emit), the parent reads it back. */
#define BENCH_FIGS 5
struct bench_figs {
    double f[BENCH_FIGS][3];
    int reps;
};

/* Sorts each of the n series of len[i] values and prints its median, min and
 * max, then reps. */
static inline void bench_emit_n(double *const *v, const int *len, int n, int reps) {
    for (int i = 0; i < n; i++) {
        double m = median(v[i], len[i]); /* sorts */
        printf("%.17g %.17g %.17g ", m, v[i][0], v[i][len[i] - 1]);
    }
    printf("%d\n", reps);
}

/* Three series of reps values each. */
static inline void bench_emit(double *a, double *b, double *c, int reps) {
    double *v[3] = {a, b, c};
    int len[3] = {reps, reps, reps};
    bench_emit_n(v, len, 3, reps);
}

static inline int bench_figs_side(char *const argv0, const char *preload, int quick,
                                  struct bench_figs *r) {
    char buf[1024], *at = buf, *end;
    if (bench_side(argv0, preload, quick, buf, sizeof buf) != 0) return -1;
    double v[BENCH_FIGS * 3 + 1];
    int n = 0;
    for (double x; n < BENCH_FIGS * 3 + 1 && (x = strtod(at, &end), end != at); at = end)
        v[n++] = x;
    if (n < 4 || n % 3 != 1) return -1;
    memcpy(r->f, v, sizeof(double) * (size_t)(n - 1));
    r->reps = (int)v[n - 1];
    return 0;
}

/* The main of such a benchmark: in a child, measure(quick); else the
 * arguments (LIBDSPRELOAD [--quick] [--schema-json FILE]), then both sides
 * into *without and *with. 0 to go on, else the exit status. */
static inline int bench_two_sides(int argc, char **argv, const char *name, int (*measure)(int),
                                  int *quick, const char **json, struct bench_figs *without,
                                  struct bench_figs *with, int *done) {
    *done = 1;
    if (getenv(BENCH_SIDE_ENV)) return measure(argc > 1 && !strcmp(argv[1], "--quick"));
    char usage[128];
    snprintf(usage, sizeof usage, "%s LIBDSPRELOAD [--quick] [--schema-json FILE]", name);
    if (schema_args(argc, argv, 2, "--schema-json", usage, quick, json) != 0) return 2;
    if (bench_figs_side(argv[0], NULL, *quick, without) ||
        bench_figs_side(argv[0], argv[1], *quick, with)) {
        fprintf(stderr, "%s: a run failed\n", name);
        return 1;
    }
    *done = 0;
    return 0;
}

#endif
