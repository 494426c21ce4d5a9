/* Regression (review of issue 13's fork change): another library's fork
 * handler, run by glibc while the shim's handlers hold every lock of the
 * shim, allocates a hinted block; the shim must serve it from glibc, not wait
 * for the lock its own thread holds. Threaded, so the shim takes its locks.
 * Run under a timeout: the bug was a hang. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int forkalloc_ran(void);

static void *idle(void *arg) {
    pause();
    return arg;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) != 0) return 2;
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 1;
    }
    if (forkalloc_ran() != 20)
        return printf("FAIL: the handler ran %d times\n", forkalloc_ran()), 1;
    printf("PASS: 20 forks, the other library's handler allocated in each\n");
    return 0;
}
