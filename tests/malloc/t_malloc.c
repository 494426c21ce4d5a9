/* Every entry point of the malloc family under LD_PRELOAD with hints on:
 * DSP_MALLOC_MIN=64K, DSP_MALLOC_MAX=64M (tests/malloc/meson.build). Each
 * Criterion test runs in its own forked process, whose hint account starts
 * at zero. */
#include "malloc_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIN ((size_t)64 << 10)
#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 31 + seed);
}
static int same(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 31 + seed)) return 0;
    return 1;
}

Test(malloc, large_allocations_are_pinned_small_ones_are_not) {
    char *big = malloc(MIN), *small = malloc(MIN - 1);
    cr_assert(big && small);
    cr_assert(is_pinned(big, MIN));
    cr_assert_not(is_pinned(small, 1));
    memset(big, 7, MIN);
    long long hinted = stat_of("malloc_hinted");
    cr_assert_geq(hinted, 1);
    cr_assert_geq(stat_of("malloc_hinted_bytes"), (long long)MIN);
    free(big);
    free(small);
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0);
}

Test(malloc, success_leaves_errno_alone) {
    errno = 4321;
    void *p = malloc(MiB), *q = calloc(1, MiB), *r = NULL;
    cr_assert_eq(errno, 4321);
    cr_assert_eq(posix_memalign(&r, 65536, MiB), 0);
    cr_assert_eq(errno, 4321);
    cr_assert(is_pinned(p, 1) && is_pinned(q, 1) && is_pinned(r, 1));
    free(p);
    free(q);
    free(r);
    cr_assert_eq(errno, 4321, "free preserves errno");
}

Test(malloc, calloc_zeroes_reused_blocks) {
    unsigned char *p = malloc(MiB);
    memset(p, 0xff, MiB);
    __asm__ volatile("" : : "r"(p) : "memory"); /* else GCC drops malloc, memset and free */
    free(p);
    long long hits = stat_of("pool_hits");
    unsigned char *q = calloc(MiB / 16, 16); /* a pooled block, maybe p */
    cr_assert(is_pinned(q, MiB));
    cr_assert_eq(stat_of("pool_hits"), hits + 1, "from the pool (else this tests nothing)");
    for (size_t i = 0; i < MiB; i++) cr_assert_eq(q[i], 0, "byte %zu", i);
    free(q);
}

/* Sizes the compiler cannot see, so that it does not warn about them. */
static volatile size_t huge_half = SIZE_MAX / 2, wrap_a = ((size_t)1 << 33) + 1,
                       wrap_b = (size_t)1 << 31, all_bits = SIZE_MAX;
/* Called through a pointer: GCC would warn that p is used after a failed
 * reallocarray, which is exactly what the test checks is allowed. */
static void *(*volatile reallocarray_)(void *, size_t, size_t) = reallocarray;

Test(malloc, calloc_and_reallocarray_overflow_fail_with_enomem) {
    errno = 0;
    cr_assert_null(calloc(huge_half, 4));
    cr_assert_eq(errno, ENOMEM);
    errno = 0;
    cr_assert_null(calloc(wrap_a, wrap_b)); /* wraps to 2 GiB */
    cr_assert_eq(errno, ENOMEM);
    char *p = malloc(MiB);
    fill((unsigned char *)p, MiB, 3);
    errno = 0;
    char *kept = reallocarray_(p, huge_half, 4);
    cr_assert_null(kept);
    cr_assert_eq(errno, ENOMEM);
    cr_assert(same((unsigned char *)p, MiB, 3), "the block is untouched");
    p = reallocarray(p, 2 * MiB, 2);
    cr_assert(p && is_pinned(p, 4 * MiB) && same((unsigned char *)p, MiB, 3));
    free(p);
    errno = 0;
    cr_assert_null(malloc(all_bits));
    cr_assert_eq(errno, ENOMEM);
}

Test(malloc, zero_sizes_behave_as_glibc) {
    void *p = malloc(0), *q = calloc(0, 16), *r = NULL;
    cr_assert(p && q, "glibc returns unique pointers for 0 bytes");
    cr_assert_not(is_pinned(p, 1));
    cr_assert_eq(posix_memalign(&r, 64, 0), 0);
    cr_assert_not_null(r);
    free(p);
    free(q);
    free(r);
    char *h = malloc(MiB);
    cr_assert(is_pinned(h, 1));
    errno = 0;
    cr_assert_null(realloc(h, 0), "glibc frees and returns NULL");
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0, "and the block is freed");
}

Test(malloc, realloc_crosses_the_threshold_both_ways) {
    unsigned char *p = malloc(1000);
    fill(p, 1000, 1);
    cr_assert_not(is_pinned(p, 1));
    p = realloc(p, 2 * MiB);
    cr_assert(is_pinned(p, 2 * MiB), "moved to the manager");
    cr_assert(same(p, 1000, 1), "with its data");
    fill(p, 2 * MiB, 2);
    uintptr_t was = (uintptr_t)p;
    p = realloc(p, 2 * MiB - 4096);
    cr_assert_eq((uintptr_t)p, was, "a shrink that still fills half the block stays");
    p = realloc(p, 3 * MiB);
    cr_assert(is_pinned(p, 3 * MiB) && same(p, 2 * MiB - 4096, 2));
    p = realloc(p, 5000);
    cr_assert_not(is_pinned(p, 1), "back to glibc below the threshold");
    cr_assert(same(p, 5000, 2));
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0);
    p = realloc(p, 100 * KiB);
    cr_assert(is_pinned(p, 1) && same(p, 5000, 2));
    was = (uintptr_t)p;
    p = realloc(p, 70 * KiB);
    cr_assert_eq((uintptr_t)p, was, "shrinks in place while it fills half the block");
    cr_assert(same(p, 5000, 2));
    free(p);
    void *n = realloc(NULL, MiB);
    cr_assert(is_pinned(n, MiB), "realloc(NULL) is malloc");
    free(n);
}

Test(malloc, usable_size_of_hinted_and_glibc_blocks) {
    char *p = malloc(MIN + 1);
    cr_assert_geq(malloc_usable_size(p), MIN + 1);
    cr_assert_leq(malloc_usable_size(p), MIN + 4096);
    memset(p, 1, malloc_usable_size(p)); /* all of it is the caller's */
    char *q = malloc(100);
    cr_assert_geq(malloc_usable_size(q), 100);
    cr_assert_lt(malloc_usable_size(q), 200);
    cr_assert_eq(malloc_usable_size(NULL), 0);
    void *a;
    cr_assert_eq(posix_memalign(&a, 1 << 20, MIN), 0);
    cr_assert_geq(malloc_usable_size(a), MIN, "from an aligned pointer inside a block");
    free(p);
    free(q);
    free(a);
}

Test(malloc, alignments_are_honoured_exactly) {
    size_t aligns[] = {8, 16, 64, 4096, 8192, 65536, MiB, 2 * MiB, 16 * MiB};
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
        void *p = NULL;
        cr_assert_eq(posix_memalign(&p, aligns[i], 300 * KiB), 0);
        cr_assert_eq((uintptr_t)p % aligns[i], 0, "posix_memalign %zu", aligns[i]);
        cr_assert(is_pinned(p, 300 * KiB), "%zu", aligns[i]);
        memset(p, 1, 300 * KiB);
        void *q = aligned_alloc(aligns[i], 300 * KiB);
        cr_assert(q && (uintptr_t)q % aligns[i] == 0 && is_pinned(q, 300 * KiB), "aligned_alloc");
        void *r = memalign(aligns[i], 300 * KiB);
        cr_assert(r && (uintptr_t)r % aligns[i] == 0 && is_pinned(r, 300 * KiB), "memalign");
        free(p);
        free(q);
        free(r);
    }
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0);
    void *v = valloc(100 * KiB), *pv = pvalloc(100 * KiB + 1);
    cr_assert(v && (uintptr_t)v % 4096 == 0 && is_pinned(v, 100 * KiB));
    cr_assert(pv && (uintptr_t)pv % 4096 == 0 && is_pinned(pv, 104 * KiB), "pvalloc rounds up");
    cr_assert_geq(malloc_usable_size(pv), 104 * KiB);
    free(v);
    free(pv);
}

static volatile size_t odd_align = 24, absurd_align = (size_t)1 << 63 | 1;

Test(malloc, invalid_alignments_fail_as_glibc) {
    size_t bad[] = {0, 1, 4, 12, 24, 100, 4097};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        void *p = (void *)0x1234;
        errno = 77;
        cr_assert_eq(posix_memalign(&p, bad[i], MiB), EINVAL, "%zu", bad[i]);
        cr_assert_eq(p, (void *)0x1234, "untouched");
        cr_assert_eq(errno, 77, "posix_memalign returns the error, errno unchanged");
    }
    /* memalign and glibc 2.36's aligned_alloc round a non-power-of-two up:
     * whatever glibc does, the block comes from glibc, not from us. */
    void *m = memalign(odd_align, MiB);
    cr_assert_not_null(m);
    cr_assert_not(is_pinned(m, 1));
    cr_assert_eq((uintptr_t)m % 32, 0);
    free(m);
    errno = 0;
    cr_assert_null(memalign(absurd_align, 16));
    cr_assert_eq(errno, EINVAL);
    errno = 0;
    cr_assert_null(memalign(absurd_align, MiB), "large: the same answer, from glibc");
    cr_assert_eq(errno, EINVAL);
}

#define THREADS 4
#define PER     32
static void *handoff[THREADS][PER];

static void *alloc_side(void *arg) {
    size_t t = (size_t)(uintptr_t)arg;
    for (size_t i = 0; i < PER; i++) {
        size_t n = MIN + (i * 4096 + t * 7) % (3 * MiB);
        unsigned char *p = malloc(n);
        if (!p) return (void *)1;
        fill(p, n < 4096 ? n : 4096, (unsigned)(t + i));
        handoff[t][i] = p;
    }
    return NULL;
}
static void *free_side(void *arg) {
    size_t t = (size_t)(uintptr_t)arg;
    for (size_t i = 0; i < PER; i++) {
        if (!same(handoff[t][i], 4096, (unsigned)(t + i))) return (void *)1;
        free(handoff[t][i]);
    }
    return NULL;
}

Test(malloc, blocks_freed_by_other_threads) {
    pthread_t a[THREADS], f[THREADS];
    void *rc;
    for (uintptr_t t = 0; t < THREADS; t++) pthread_create(&a[t], NULL, alloc_side, (void *)t);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(a[t], &rc);
        cr_assert_null(rc);
    }
    long long hinted = stat_of("malloc_hinted");
    cr_assert_geq(hinted, 4, "some were pinned");
    for (uintptr_t t = 0; t < THREADS; t++) /* each thread frees another's */
        pthread_create(&f[t], NULL, free_side, (void *)((t + 1) % THREADS));
    for (int t = 0; t < THREADS; t++) {
        pthread_join(f[t], &rc);
        cr_assert_null(rc);
    }
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0);
    cr_assert_eq(stat_of("blocks_live"), 0);
}

Test(malloc, budget_caps_hinted_bytes) {
    /* DSP_MALLOC_MAX=64M: eight 8 MiB blocks, then glibc. */
    char *p[12];
    int n_pinned = 0;
    long long rejected = stat_of("malloc_hint_rejected");
    for (int i = 0; i < 12; i++) {
        p[i] = malloc(8 * MiB);
        cr_assert_not_null(p[i]);
        memset(p[i], i, 8 * MiB);
        n_pinned += is_pinned(p[i], 8 * MiB);
    }
    cr_assert_eq(n_pinned, 8);
    cr_assert_eq(stat_of("malloc_hint_rejected") - rejected, 4);
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 64 << 20);
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(p[i][8 * MiB - 1], i);
        free(p[i]);
    }
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0);
    char *again = malloc(8 * MiB);
    cr_assert(is_pinned(again, 8 * MiB), "room again once freed");
    free(again);
}

Test(malloc, fork_child_frees_and_reallocates_inherited_blocks) {
    unsigned char *p = malloc(2 * MiB), *q = malloc(MiB);
    fill(p, 2 * MiB, 5);
    fill(q, MiB, 6);
    pid_t pid = fork();
    if (pid == 0) {
        if (is_pinned(p, 1)) _exit(2);                /* mlock is not inherited */
        if (stat_of("malloc_hinted_bytes")) _exit(3); /* the child's own account */
        free(p);
        q = realloc(q, 4 * MiB);
        if (!q || !same(q, MiB, 6)) _exit(4);
        if (!is_pinned(q, 4 * MiB)) _exit(5); /* a new block, pinned here */
        unsigned char *r = malloc(3 * MiB);
        if (!is_pinned(r, 3 * MiB)) _exit(6);
        free(r);
        free(q);
        if (stat_of("malloc_hinted_bytes") != 0) _exit(7);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    cr_assert(is_pinned(p, 2 * MiB) && same(p, 2 * MiB, 5), "the parent's block is intact");
    cr_assert(is_pinned(q, MiB) && same(q, MiB, 6));
    free(p);
    free(q);
}

/* Regression: free() took any live block in the arena, so a stray free of a
 * dsp_alloc (or cudaHostAlloc) block gave it back under its owner, and
 * subtracted bytes never hinted from the DSP_MALLOC_MAX account. Now only
 * blocks marked as malloc's are free()'s to take. */
/* Through a pointer: GCC would warn about the use after free() this test makes
 * on purpose. */
static void (*volatile free_)(void *) = free;
static void *(*volatile realloc_)(void *, size_t) = realloc;

Test(malloc, free_leaves_other_layers_blocks_alone) {
    void *(*dsp_alloc)(size_t) = shim("dsp_alloc");
    int (*dsp_free)(void *) = shim("dsp_free");
    char *theirs = dsp_alloc(MiB), *mine = malloc(MiB);
    cr_assert(theirs && mine && is_pinned(theirs, MiB) && is_pinned(mine, MiB));
    long long account = stat_of("malloc_hinted_bytes");
    free_(theirs); /* a caller's bug: logged, ignored */
    cr_assert(is_pinned(theirs, MiB), "still live");
    cr_assert_eq(stat_of("malloc_hinted_bytes"), account);
    errno = 0;
    cr_assert_null(realloc_(theirs, 2 * MiB));
    cr_assert_eq(errno, ENOMEM);
    cr_assert_eq(malloc_usable_size(theirs), 0);
    cr_assert_eq(dsp_free(theirs), 0, "its owner frees it");
    free(mine);
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0);
    /* A block that served dsp_alloc and returned to the pool is malloc's when
     * malloc takes it next: the mark follows the owner. */
    char *again = malloc(MiB);
    cr_assert(is_pinned(again, MiB));
    free(again);
    cr_assert_eq(stat_of("malloc_hinted_bytes"), 0);
    cr_assert_eq(stat_of("blocks_live"), 0);
}

/* Review finding: free() of an interior pointer released the whole block to
 * the pool while its owner still used it (glibc aborts on such a pointer). */
Test(malloc, interior_pointer_frees_nothing) {
    char *a = malloc(MiB);
    cr_assert(a && is_pinned(a, MiB));
    memset(a, 0x5A, MiB);
    free_(a + 8192); /* a caller's bug: logged, ignored */
    cr_assert(is_pinned(a, MiB), "still live");
    cr_assert_eq(realloc_(a + 4096, 2 * MiB), NULL);
    cr_assert_eq(malloc_usable_size(a + 4096), 0);
    char *b = malloc(MiB);
    cr_assert(b != a, "the block was handed out again while its owner holds it");
    for (size_t i = 0; i < MiB; i++)
        if (a[i] != 0x5A) cr_assert_fail("byte %zu of the owner's block changed", i);
    /* Aligned above the page: only the aligned pointer frees it. */
    void *c;
    cr_assert_eq(posix_memalign(&c, 1 << 21, MiB), 0);
    cr_assert(is_pinned(c, MiB));
    long long live = stat_of("blocks_live");
    free(c);
    cr_assert_eq(stat_of("blocks_live"), live - 1, "the aligned pointer frees its block");
    free(a);
    free(b);
    cr_assert_eq(stat_of("blocks_live"), 0);
}
