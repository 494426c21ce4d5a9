#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int child_status(pid_t pid) {
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

Test(fork, child_does_not_claim_inherited_blocks_are_pinned) {
    char *p = dsp_alloc(1 << 20);
    char *cached = dsp_alloc(1 << 20);
    memset(p, 7, 1 << 20);
    dsp_free(cached);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = 0;
        if (dsp_is_pinned(p, 1)) rc |= 1;     /* mlock is not inherited */
        if (status_kb("VmLck") != 0) rc |= 2; /* really nothing locked here */
        if (p[12345] != 7) rc |= 4;           /* data still readable */
        if (stat_of("pinned_bytes") != 0) rc |= 8;
        if (stat_of("pool_cached_bytes") != 0) rc |= 16; /* unlocked pool given back */
        char *q = dsp_alloc(1 << 20);                    /* fresh pins work in the child */
        if (!q || !dsp_is_pinned(q, 1 << 20) || status_kb("VmLck") < 1024) rc |= 32;
        if (dsp_free(p) != 0) rc |= 64; /* inherited blocks can be freed */
        _exit(rc);
    }
    cr_assert_eq(child_status(pid), 0, "child checks failed (bit mask)");
    cr_assert(dsp_is_pinned(p, 1 << 20), "the parent is unaffected");
    cr_assert_eq(p[0], 7);
    cr_assert_eq(stat_of("pool_cached_bytes"), 1 << 20);
}

/* Threads allocate, free and look up while the main thread forks: the prefork
 * handlers must leave no lock held in the child. */
static atomic_int stop;

static void *busy(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        char *p = dsp_alloc(64 << 10);
        if (p) {
            dsp_is_pinned(p + 100, 10);
            dsp_free(p);
        }
    }
    return NULL;
}

Test(fork, no_deadlock_when_forking_under_load, .timeout = 60) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, busy, NULL);
    for (int i = 0; i < 40; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10); /* a deadlock ends as SIGALRM, not as a hung suite */
            char *p = dsp_alloc(128 << 10);
            int ok = p && dsp_is_pinned(p, 128 << 10) && dsp_free(p) == 0;
            _exit(ok ? 0 : 1);
        }
        cr_assert_eq(child_status(pid), 0, "fork %d", i);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}
