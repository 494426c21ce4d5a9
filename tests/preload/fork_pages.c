/* What a fork costs the parent with the shim (issue 13): the pages its fork
 * handlers write after fork(2), each a copy-on-write fault (30 us here).
 * `fork_pages faults [threaded]` prints the median of the parent's minor
 * faults across fork() over 31 forks, with a block pinned first when the shim
 * is there; fork_pages.sh compares it with the same run without the shim.
 * `fork_pages mask [threaded]` checks that the signal mask is the program's
 * in the parent and in the child after a fork; `fork_pages masks`, the same
 * for two threads with different masks forking at once. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void *idle(void *arg) {
    pause();
    return arg;
}

static int cmp(const void *a, const void *b) {
    return *(const long *)a < *(const long *)b ? -1 : *(const long *)a > *(const long *)b;
}

static long faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static int same_mask(const sigset_t *want) {
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    for (int s = 1; s < SIGRTMIN; s++)
        if (sigismember(&now, s) != sigismember(want, s)) return 0;
    return 1;
}

/* Forks 300 times with SIGUSR1 blocked or not; counts parents and children
 * that saw the other thread's mask (regression: one saved mask for all
 * threads let concurrent forks swap them). */
static _Atomic int bad;
static void *forker(void *arg) {
    int block = (int)(long)arg;
    sigset_t want;
    sigemptyset(&want);
    if (block) sigaddset(&want, SIGUSR1);
    pthread_sigmask(SIG_SETMASK, &want, NULL);
    for (int i = 0; i < 300; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(same_mask(&want) ? 0 : 1);
        if (!same_mask(&want)) {
            bad++;
            pthread_sigmask(SIG_SETMASK, &want, NULL);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) bad++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    pthread_t t;
    if (argc > 2 && pthread_create(&t, NULL, idle, NULL) != 0) return 2;
    void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
    if (alloc && !alloc(1 << 20)) return 2; /* the manager in use, its registry filled */
    if (strcmp(argv[1], "mask") == 0) {
        sigset_t want;
        sigemptyset(&want);
        sigaddset(&want, SIGUSR1);
        sigaddset(&want, SIGTERM);
        pthread_sigmask(SIG_SETMASK, &want, NULL);
        pid_t pid = fork();
        if (pid == 0) _exit(same_mask(&want) ? 0 : 1);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) return 2;
        if (!same_mask(&want)) return printf("FAIL: the parent's signal mask changed\n"), 1;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return printf("FAIL: the child's signal mask is not the parent's\n"), 1;
        printf("PASS: the signal mask is kept across fork\n");
        return 0;
    }
    if (strcmp(argv[1], "masks") == 0) { /* two threads, two masks, forking at once */
        pthread_t a, b;
        pthread_create(&a, NULL, forker, (void *)0L);
        pthread_create(&b, NULL, forker, (void *)1L);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        if (bad)
            return printf("FAIL: %d forks left a thread or child with the other's mask\n", bad), 1;
        printf("PASS: two threads forking at once each keep their own mask\n");
        return 0;
    }
    long v[31];
    for (int i = 0; i < 31; i++) {
        long f = faults();
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        v[i] = faults() - f;
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) return 2;
    }
    qsort(v, 31, sizeof *v, cmp);
    printf("%ld\n", v[15]);
    return 0;
}
