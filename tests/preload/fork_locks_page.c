/* Start-up leaves the fork locks' page unwritten (issue 29: each page the
 * constructor first writes costs a fault in every process; the locks are a
 * page of their own, wiped in a fork child, src/fork.h). The constructor's
 * registrations (dsp_fork_register) took fork_mu, writing that page.
 *
 * fork_locks_page OFFSET: run under LD_PRELOAD=libdspreload.so; OFFSET is
 * dsp_fork_locks' address in the library (nm). The page must not be resident
 * at main(), and must be after a fork with a thread running (which takes the
 * locks): so a wrong offset fails too. */
#include "pages.h"

#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void *wait_forever(void *arg) {
    (void)arg;
    pause();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    uintptr_t base = shim_base();
    if (!base) return 1;
    uintptr_t locks = base + (uintptr_t)strtoull(argv[1], NULL, 16);
    int at_start = page_resident(locks);
    pthread_t t;
    if (pthread_create(&t, NULL, wait_forever, NULL) != 0) return 2;
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    int st;
    waitpid(pid, &st, 0);
    int after_fork = page_resident(locks);
    printf("fork locks' page resident: at main %d, after a threaded fork %d\n", at_start,
           after_fork);
    if (at_start != 0 || after_fork != 1) {
        fprintf(stderr,
                "FAIL: start-up must leave the page unwritten; a threaded fork writes it\n");
        return 1;
    }
    return 0;
}
