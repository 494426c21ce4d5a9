/* Regression (issue 12, signals): a hinted malloc or free in a signal handler
 * that interrupts its thread inside the shim's lock (cudaHostAlloc,
 * cudaFreeHost, dsp_alloc, dsp_free) deadlocked, after about 1,000 signals.
 * Now the handler's malloc goes to glibc and its free of a hinted block is
 * deferred to the next unlock. Runs under LD_PRELOAD with DSP_MALLOC_MIN=64K
 * against the libcudart test double; needs 10,000 x 64 KiB pinned. */
#include "cuda_test.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#define SIGNALS 10000
#define BIG     (256 << 10)

static char *pre[SIGNALS]; /* hinted blocks, one for each handler run to free */
static atomic_int handled, next_pre, stop, handler_failures;
static pthread_t target;

static void on_signal(int sig) {
    (void)sig;
    int saved = errno;
    char *p = malloc(BIG);
    if (p) {
        for (size_t i = 0; i < BIG; i += 4096) p[i] = (char)i;
        p[BIG - 1] = 1;
        free(p);
    } else {
        atomic_fetch_add(&handler_failures, 1);
    }
    int i = atomic_fetch_add(&next_pre, 1);
    if (i < SIGNALS) free(pre[i]);
    atomic_fetch_add(&handled, 1);
    errno = saved;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *signaller(void *arg) {
    (void)arg;
    for (int i = 0; i < SIGNALS; i++) {
        pthread_kill(target, SIGUSR1);
        double t0 = now();
        while (atomic_load(&handled) <= i) { /* one at a time: pending signals merge */
            if (now() - t0 > 20) {
                fprintf(stderr, "FAIL: signal %d not handled in 20 s (deadlock?)\n", i);
                _exit(1);
            }
            sched_yield();
        }
    }
    atomic_store(&stop, 1);
    return NULL;
}

int main(void) {
    void *(*dsp_alloc)(size_t) = (void *(*)(size_t))shim("dsp_alloc");
    int (*dsp_free)(void *) = (int (*)(void *))shim("dsp_free");
    long long blocks0 = stat_of("blocks_live"), hinted0 = stat_of("malloc_hinted_bytes");
    for (int i = 0; i < SIGNALS; i++) {
        pre[i] = malloc(64 << 10);
        CHECK(pre[i] && is_pinned(pre[i], 64 << 10), "hinted block %d (needs 625 MiB pinned)", i);
        pre[i][0] = 1;
    }
    CHECK(stat_of("blocks_live") == blocks0 + SIGNALS);

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    target = pthread_self();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, signaller, NULL) == 0);
    long loops = 0;
    while (!atomic_load(&stop)) {
        void *h = NULL;
        CHECK(cudaHostAlloc(&h, 1 << 20, 0) == cudaSuccess && h);
        CHECK(cudaFreeHost(h) == cudaSuccess);
        void *d = dsp_alloc(1 << 20);
        CHECK(d);
        CHECK(dsp_free(d) == 0);
        loops++;
    }
    pthread_join(t, NULL);
    /* One more pass through the lock: drains anything a last signal deferred. */
    void *d = dsp_alloc(1 << 20);
    CHECK(d && dsp_free(d) == 0);

    long long deferred = stat_of("deferred_frees");
    printf("%d signals handled over %ld loops; %lld frees deferred\n", atomic_load(&handled),
           loops, deferred);
    CHECK(atomic_load(&handled) == SIGNALS);
    CHECK(atomic_load(&handler_failures) == 0, "malloc in the handler failed");
    CHECK(deferred > 0, "no signal landed inside the lock: the deferred path did not run");
    CHECK(stat_of("deferred_frees_leaked") == 0);
    CHECK(stat_of("blocks_live") == blocks0, "blocks live %lld, baseline %lld",
          stat_of("blocks_live"), blocks0);
    CHECK(stat_of("malloc_hinted_bytes") == hinted0, "hinted bytes %lld, baseline %lld",
          stat_of("malloc_hinted_bytes"), hinted0);
    PASS();
}
