#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

Test(pool, freed_block_is_reused_without_pinning_again) {
    char *p = dsp_alloc(64 << 20);
    cr_assert_not_null(p);
    long long pinned_new = stat_of("pinned_new_bytes");
    cr_assert_eq(dsp_free(p), 0);
    cr_assert_eq(stat_of("pool_cached_bytes"), 64 << 20);
    char *q = dsp_alloc(64 << 20);
    cr_assert_eq(q, p);
    cr_assert_eq(stat_of("pool_hits"), 1);
    cr_assert_eq(stat_of("pinned_new_bytes"), pinned_new, "a pool hit pins nothing new");
    cr_assert_eq(stat_of("pool_cached_bytes"), 0);
    cr_assert(dsp_is_pinned(q, 64 << 20));
}

Test(pool, larger_cached_block_is_split_and_merged_back) {
    char *a = dsp_alloc(1 << 20);
    cr_assert_eq(dsp_free(a), 0);
    char *b = dsp_alloc(256 << 10), *c = dsp_alloc(256 << 10);
    cr_assert_eq(b, a);
    cr_assert_eq(c, a + (256 << 10));
    cr_assert_eq(stat_of("pool_cached_bytes"), 512 << 10);
    cr_assert_not(dsp_is_pinned(a, 600 << 10), "two blocks are two ranges");
    cr_assert_eq(dsp_free(c), 0);
    cr_assert_eq(dsp_free(b), 0);
    cr_assert_eq(stat_of("pool_cached_bytes"), 1 << 20);
    char *d = dsp_alloc(1 << 20);
    cr_assert_eq(d, a, "the pieces merged back into one span");
    cr_assert_eq(stat_of("pool_hits"), 3);
}

Test(pool, best_fit_prefers_the_tighter_block) {
    /* Separators above 256 KiB: a smaller one would come with a chunk whose
     * rest is a tighter fit still. */
    char *big = dsp_alloc(8 << 20), *sep1 = dsp_alloc(512 << 10);
    char *small = dsp_alloc(1 << 20), *sep2 = dsp_alloc(512 << 10);
    cr_assert_not_null(sep1);
    cr_assert_not_null(sep2);
    dsp_free(big);
    dsp_free(small);
    cr_assert_eq(dsp_alloc(900 << 10), small);
    cr_assert_eq(dsp_alloc(6 << 20), big);
}

static void pool_max_1m(void) {
    setenv("DSP_POOL_MAX", "1M", 1);
}

Test(pool, trimmed_to_pool_max_and_unlocked, .init = pool_max_1m) {
    char *p[4];
    long base = status_kb("VmLck");
    for (int i = 0; i < 4; i++) p[i] = dsp_alloc(512 << 10);
    cr_assert_geq(status_kb("VmLck") - base, 2048);
    for (int i = 0; i < 4; i++) cr_assert_eq(dsp_free(p[i]), 0);
    cr_assert_leq(stat_of("pool_cached_bytes"), 1 << 20);
    cr_assert_gt(stat_of("pool_releases"), 0);
    cr_assert_eq(stat_of("pinned_bytes"), stat_of("pool_cached_bytes"));
    cr_assert_leq(status_kb("VmLck") - base, 1024, "released blocks are unlocked");
}

Test(pool, trim_gives_everything_back) {
    long base = status_kb("VmLck");
    char *p = dsp_alloc(16 << 20);
    dsp_free(p);
    cr_assert_geq(status_kb("VmLck") - base, 16 << 10);
    cr_assert_eq(dsp_trim(), 16 << 20);
    cr_assert_eq(stat_of("pinned_bytes"), 0);
    cr_assert_leq(status_kb("VmLck") - base, 0);
    char *q = dsp_alloc(16 << 20);
    cr_assert_not_null(q, "address space is reused after a trim");
    cr_assert(dsp_is_pinned(q, 16 << 20));
}

/* Each thread stamps its blocks and checks the stamp survives: a block handed
 * to two owners at once would be overwritten by the other. */
#define THREADS 4
#define ROUNDS  3000
static atomic_int broken;

static void *churn(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg, x = id * 2654435761u + 7;
    char *held[8] = {0};
    size_t len[8] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        x = x * 1103515245u + 12345u;
        int k = (int)(x >> 8) % 8;
        if (held[k]) {
            for (size_t off = 0; off < len[k]; off += 4096)
                if (held[k][off] != (char)id || held[k][len[k] - 1] != (char)id)
                    atomic_fetch_add(&broken, 1);
            if (!dsp_is_pinned(held[k], len[k]) || dsp_free(held[k]) != 0)
                atomic_fetch_add(&broken, 1);
            held[k] = NULL;
        } else {
            len[k] = 4096 * (1 + (x >> 16) % 64);
            held[k] = dsp_alloc(len[k]);
            if (!held[k]) {
                atomic_fetch_add(&broken, 1);
                continue;
            }
            memset(held[k], (char)id, len[k]);
        }
    }
    for (int k = 0; k < 8; k++)
        if (held[k]) dsp_free(held[k]);
    return NULL;
}

Test(pool, threads_never_share_a_block, .timeout = 120) {
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, churn, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&broken), 0);
    cr_assert_eq(stat_of("blocks_live"), 0);
    cr_assert_eq(stat_of("live_bytes"), 0);
    cr_assert_gt(stat_of("pool_hits"), ROUNDS, "the pool served most allocations");
}
