/* The runner of the mini harness (see harness.h); built only with it. */
#ifdef DSP_MINI_CRITERION
#include "harness.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static struct mc_test *tests, **tail = &tests;

void mc_register(struct mc_test *t) {
    *tail = t;
    tail = &t->next;
}

void mc_fail(const char *file, int line, const char *expr, const char *fmt, ...) {
    fprintf(stderr, "[----] %s:%d: Assertion failed: %s", file, line, expr);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1);
}

int main(void) {
    int total = 0, passed = 0, failed = 0, crashed = 0;
    for (struct mc_test *t = tests; t; t = t->next) {
        total++;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(t->timeout > 0 ? (unsigned)t->timeout : 30);
            if (t->init) t->init();
            t->fn();
            fflush(NULL);
            exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            passed++;
            continue;
        }
        if (WIFSIGNALED(st)) {
            crashed++;
            fprintf(stderr, "[FAIL] %s::%s: killed by signal %d%s\n", t->suite, t->name,
                    WTERMSIG(st), WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
        } else {
            failed++;
            fprintf(stderr, "[FAIL] %s::%s: exit status %d\n", t->suite, t->name, WEXITSTATUS(st));
        }
    }
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d\n",
            total, passed, failed, crashed);
    return failed || crashed ? 1 : 0;
}
#endif
