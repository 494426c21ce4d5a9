#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(alloc, page_aligned_rounded_and_pinned) {
    char *p = dsp_alloc(10000);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 4096, 0);
    cr_assert(dsp_is_pinned(p, 10000));
    cr_assert(dsp_is_pinned(p, 12288), "the block is the size rounded up to the page");
    cr_assert_not(dsp_is_pinned(p, 12289));
    cr_assert(dsp_is_pinned(p + 12287, 1));
    cr_assert(dsp_is_pinned(p + 5000, 100), "interior pointers (slices, views) count");
    cr_assert_not(dsp_is_pinned(p - 1, 1));
    memset(p, 0xab, 12288);
    cr_assert_eq(dsp_free(p), 0);
    cr_assert_not(dsp_is_pinned(p, 1), "a freed block is no longer reported pinned");
}

Test(alloc, memory_is_really_locked) {
    long before = status_kb("VmLck");
    char *p = dsp_alloc(3 << 20);
    cr_assert_not_null(p);
    cr_assert_geq(status_kb("VmLck") - before, 3 << 10);
}

Test(alloc, new_memory_is_zeroed) {
    size_t n = 5 << 20;
    unsigned char *p = dsp_alloc(n);
    for (size_t i = 0; i < n; i += 1021) cr_assert_eq(p[i], 0);
}

Test(alloc, size_zero_and_huge_sizes_fail_cleanly) {
    errno = 0;
    cr_assert_null(dsp_alloc(0));
    cr_assert_eq(errno, EINVAL);
    errno = 0;
    cr_assert_null(dsp_alloc(SIZE_MAX));
    cr_assert_eq(errno, ENOMEM);
    errno = 0;
    cr_assert_null(dsp_alloc(SIZE_MAX - 4000), "rounding up must not wrap");
    cr_assert_eq(errno, ENOMEM);
    cr_assert_null(dsp_alloc((size_t)1 << 50));
    cr_assert_eq(errno, ENOMEM);
}

Test(alloc, free_rejects_what_is_not_a_live_base) {
    char *p = dsp_alloc(8192);
    int stack_var;
    void *heap = malloc(64);
    struct {
        void *ptr;
        const char *what;
    } bad[] = {{p + 4096, "interior"}, {p + 1, "unaligned interior"},
               {&stack_var, "stack"},  {heap, "malloc"},
               {NULL, "NULL"},         {(void *)1, "wild"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        errno = 0;
        cr_assert_eq(dsp_free(bad[i].ptr), -1, "%s", bad[i].what);
        cr_assert_eq(errno, EINVAL, "%s", bad[i].what);
    }
    cr_assert(dsp_is_pinned(p, 8192), "failed frees change nothing");
    cr_assert_eq(dsp_free(p), 0);
    errno = 0;
    cr_assert_eq(dsp_free(p), -1, "double free");
    cr_assert_eq(errno, EINVAL);
    free(heap);
}

Test(alloc, free_of_a_pooled_block_is_a_double_free) {
    char *p = dsp_alloc(8192);
    cr_assert_eq(dsp_free(p), 0);
    char *q = dsp_alloc(4096); /* reuses the front of p's span */
    cr_assert_eq(q, p);
    cr_assert_eq(dsp_free(p + 4096), -1, "the pooled tail is nobody's block");
    cr_assert_eq(errno, EINVAL);
    cr_assert(dsp_is_pinned(q, 4096));
}

Test(alloc, blocks_do_not_overlap) {
    enum { N = 200 };
    char *p[N];
    size_t len[N];
    for (int i = 0; i < N; i++) {
        len[i] = 4096 * (1 + (size_t)(i * 7919) % 37);
        p[i] = dsp_alloc(len[i]);
        cr_assert_not_null(p[i]);
        memset(p[i], i, len[i]);
    }
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < len[i]; j += 512)
            cr_assert_eq((unsigned char)p[i][j], (unsigned char)i);
    for (int i = 0; i < N; i += 2) cr_assert_eq(dsp_free(p[i]), 0);
    for (int i = 1; i < N; i += 2) cr_assert(dsp_is_pinned(p[i], len[i]));
}

Test(alloc, version_matches_header) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", DSP_VERSION_MAJOR, DSP_VERSION_MINOR,
             DSP_VERSION_PATCH);
    cr_assert_str_eq(dsp_version(), want);
}

/* Signals (docs/design.md): inside one of the library's locks (as a signal
 * handler that interrupted it sees dsp_in_manager) dsp_alloc refuses at once
 * and dsp_free defers, drained by the next unlock; a full deferral area leaks
 * rather than blocks. The count is raised by hand here, as a handler finds it. */
#include "reentry.h"

Test(alloc, inside_the_lock_alloc_refuses_and_free_is_deferred_to_the_next_unlock) {
    enum { N = 300 };
    static void *p[N];
    int got = 0;
    for (int i = 0; i < N; i++) got += (p[i] = dsp_alloc(4096)) != NULL;
    cr_assert_eq(got, N);
    long long live = stat_of("blocks_live");
    dsp_in_manager++;
    errno = 0;
    cr_assert_null(dsp_alloc(4096), "would wait for the lock this thread holds");
    cr_assert_eq(errno, ENOMEM);
    cr_assert_eq(dsp_free((char *)p[0] + 1), -1, "not a block base");
    cr_assert_eq(errno, EINVAL);
    int deferred = 0, leaked = 0;
    for (int i = 0; i < N; i++) {
        if (dsp_free(p[i]) == 0)
            deferred++;
        else if (errno == EAGAIN)
            leaked++;
    }
    cr_assert_eq(deferred, 256, "the deferral area holds 256");
    cr_assert_eq(leaked, N - 256);
    dsp_in_manager--;
    cr_assert_eq(stat_of("blocks_live"), live, "nothing freed yet");
    cr_assert_eq(stat_of("deferred_frees"), 256);
    cr_assert_eq(stat_of("deferred_frees_leaked"), N - 256);
    dsp_trim(); /* takes and releases the lock: drains */
    cr_assert_eq(stat_of("blocks_live"), live - 256);
    cr_assert(!dsp_is_pinned(p[0], 1));
    cr_assert(dsp_is_pinned(p[N - 1], 1), "leaked, still live");
}
