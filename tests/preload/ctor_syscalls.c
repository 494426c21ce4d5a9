/* The library's start-up makes almost no system call (issue 29: the
 * constructor added about 95 to /bin/true, reading the memory cgroup's
 * hierarchy twice, sysinfo 4 times, capget twice and getpid 3 times, in
 * every process of a job, though most never pin).
 *
 * ctor_syscalls LIB EMPTY PROGRAM [ARG...]: runs PROGRAM under
 * LD_PRELOAD=EMPTY (a library with nothing in it) and under LD_PRELOAD=LIB,
 * counting every system call of each run with ptrace (this program's own
 * counter: no strace needed), and fails when LIB's run makes more than
 * MAX_ADDED more. The baseline preloads an empty library so that what the
 * dynamic loader does for any preloaded library (open, map, close: about 10
 * calls) is in both counts, and the difference is what the constructor and
 * destructor add. Each side runs RUNS times and keeps its smallest count.
 * Exit 77 (skipped) only where ptrace is refused (a seccomp profile,
 * kernel.yama.ptrace_scope=3), with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/ptrace.h>

#define MAX_ADDED 9
#define RUNS      3
#define NR_MAX    1024

extern char **environ;

struct count {
    long total;
    long by_nr[NR_MAX];
};

static const char *name_of(long nr) {
    switch (nr) {
#define N(x)                                                                                       \
    case SYS_##x:                                                                                  \
        return #x;
        N(read)
        N(write)
        N(close)
        N(mmap)
        N(munmap) N(mprotect) N(openat) N(getpid) N(sysinfo) N(capget) N(prlimit64) N(newfstatat)
            N(clock_gettime) N(rt_sigprocmask) N(madvise) N(sched_getaffinity) N(gettid) N(brk)
                N(statx) N(fcntl)
#undef N
                    default : return "?";
    }
}

/* The environment with LD_PRELOAD=lib (and any LD_PRELOAD of ours dropped). */
static char **env_with(const char *lib) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 2, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
    if (asprintf(&env[k++], "LD_PRELOAD=%s", lib) < 0) exit(2);
    return env;
}

/* One traced run: 0 with *c filled, 77 where ptrace is refused, else 1. */
static int trace(char **argv, char **env, struct count *c) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return perror("pipe2"), 1;
    pid_t pid = fork();
    if (pid < 0) return perror("fork"), 1;
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) {
            int e = errno;
            if (write(pipefd[1], &e, sizeof e) < 0) _exit(3);
            _exit(77);
        }
        raise(SIGSTOP);
        execve(argv[0], argv, env);
        _exit(127);
    }
    close(pipefd[1]);
    int st, err = 0;
    waitpid(pid, &st, 0);
    /* The pipe is read only once the child is gone: until its exec it holds
     * the writing end. */
    if (WIFEXITED(st) && read(pipefd[0], &err, sizeof err) == (ssize_t)sizeof err) {
        close(pipefd[0]);
        printf("SKIP: ptrace is not permitted here (PTRACE_TRACEME: %s); the system calls of the "
               "start-up cannot be counted\n",
               strerror(err));
        return 77;
    }
    close(pipefd[0]);
    if (!WIFSTOPPED(st)) return fprintf(stderr, "the child did not stop\n"), 1;
    if (ptrace(PTRACE_SETOPTIONS, pid, NULL,
               (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC)) !=
        0) {
        printf("SKIP: ptrace is not permitted here (PTRACE_SETOPTIONS: %s)\n", strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return 77;
    }
    memset(c, 0, sizeof *c);
    int sig = 0;
    for (;;) {
        if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig) != 0)
            return perror("PTRACE_SYSCALL"), 1;
        sig = 0;
        if (waitpid(pid, &st, 0) < 0) return perror("waitpid"), 1;
        if (WIFEXITED(st) || WIFSIGNALED(st)) break;
        if (!WIFSTOPPED(st)) continue;
        if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
            struct ptrace_syscall_info info;
            long n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof info, &info);
            if (n <= 0) return perror("PTRACE_GET_SYSCALL_INFO"), 1;
            if (info.op != PTRACE_SYSCALL_INFO_ENTRY) continue;
            c->total++;
            if (info.entry.nr < NR_MAX) c->by_nr[info.entry.nr]++;
        } else if (WSTOPSIG(st) == SIGTRAP && (st >> 16) == PTRACE_EVENT_EXEC) {
            /* the exec event: not a signal for the program */
        } else if (WSTOPSIG(st) != SIGSTOP && WSTOPSIG(st) != SIGTRAP) {
            sig = WSTOPSIG(st); /* the program's own */
        }
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s exited with status %d\n", argv[0], st);
        return 1;
    }
    return 0;
}

/* The smallest count of RUNS runs. */
static int least(char **argv, const char *lib, struct count *best) {
    char **env = env_with(lib);
    for (int i = 0; i < RUNS; i++) {
        struct count c;
        int rc = trace(argv, env, &c);
        if (rc) return rc;
        if (i == 0 || c.total < best->total) *best = c;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s LIB EMPTY_LIB PROGRAM [ARG...]\n", argv[0]);
        return 2;
    }
    static struct count with, without;
    int rc = least(argv + 3, argv[2], &without);
    if (!rc) rc = least(argv + 3, argv[1], &with);
    if (rc) return rc;
    long added = with.total - without.total;
    printf("%s: %ld system calls under an empty preloaded library, %ld under %s: %ld added "
           "(at most %d allowed)\n",
           argv[3], without.total, with.total, argv[1], added, MAX_ADDED);
    for (long nr = 0; nr < NR_MAX; nr++)
        if (with.by_nr[nr] != without.by_nr[nr])
            printf("  %s (%ld): %+ld\n", name_of(nr), nr, with.by_nr[nr] - without.by_nr[nr]);
    if (added > MAX_ADDED) {
        printf("FAIL: the start-up adds %ld system calls\n", added);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
