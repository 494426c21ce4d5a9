/* Benchmarks that compare a program without and with the shim run themselves
 * twice, in fresh child processes: one without LD_PRELOAD, one with it. */
#ifndef DSP_BENCH_SIDE_H
#define DSP_BENCH_SIDE_H

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

#endif
