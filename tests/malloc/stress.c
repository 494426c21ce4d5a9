/* A multi-threaded allocation stress program: every thread runs a seeded
 * sequence of malloc, calloc, realloc, posix_memalign, aligned_alloc and free
 * over mixed sizes (bytes to megabytes), hands blocks to other threads to
 * free, and checks every byte it wrote. It prints a digest that depends only
 * on the seeds, so a run under the shim must print exactly what a run without
 * it prints. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define SLOTS   64
#define OPS     4000

struct slot {
    _Atomic(unsigned char *) p;
    size_t n;
    unsigned seed;
};
static struct slot shared[SLOTS];
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t pick_size(uint64_t *s) {
    switch (rnd(s) % 8) {
    case 0:
        return rnd(s) % 64;
    case 1:
    case 2:
        return rnd(s) % 4096;
    case 3:
    case 4:
        return 4096 + rnd(s) % (256 << 10);
    case 5:
    case 6:
        return (256 << 10) + rnd(s) % (2 << 20);
    default:
        return (2 << 20) + rnd(s) % (6 << 20);
    }
}

static void put(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i += 61) p[i] = (unsigned char)(seed + i);
    if (n) p[n - 1] = (unsigned char)seed;
}
static int ok(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i += 61)
        if (p[i] != (unsigned char)(seed + i) && i != n - 1) return 0;
    return !n || p[n - 1] == (unsigned char)seed;
}

static void *worker(void *arg) {
    uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1), digest = 0;
    unsigned char *own[16] = {0};
    size_t own_n[16] = {0};
    unsigned own_seed[16] = {0};
    for (int op = 0; op < OPS; op++) {
        int k = (int)(rnd(&s) % 16);
        unsigned seed = (unsigned)rnd(&s);
        size_t n = pick_size(&s);
        if (own[k] && !ok(own[k], own_n[k], own_seed[k])) {
            fprintf(stderr, "corrupt block\n");
            exit(1);
        }
        switch (rnd(&s) % 6) {
        case 0:
            free(own[k]);
            own[k] = malloc(n);
            break;
        case 1: {
            free(own[k]);
            own[k] = calloc(1, n);
            for (size_t i = 0; i < n; i += 509)
                if (own[k][i]) {
                    fprintf(stderr, "calloc not zero\n");
                    exit(1);
                }
            break;
        }
        case 2: { /* realloc keeps the common prefix */
            unsigned char *q = realloc(own[k], n ? n : 1);
            if (!q) exit(1);
            size_t keep = own_n[k] < n ? own_n[k] : n;
            for (size_t i = 0; i + 1 < keep; i += 61)
                if (q[i] != (unsigned char)(own_seed[k] + i)) {
                    fprintf(stderr, "realloc lost data\n");
                    exit(1);
                }
            own[k] = q;
            break;
        }
        case 3: {
            free(own[k]);
            void *p = NULL;
            size_t align = (size_t)8 << (rnd(&s) % 14);
            if (posix_memalign(&p, align, n) || (uintptr_t)p % align) exit(1);
            own[k] = p;
            break;
        }
        case 4: {
            free(own[k]);
            size_t align = (size_t)16 << (rnd(&s) % 10);
            own[k] = aligned_alloc(align, (n + align - 1) / align * align);
            if ((uintptr_t)own[k] % align) exit(1);
            n = (n + align - 1) / align * align;
            break;
        }
        default: { /* hand the block to whichever thread takes the slot next */
            int j = (int)(rnd(&s) % SLOTS);
            pthread_mutex_lock(&shared_mu);
            unsigned char *old = atomic_exchange(&shared[j].p, own[k]);
            size_t old_n = shared[j].n;
            unsigned old_seed = shared[j].seed;
            shared[j].n = own_n[k];
            shared[j].seed = own_seed[k];
            pthread_mutex_unlock(&shared_mu);
            if (old && !ok(old, old_n, old_seed)) {
                fprintf(stderr, "corrupt shared block\n");
                exit(1);
            }
            free(old);
            own[k] = malloc(n);
        }
        }
        if (!own[k] && n) {
            fprintf(stderr, "allocation of %zu failed\n", n);
            exit(1);
        }
        own_n[k] = n;
        own_seed[k] = seed;
        put(own[k], n, seed);
        digest = digest * 1000003 + n + seed;
    }
    for (int k = 0; k < 16; k++) free(own[k]);
    return (void *)(uintptr_t)digest;
}

int main(void) {
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    uint64_t total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *d;
        pthread_join(t[i], &d);
        total ^= (uint64_t)(uintptr_t)d;
    }
    for (int j = 0; j < SLOTS; j++) free(shared[j].p);
    printf("stress digest %016llx\n", (unsigned long long)total);
    return 0;
}
