/* Counting a child's system calls with ptrace (issue 29: the libaio hooks must
 * add none, and the fd cache's first use none to a process that never uses
 * it), shared by the tests of tests/aio. The child marks a window with two
 * getppid() system calls; the parent traces it and counts every system call
 * made inside, by number. No strace needed. */
#ifndef DSP_SYSCALL_WINDOW_H
#define DSP_SYSCALL_WINDOW_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define WINDOW_NR_MAX 512

struct window {
    long by_nr[WINDOW_NR_MAX]; /* system calls inside the window, by number */
    long total;
    /* The child's SigCgt (signals with a handler) when the window opened. */
    unsigned long long caught;
};

/* The child's side: the window opens, and closes, at each call. */
static inline void window_mark(void) {
    syscall(SYS_getppid);
}

/* SigCgt of /proc/PID/status. */
static inline unsigned long long window_caught(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s: %s", path, strerror(errno));
    unsigned long long v = 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = sscanf(line, "SigCgt: %llx", &v) == 1;
    fclose(f);
    cr_assert(found, "no SigCgt in %s", path);
    return v;
}

/* Runs child(arg) in a forked, traced child, which must end with _exit(0),
 * and counts into *w the system calls between its two window_mark() calls. */
static inline void window_count(void (*child)(void *), void *arg, struct window *w) {
    memset(w, 0, sizeof *w);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0) _exit(20);
        raise(SIGSTOP);
        child(arg);
        _exit(0);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSTOPPED(st), "the child did not stop for the tracer (status %#x)", st);
    cr_assert_eq(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL), 0);
    int in_window = 0, sig = 0;
    for (;;) {
        cr_assert_eq(ptrace(PTRACE_SYSCALL, pid, 0, sig), 0);
        sig = 0;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        if (WIFEXITED(st) || WIFSIGNALED(st)) break;
        if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
            sig = WSTOPSIG(st); /* a signal for the child: delivered */
            continue;
        }
        struct __ptrace_syscall_info info;
        cr_assert(ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info) > 0);
        if (info.op != PTRACE_SYSCALL_INFO_ENTRY) continue;
        long nr = (long)info.entry.nr;
        if (nr == SYS_getppid) {
            in_window = !in_window;
            if (in_window) w->caught = window_caught(pid);
            continue;
        }
        if (!in_window) continue;
        w->total++;
        if (nr >= 0 && nr < WINDOW_NR_MAX) w->by_nr[nr]++;
    }
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed: status %#x", st);
}

/* "nr:count" for each number counted, but the ones in skip (ended by -1). */
static inline void window_list(const struct window *w, const long *skip, char *out, size_t n) {
    out[0] = 0;
    for (long nr = 0; nr < WINDOW_NR_MAX; nr++) {
        int skipped = 0;
        for (const long *s = skip; *s >= 0; s++) skipped |= *s == nr;
        if (w->by_nr[nr] && !skipped)
            snprintf(out + strlen(out), n - strlen(out), " %ld:%ld", nr, w->by_nr[nr]);
    }
}

#endif
