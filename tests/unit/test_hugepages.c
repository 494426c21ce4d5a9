#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The VmFlags of a block's mapping say what was asked of the kernel: hg for
 * MADV_HUGEPAGE, nh for MADV_NOHUGEPAGE (whether THP is then granted depends
 * on the machine, which these tests do not assume). */
static int has_flag(void *p, const char *flag) {
    char flags[256];
    cr_assert_eq(smaps_vmflags(p, flags, sizeof flags), 0);
    cr_assert(strstr(flags, "lo"), "pinned blocks are locked: %s", flags);
    char pat[8];
    snprintf(pat, sizeof pat, " %s", flag);
    return strstr(flags, pat) != NULL;
}

Test(hugepages, auto_asks_for_them_on_large_blocks_only) {
    char *big = dsp_alloc(4 << 20), *small = dsp_alloc(64 << 10);
    cr_assert_eq((uintptr_t)big % (2 << 20), 0, "large blocks start on a huge page boundary");
    cr_assert(has_flag(big, "hg"));
    cr_assert_not(has_flag(small, "hg"));
    cr_assert(dsp_is_pinned(big, 4 << 20));
    cr_assert_not(dsp_is_pinned(big, (4 << 20) + 1),
                  "the range stays the asked size, not a huge page more");
}

Test(hugepages, odd_large_size_keeps_its_exact_range) {
    size_t n = (3 << 20) + 4096 * 3 + 17;
    char *p = dsp_alloc(n);
    cr_assert(dsp_is_pinned(p, (3 << 20) + 4096 * 4));
    cr_assert_not(dsp_is_pinned(p, (3 << 20) + 4096 * 4 + 1));
}

static void never(void) {
    setenv("DSP_HUGEPAGES", "never", 1);
}
Test(hugepages, never_forbids_them, .init = never) {
    char *big = dsp_alloc(4 << 20);
    cr_assert(has_flag(big, "nh"));
    cr_assert_not(has_flag(big, "hg"));
}

static void always(void) {
    setenv("DSP_HUGEPAGES", "always", 1);
}
Test(hugepages, always_asks_on_every_block, .init = always) {
    char *small = dsp_alloc(64 << 10);
    cr_assert(has_flag(small, "hg"));
    cr_assert(dsp_is_pinned(small, 64 << 10));
    cr_assert_not(dsp_is_pinned(small, (64 << 10) + 1));
}
