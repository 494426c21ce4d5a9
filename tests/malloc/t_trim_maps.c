/* Regression (issue 30, "trims fill the map count"), with hints at 8K:
 * 72,083 malloc(8192), every other freed, dsp_trim(): each freed block's drop
 * split the blocks' one mapping, the process reached vm.max_map_count, and
 * malloc(64 MiB) returned NULL where glibc's succeeds (so did pthread_create
 * and an mprotect that splits a mapping). The program's own maps stand in
 * for most of those blocks, so the test pins about 14,000 of them at any
 * limit. Under LD_PRELOAD with DSP_MALLOC_MIN=8K. */
#include "malloc_test.h"

#include <pthread.h>
#include <sys/mman.h>

static size_t maps(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    size_t n = 0;
    int c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static size_t read_max(void) {
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    unsigned long v = 65530;
    if (f) {
        if (fscanf(f, "%lu", &v) != 1) v = 65530;
        fclose(f);
    }
    return v;
}

static pthread_barrier_t all_started;

static void *wait_for_all(void *arg) {
    pthread_barrier_wait(&all_started);
    return arg;
}

int main(void) {
    size_t (*trim)(void) = (size_t(*)(void))shim("dsp_trim");
    size_t max = read_max(), reserve = max / 8 > 1024 ? max / 8 : 1024; /* src/maps.c's */
    /* The program's own maps, until 2,000 short of the reserve: single pages,
     * protections alternating so that none merges with its neighbour. */
    size_t fill = max - reserve - 2000 - maps();
    char *own = mmap(NULL, (fill + 64) * 4096, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(own != MAP_FAILED);
    for (size_t i = 0; i < fill; i += 2) mprotect(own + i * 4096, 4096, PROT_READ);
    /* Holes enough to pass the limit: 2 maps each. */
    size_t n = reserve + 2000 + 4000 + 1;
    char **blocks = calloc(n, sizeof *blocks);
    CHECK(blocks);
    for (size_t i = 0; i < n; i++) {
        blocks[i] = malloc(8192);
        CHECK(blocks[i], "malloc %zu", i);
        blocks[i][0] = (char)i;
    }
    CHECK(stat_of("malloc_hinted") >= (long long)n, "hinted %lld", stat_of("malloc_hinted"));
    for (size_t i = 0; i < n; i += 2) free(blocks[i]);
    trim();
    size_t now = maps();
    fprintf(stderr, "after the trim: %zu maps of %zu (reserve %zu)\n", now, max, reserve);
    CHECK(now <= max - reserve + 2, "the trim left %zu maps of %zu", now, max);
    char *big = malloc(64 << 20);
    CHECK(big, "malloc(64 MiB) after the trim");
    memset(big, 1, 64 << 20);
    free(big);
    pthread_t t[64];
    CHECK(pthread_barrier_init(&all_started, NULL, 65) == 0);
    for (int i = 0; i < 64; i++)
        CHECK(pthread_create(&t[i], NULL, wait_for_all, NULL) == 0, "thread %d", i);
    pthread_barrier_wait(&all_started);
    for (int i = 0; i < 64; i++) pthread_join(t[i], NULL);
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    CHECK(mprotect(p + 4096, 4096, PROT_READ) == 0, "mprotect split");
    munmap(p, 3 * 4096);
    for (size_t i = 1; i < n; i += 2) {
        CHECK(blocks[i][0] == (char)i, "block %zu", i);
        free(blocks[i]);
    }
    free(blocks);
    munmap(own, (fill + 64) * 4096);
    PASS();
}
