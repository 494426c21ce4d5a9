/* Helper for the node ledger's tests (tests/node/node.sh): one process of a job
 * that pins through dspreload.h and says what it got on stdout.
 *   node_pin hold TOTAL_MB BLOCK_MB STOP [GO]  waits for the file GO (when
 *       given), pins BLOCK_MB blocks until TOTAL_MB or refused, prints
 *       "pinned N" (MiB), then holds them until the file STOP exists
 *   node_pin pool MB STOP [threaded|calls GO]  pins MB and frees it (the pool keeps
 *       it), prints "pooled", waits for STOP; threaded: with an idle thread of
 *       its own made first (as every CUDA program has); calls: single-threaded,
 *       and once the file GO exists, one 4 MiB alloc+free every 50 ms
 *   node_pin threads [N]                      makes N idle threads (0), pins and
 *       frees 16 MiB, then prints "threads T" (Threads: of /proc/self/status)
 *   node_pin forkthreads N [P]                makes P idle threads (1), forks a
 *       child that never execs, which does what "threads N" does
 *   node_pin want MB SECONDS                  asks for MB until given or SECONDS pass:
 *       "got MS" (milliseconds after the first try) and exit 0, or "refused", 1
 *   node_pin fork                             pins 16 MiB, forks a child that pins
 *       nothing and one that pins 16 MiB, each printing its pid and running the
 *       shell command $NODE_PROBE, one after the other
 *   node_pin rawfork                          pins 16 MiB, then _Fork (no fork
 *       handlers run): the child frees that block and pins and frees 8 MiB;
 *       the parent then prints "parent PID" and runs $NODE_PROBE
 *   node_pin closefd OWN STOP [GO]            pins 16 MiB, closes the ledger's
 *       descriptor and opens the file OWN, which gets its number, and prints
 *       "reused N"; once the file GO exists (when given), frees the 16 MiB
 *       and pins and frees 4 MiB every 20 ms until STOP exists, then prints
 *       "own file unlocked" unless a lock of ours is on OWN ("own file
 *       locked")
 *   node_pin closefork OWN                    pins 16 MiB, closes the ledger's
 *       descriptor, opens OWN at its number, forks: prints "child kept its
 *       file" when the child still has OWN under that number
 *   node_pin vforkexit                        pins 16 MiB, then vfork, and the
 *       child calls exit (destructors and all); the parent prints "parent
 *       PID" and runs $NODE_PROBE
 *   node_pin churn MB STOP [threaded]         pins MB, prints "joined", then
 *       frees, trims and pins MB anew every 10 ms (each a new pin, a
 *       reservation in the ledger) until STOP exists; prints "churned N
 *       refused R"; threaded: with an idle thread of its own made first
 *   node_pin scribble LEDGER                  not under the shim: attaches the
 *       segment the ledger file names and writes nonsense into its
 *       counters, the magic left intact (users 1063331291, a cap of 2 EiB,
 *       15 EiB in each slot used) */
#include <dspreload.h>

#include "ledger.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void wait_file(const char *path) {
    while (access(path, F_OK) != 0) usleep(10 * 1000);
}

static void touch(char *p, size_t len) {
    for (size_t off = 0; off < len; off += 4096) p[off] = 1;
}

static void *idle(void *arg) {
    pause();
    return arg;
}

static void idle_threads(int n) {
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) != 0) exit(2);
    }
}

static int threads_now(void) {
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

/* The parent's end of rawfork and vforkexit: the child waited for, "parent
 * PID" printed, $NODE_PROBE run while the block p is live, p freed. */
static int parent_after(pid_t c, char *p) {
    int st;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) return 4;
    printf("parent %d\n", (int)getpid());
    fflush(stdout);
    const char *probe = getenv("NODE_PROBE");
    if (probe && system(probe) != 0) return 6;
    return dsp_free(p) == 0 ? 0 : 5;
}

/* The descriptor of the node ledger (a /dev/shm/dspreload- file), or -1. */
static int ledger_fd(void) {
    int found = -1;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char link[300], to[256];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, to, sizeof to - 1);
        if (n <= 0) continue;
        to[n] = 0;
        if (!strncmp(to, "/dev/shm/dspreload-", 19)) found = atoi(e->d_name);
    }
    if (d) closedir(d);
    return found;
}

/* 1 when some open file description holds an OFD lock on the first 256
 * bytes of path (the slots' bytes), seen from an open of its own. */
static int ofd_locked(const char *path) {
    int fd = open(path, O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 256};
    int locked = fd >= 0 && fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    if (fd >= 0) close(fd);
    return locked;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "hold")) {
        size_t total = (size_t)atol(argv[2]) * MiB, block = (size_t)atol(argv[3]) * MiB, got = 0;
        if (argc > 5) wait_file(argv[5]);
        while (got + block <= total) {
            char *p = dsp_alloc(block);
            if (!p) break;
            touch(p, block);
            got += block;
        }
        printf("pinned %zu\n", got / MiB);
        fflush(stdout);
        wait_file(argv[4]);
        return 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "pool")) {
        size_t len = (size_t)atol(argv[2]) * MiB;
        const char *mode = argc > 4 ? argv[4] : "";
        if (!strcmp(mode, "threaded")) idle_threads(1);
        void *p = dsp_alloc(len);
        if (!p || dsp_free(p) != 0) return printf("refused\n"), 1;
        printf("pooled\n");
        fflush(stdout);
        if (!strcmp(mode, "calls") && argc > 5) {
            wait_file(argv[5]);
            while (access(argv[3], F_OK) != 0) {
                dsp_free(dsp_alloc(4 * MiB));
                usleep(50 * 1000);
            }
        }
        wait_file(argv[3]);
        return 0;
    }
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "forkthreads")) {
        idle_threads(argc == 4 ? atoi(argv[3]) : 1); /* threaded, as every CUDA program */
        fflush(stdout);
        pid_t c = fork();
        if (c == 0) {
            idle_threads(atoi(argv[2]));
            void *p = dsp_alloc(16 * MiB);
            if (!p || dsp_free(p) != 0) _exit(3);
            printf("threads %d\n", threads_now());
            fflush(stdout);
            _exit(0);
        }
        int st;
        return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) ? WEXITSTATUS(st) : 4;
    }
    if (argc >= 2 && !strcmp(argv[1], "threads")) {
        idle_threads(argc > 2 ? atoi(argv[2]) : 0);
        void *p = dsp_alloc(16 * MiB);
        if (!p || dsp_free(p) != 0) return printf("refused\n"), 1;
        printf("threads %d\n", threads_now());
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "want")) {
        size_t len = (size_t)atol(argv[2]) * MiB;
        double t0 = now_ms(), until = t0 + atof(argv[3]) * 1e3;
        do {
            char *p = dsp_alloc(len);
            if (p) {
                printf("got %.0f\n", now_ms() - t0);
                return 0;
            }
            usleep(50 * 1000);
        } while (now_ms() < until);
        printf("refused\n");
        return 1;
    }
    if (argc == 2 && !strcmp(argv[1], "fork")) {
        char *p = dsp_alloc(16 * MiB);
        if (!p) return 2;
        for (int k = 0; k < 2; k++) {
            pid_t c = fork();
            if (c == 0) {
                if (k == 1 && !dsp_alloc(16 * MiB)) _exit(3);
                printf("child %d\n", (int)getpid());
                fflush(stdout);
                const char *probe = getenv("NODE_PROBE");
                _exit(probe && system(probe) != 0 ? 6 : 0);
            }
            int st;
            if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) return 4;
        }
        printf("parent %d\n", (int)getpid());
        return dsp_free(p) == 0 ? 0 : 5;
    }
    if (argc == 2 && !strcmp(argv[1], "rawfork")) {
        char *p = dsp_alloc(16 * MiB);
        if (!p) return 2;
        fflush(stdout);
        pid_t c = _Fork();
        if (c == 0) {
            /* A copy of the parent's memory that no fork handler has told:
             * none of this may reach the parent's slot. */
            if (dsp_free(p) != 0) _exit(3);
            char *q = dsp_alloc(8 * MiB);
            if (!q || dsp_free(q) != 0) _exit(3);
            _exit(0);
        }
        return parent_after(c, p);
    }
    if (argc >= 4 && !strcmp(argv[1], "closefd")) {
        char *p = dsp_alloc(16 * MiB);
        int fd = ledger_fd();
        if (!p || fd < 0) return 2;
        close(fd); /* as closefrom would (the slot's lock stays: the mapping keeps the file) */
        int own = open(argv[2], O_RDWR | O_CREAT, 0600);
        if (own != fd) return 3;
        printf("reused %d\n", own);
        fflush(stdout);
        if (argc > 4) wait_file(argv[4]);
        if (dsp_free(p) != 0) return 4;
        while (access(argv[3], F_OK) != 0) {
            dsp_free(dsp_alloc(4 * MiB));
            usleep(20 * 1000);
        }
        printf("own file %s\n", ofd_locked(argv[2]) ? "locked" : "unlocked");
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "closefork")) {
        char *p = dsp_alloc(16 * MiB);
        int fd = ledger_fd();
        if (!p || fd < 0) return 2;
        close(fd); /* the parent notices at its next reclaim, not before this fork */
        int own = open(argv[2], O_RDWR | O_CREAT, 0600);
        struct stat want, got;
        if (own != fd || fstat(own, &want) != 0) return 3;
        fflush(stdout);
        pid_t c = fork();
        if (c == 0)
            _exit(fstat(own, &got) == 0 && got.st_ino == want.st_ino && got.st_dev == want.st_dev
                      ? 0
                      : 7);
        int st;
        if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st)) return 4;
        printf("child %s its file\n", WEXITSTATUS(st) == 0 ? "kept" : "lost");
        return dsp_free(p) == 0 ? 0 : 5;
    }
    if (argc == 2 && !strcmp(argv[1], "vforkexit")) {
        char *p = dsp_alloc(16 * MiB);
        if (!p) return 2;
        fflush(stdout);
        fflush(stderr);
        pid_t c = vfork();
        if (c == 0) exit(0); /* undefined after vfork, and done all the same */
        return parent_after(c, p);
    }
    if (argc >= 4 && !strcmp(argv[1], "churn")) {
        size_t len = (size_t)atol(argv[2]) * MiB;
        if (argc > 4 && !strcmp(argv[4], "threaded")) idle_threads(1);
        char *p = dsp_alloc(len);
        if (!p) return 2;
        printf("joined\n");
        fflush(stdout);
        long n = 0, refused = 0;
        while (access(argv[3], F_OK) != 0) {
            if (p) dsp_free(p);
            dsp_trim();
            p = dsp_alloc(len);
            if (p)
                touch(p, len), n++;
            else
                refused++;
            usleep(10 * 1000);
        }
        printf("churned %ld refused %ld\n", n, refused);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "scribble")) {
        struct dsp_ledger_file f;
        int fd = open(argv[2], O_RDONLY);
        if (fd < 0 || pread(fd, &f, sizeof f, 0) != (ssize_t)sizeof f) return 2;
        struct dsp_ledger_map *m = shmat(f.shmid, NULL, 0);
        if (m == (void *)-1) return 3;
        uint32_t hwm = atomic_load(&m->head.h.hwm);
        atomic_store(&m->head.h.users, 1063331291u);
        atomic_store(&m->head.h.cap, (uint64_t)1 << 61);
        for (uint32_t i = 0; i < hwm && i < DSP_LEDGER_SLOTS; i++)
            atomic_store(&m->slot[i].reserved, (uint64_t)15 << 60);
        printf("scribbled %u slots\n", hwm);
        return 0;
    }
    fprintf(stderr, "usage: node_pin "
                    "hold|pool|want|fork|rawfork|closefd|closefork|vforkexit|churn|scribble ...\n");
    return 2;
}
