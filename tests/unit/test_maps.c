/* Memory maps (issue 12, "one VMA per block"): blocks were populated before
 * they were locked, so each got an anon_vma of its own and never merged with
 * its neighbour; about 65,500 live blocks exhausted vm.max_map_count and broke
 * the whole process (malloc, mmap, pthread_create, dlopen), for good. */
#include "manager.h"
#include "maps.h"
#include "helpers.h"

#include "harness.h"
#include <dlfcn.h>
#include <dspreload.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *nothing(void *arg) {
    return arg;
}

/* What a broken process could no longer do. */
static void process_still_works(void) {
    void *big = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(big, MAP_FAILED, "mmap of 64 MiB: %s", strerror(errno));
    memset(big, 1, 64 << 20);
    munmap(big, 64 << 20);
    char *m = malloc(64 << 20);
    cr_assert_not_null(m, "malloc of 64 MiB");
    memset(m, 1, 64 << 20);
    free(m);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, nothing, NULL), 0, "pthread_create");
    pthread_join(t, NULL);
    void *h = dlopen("libm.so.6", RTLD_NOW);
    cr_assert_not_null(h, "dlopen: %s", dlerror());
    dlclose(h);
}

/* Maps inside the arena: the manager's own. The whole process's count also
 * holds the sanitizers' shadow maps, which ThreadSanitizer adds as memory is
 * touched. */
static size_t arena_maps(void) {
    return maps_over(atomic_load(&dsp_mgr.lo), atomic_load(&dsp_mgr.hi));
}

#define N 100000
static char *blocks[N];

Test(maps, live_blocks_share_vmas, .timeout = 240) {
    process_still_works();               /* its own maps (a cached thread stack) before the count */
    cr_assert_not_null(dsp_alloc(4096)); /* the arena exists */
    size_t before = arena_maps();
    for (int i = 0; i < N; i++) {
        blocks[i] = dsp_alloc(4096);
        cr_assert_not_null(blocks[i], "block %d: %s", i, strerror(errno));
        blocks[i][0] = (char)i;
    }
    size_t live = arena_maps();
    cr_assert_leq(live, before + 300, "%d live 4 KiB blocks took %zu maps (from %zu)", N,
                  live - before, before);
    cr_assert(dsp_is_pinned(blocks[N / 2], 4096));
    cr_assert_geq(status_kb("VmLck"), (long)N * 4, "every block is locked");
    process_still_works();
    for (int i = 0; i < N; i++) {
        cr_assert_eq(blocks[i][0], (char)i);
        cr_assert_eq(dsp_free(blocks[i]), 0);
    }
    dsp_trim();
    size_t after = arena_maps();
    cr_assert_leq(after, before + 4, "after free and dsp_trim %zu maps remain (from %zu)", after,
                  before);
}

/* Blocks above the chunk size are pinned one by one: they merge too. */
Test(maps, exact_blocks_share_vmas, .timeout = 120) {
    cr_assert_not_null(dsp_alloc(4096)); /* the arena exists */
    size_t before = arena_maps();
    for (int i = 0; i < 3000; i++) {
        blocks[i] = dsp_alloc(300 << 10);
        cr_assert_not_null(blocks[i]);
    }
    size_t live = arena_maps();
    cr_assert_leq(live, before + 10, "3000 blocks of 300 KiB took %zu maps", live - before);
    /* Freed in an order that leaves holes, then trimmed: holes close again. */
    for (int i = 0; i < 3000; i += 2) cr_assert_eq(dsp_free(blocks[i]), 0);
    for (int i = 1; i < 3000; i += 2) cr_assert_eq(dsp_free(blocks[i]), 0);
    dsp_trim();
    cr_assert_leq(arena_maps(), before + 4);
}

static void no_pool(void) {
    setenv("DSP_POOL_MAX", "0", 1); /* every free drops its block: holes at once */
}

/* The program's own maps, until the process has about `to`: single pages,
 * protections alternating so that none merges with its neighbour. Returns
 * the mapping (of *len bytes) for munmap. */
static char *own_maps(size_t to, size_t *len) {
    size_t fill = to - dsp_maps_count();
    *len = (fill + 64) * 4096;
    char *own = mmap(NULL, *len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_neq(own, MAP_FAILED);
    for (size_t i = 0; i < fill; i += 2) mprotect(own + i * 4096, 4096, PROT_READ);
    return own;
}

/* Blocks that cannot merge (huge-page and small-page neighbours alternate),
 * next to a program that maps a lot itself: the manager refuses new pins
 * before the process reaches vm.max_map_count, and the program keeps the
 * reserve. */
Test(maps, manager_leaves_the_program_a_reserve, .init = no_pool, .timeout = 240) {
    size_t max = dsp_maps_max(), reserve = dsp_maps_reserve(max), own_len;
    char *own = own_maps(max - reserve - 400, &own_len);
    size_t start = dsp_maps_count();
    cr_assert_geq(start, max - reserve - 600, "the program's maps were not made (%zu)", start);
    int refused = 0, made = 0;
    void *got[2000];
    for (int i = 0; i < 2000 && !refused; i++) {
        got[made] = dsp_alloc(i % 2 ? (2 << 20) : (300 << 10));
        if (!got[made]) {
            cr_assert_eq(errno, ENOMEM);
            refused = 1;
        } else {
            made++;
        }
        if (refused || i % 16 == 0) /* a count reads all 57,000 lines */
            cr_assert_leq(dsp_maps_count(), max - reserve + 2, "the manager went into the reserve");
    }
    cr_assert(refused, "no refusal after %d unmergeable blocks", made);
    cr_assert_gt(made, 100, "refused too early (%d blocks)", made);
    /* The program still has its reserve: half of it, in maps of its own. */
    char *more =
        mmap(NULL, reserve * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_neq(more, MAP_FAILED);
    for (size_t i = 0; i < reserve / 2; i++)
        cr_assert_eq(mprotect(more + i * 2 * 4096, 4096, PROT_READ), 0, "map %zu of the reserve",
                     i);
    munmap(more, reserve * 4096);
    process_still_works();
    for (int i = 0; i < made; i++)
        cr_assert_eq(dsp_free(got[i]), 0, "free with the maps near the limit");
    munmap(own, own_len);
    dsp_trim();
    usleep(150 * 1000); /* a refusal is remembered for 100 ms (maps.c) */
    void *again = dsp_alloc(300 << 10);
    cr_assert_not_null(again, "pins work again once the maps are back (after the refusal pause)");
}

static pthread_barrier_t all_started;

static void *wait_for_all(void *arg) {
    pthread_barrier_wait(&all_started);
    return arg;
}

/* Regression (issue 30, "trims fill the map count"): every other block of
 * 72,083 live 4 KiB ones freed, then dsp_trim(): each drop cut a hole into
 * the middle of the blocks' one mapping, and the trim took the process to
 * 65,531 maps (vm.max_map_count 65,530). The program could then create no
 * thread and split no mapping, and malloc(64 MiB) failed. Drops now keep the
 * reserve left to the program: a span whose drop would eat into it stays
 * pooled. The program's own maps stand in for most of the blocks (as above),
 * so the test pins 18,000 blocks at the default limit, whatever the limit. */
Test(maps, trim_keeps_the_map_reserve, .timeout = 240) {
    size_t max = dsp_maps_max(), reserve = dsp_maps_reserve(max), own_len;
    cr_assert_not_null(dsp_alloc(4096)); /* the arena and its first maps */
    char *own = own_maps(max - reserve - 2000, &own_len);
    /* Enough holes to pass the limit: 2 maps each, past the 2,000 the
     * manager has and the reserve. */
    int n = (int)(reserve + 2000 + 4000) + 1;
    cr_assert_leq(n, N);
    for (int i = 0; i < n; i++) {
        blocks[i] = dsp_alloc(4096);
        cr_assert_not_null(blocks[i], "block %d: %s", i, strerror(errno));
        blocks[i][0] = (char)i;
    }
    for (int i = 0; i < n; i += 2) cr_assert_eq(dsp_free(blocks[i]), 0);
    dsp_trim();
    size_t now = dsp_maps_count();
    cr_assert_leq(now, max - reserve + 2, "the trim left %zu maps of %zu (reserve %zu)", now, max,
                  reserve);
    /* The program's reserve is there: 64 threads at once, an mprotect split,
     * a 64 MiB malloc, mmap and dlopen. */
    pthread_t t[64];
    cr_assert_eq(pthread_barrier_init(&all_started, NULL, 65), 0);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, wait_for_all, NULL), 0, "thread %d", i);
    pthread_barrier_wait(&all_started);
    for (int i = 0; i < 64; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&all_started);
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    cr_assert_eq(mprotect(p + 4096, 4096, PROT_READ), 0, "mprotect split: %s", strerror(errno));
    munmap(p, 3 * 4096);
    process_still_works();
    /* What the trim kept is still the pool's, and serves blocks. */
    for (int i = 0; i < 1000; i++) cr_assert_not_null(dsp_alloc(4096), "block %d after", i);
    for (int i = 1; i < n; i += 2) cr_assert_eq(blocks[i][0], (char)i);
    munmap(own, own_len);
}
