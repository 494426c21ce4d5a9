/* The process's quotas come first: under a finite RLIMIT_AS the arena takes
 * a small share of what is left and grows in pieces (src/arena.c).
 *
 * Plain build only (tests/meson.build): AddressSanitizer and ThreadSanitizer
 * reserve terabytes of shadow memory themselves, so no RLIMIT_AS leaves them
 * room to run. */
#include "manager.h"
#include "harness.h"
#include "helpers.h"

#include <dspreload.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* Sets RLIMIT_AS to the current VmSize plus extra; returns what it leaves. */
static size_t limit_as(size_t extra) {
    size_t vm = (size_t)status_kb("VmSize") * 1024;
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_AS, &rl), 0);
    rl.rlim_cur = vm + extra;
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
    return extra;
}

static size_t reserved(void) {
    return atomic_load(&dsp_mgr.hi) - atomic_load(&dsp_mgr.lo);
}

/* Spans tile [lo, bump): each starts where the previous ends. */
static void assert_tiled(void) {
    pthread_mutex_lock(DSP_MGR_MU);
    cr_assert_eq(dsp_mgr.first->base, atomic_load(&dsp_mgr.lo));
    for (struct dsp_span *s = dsp_mgr.first; s && s->anext; s = s->anext)
        cr_assert_eq(s->base + s->len, s->anext->base, "spans overlap or leave a hole");
    cr_assert_eq(dsp_mgr.last->base + dsp_mgr.last->len, dsp_mgr.bump);
    cr_assert_leq(dsp_mgr.bump, atomic_load(&dsp_mgr.hi));
    pthread_mutex_unlock(DSP_MGR_MU);
}

/* Regression (issue 12): under `ulimit -v 8G` the reservation took 4 GiB of
 * the 8 (halved from 64 GiB until the kernel accepted it), and the program's
 * own malloc(4 GiB) returned NULL. */
Test(quota, arena_respects_rlimit_as) {
    size_t left = limit_as(8 * GiB);
    void *p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = dsp_alloc((size_t)(i + 1) * MiB);
        cr_assert_not_null(p[i]);
        memset(p[i], 0x5a, (size_t)(i + 1) * MiB);
    }
    cr_assert_leq(reserved(), left / 8, "reserved %zu of %zu left", reserved(), left);
    char *big = malloc(4 * GiB);
    cr_assert_not_null(big, "the program's own malloc(4 GiB) fails beside the arena");
    big[0] = big[4 * GiB - 1] = 1;
    free(big);
    for (int i = 0; i < 4; i++) cr_assert(dsp_is_pinned(p[i], (size_t)(i + 1) * MiB));
}

/* More blocks than the first piece holds: the arena grows in place, and all
 * succeed while the limit allows; past it, allocations fail cleanly. */
Test(quota, arena_grows_in_pieces_under_rlimit_as) {
    size_t left = limit_as(1 * GiB);
    log_capture_start();
    char *first = dsp_alloc(16 * MiB);
    cr_assert_not_null(first);
    size_t piece = reserved();
    cr_assert_leq(piece, left / 8);
    enum { N = 24 }; /* 400 MiB: three times the first piece */
    char *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = dsp_alloc(16 * MiB);
        cr_assert_not_null(b[i], "block %d of 16 MiB refused (%s)", i, log_capture_collect());
        memset(b[i], i, 16 * MiB);
        cr_assert(dsp_in_arena(b[i]));
    }
    cr_assert_gt(reserved(), piece, "the arena did not grow");
    cr_assert_leq(reserved(), left, "the arena outgrew the limit");
    assert_tiled();
    for (int i = 0; i < N; i++)
        cr_assert_eq((unsigned char)b[i][16 * MiB - 1], i, "block %d overwritten", i);
    /* Until the limit: a clean ENOMEM, the program's own small mappings still work. */
    size_t got = 0;
    void *q;
    while ((q = dsp_alloc(16 * MiB))) got++;
    cr_assert_eq(errno, ENOMEM);
    cr_assert_lt(reserved(), left);
    cr_assert_gt(reserved() + 256 * MiB, left / 2, "stopped growing early: %zu of %zu", reserved(),
                 left);
    void *small = mmap(NULL, 1 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(small, MAP_FAILED);
    const char *log = log_capture_collect();
    cr_assert(strstr(log, "cannot grow the address space for pinned blocks"), "%s", log);
    cr_assert_null(strstr(log, "DSP_ARENA_SIZE"), "one line, about RLIMIT_AS: %s", log);
    assert_tiled();
}

/* Something mapped right above the arena: it grows below lo instead, the new
 * piece a vacant span first in address order. */
Test(quota, arena_grows_below_when_above_is_taken) {
    limit_as(1 * GiB);
    cr_assert_not_null(dsp_alloc(4 * MiB));
    uintptr_t lo = atomic_load(&dsp_mgr.lo), hi = atomic_load(&dsp_mgr.hi);
    void *fence = mmap((void *)hi, 2 * MiB, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    cr_assert_eq((uintptr_t)fence, hi);
    enum { N = 20 };
    char *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = dsp_alloc(8 * MiB);
        cr_assert_not_null(b[i], "block %d", i);
        memset(b[i], i, 8 * MiB);
    }
    cr_assert_lt(atomic_load(&dsp_mgr.lo), lo, "did not grow below");
    cr_assert_eq(atomic_load(&dsp_mgr.hi), hi, "grew over the fence");
    cr_assert(!dsp_in_arena(fence));
    assert_tiled();
    for (int i = 0; i < N; i++) {
        cr_assert_eq((unsigned char)b[i][0], i);
        cr_assert_eq(dsp_free(b[i]), 0);
    }
    cr_assert_not_null(dsp_alloc(64 * MiB), "freed pieces coalesce across the old lo");
}

/* Fenced in both ways: the allocation fails cleanly, with one line. */
Test(quota, arena_growth_fails_cleanly_when_fenced_in) {
    limit_as(1 * GiB);
    log_capture_start();
    cr_assert_not_null(dsp_alloc(4 * MiB));
    uintptr_t lo = atomic_load(&dsp_mgr.lo), hi = atomic_load(&dsp_mgr.hi);
    int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE;
    cr_assert_eq((uintptr_t)mmap((void *)hi, 2 * MiB, PROT_NONE, fl, -1, 0), hi);
    cr_assert_eq((uintptr_t)mmap((void *)(lo - 2 * MiB), 2 * MiB, PROT_NONE, fl, -1, 0),
                 lo - 2 * MiB);
    size_t n = 0;
    while (dsp_alloc(8 * MiB)) n++;
    cr_assert_eq(errno, ENOMEM);
    cr_assert_eq(atomic_load(&dsp_mgr.lo), lo);
    cr_assert_eq(atomic_load(&dsp_mgr.hi), hi);
    const char *log = log_capture_collect();
    cr_assert(strstr(log, "cannot grow the address space for pinned blocks"), "%s", log);
    cr_assert_eq(stat_of("pin_failures"), 1);
}
