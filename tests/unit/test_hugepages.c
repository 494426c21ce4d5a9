#include "helpers.h"
#include "plan.h"

#include <unistd.h>

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

/* The machine's answer, replaced: 0 unless a test says the VM reports free
 * pages to its host (these tests do not assume the machine's THP either).
 * The sysfs reading itself: page_reporting_is_read_off_the_balloon. */
int __real_dsp_page_reporting(const char *root);
static int reporting, asked;
int __wrap_dsp_page_reporting(const char *root) {
    (void)root;
    asked++;
    return reporting;
}

/* Issue 29: on a VM whose host backs free memory lazily (free page
 * reporting), huge pages made a first pin up to 7x slower than
 * posix_memalign+mlock. There the first block of 64 MiB or more, and every
 * large block after it, gets small pages. */
static void reporting_vm(void) {
    reporting = 1;
}
Test(hugepages, a_vm_reporting_free_pages_gets_small_pages, .init = reporting_vm) {
    char *small = dsp_alloc(4 << 20);
    cr_assert(has_flag(small, "hg"), "below 64 MiB nothing is asked yet");
    cr_assert_eq(asked, 0);
    char *first = dsp_alloc(64 << 20);
    cr_assert_not_null(first);
    cr_assert_eq(asked, 1);
    cr_assert(has_flag(first, "nh"), "small pages, as posix_memalign's");
    cr_assert_not(has_flag(first, "hg"));
    char *next = dsp_alloc(4 << 20);
    cr_assert(has_flag(next, "nh"), "and every large block after it");
    cr_assert_eq(asked, 1, "decided once");
    cr_assert(dsp_is_pinned(next, 4 << 20));
    cr_assert_eq(((volatile char *)first)[(64 << 20) - 1], 0, "populated whole");
}

Test(hugepages, elsewhere_large_blocks_keep_them) {
    char *first = dsp_alloc(64 << 20);
    cr_assert(has_flag(first, "hg"));
    char *next = dsp_alloc(64 << 20);
    cr_assert(has_flag(next, "hg"));
    cr_assert_eq(asked, 1, "decided once");
}

static void always_reporting(void) {
    reporting = 1;
    setenv("DSP_HUGEPAGES", "always", 1);
}
Test(hugepages, always_forces_them_on_a_reporting_vm, .init = always_reporting) {
    char *first = dsp_alloc(64 << 20);
    cr_assert(has_flag(first, "hg"));
    cr_assert_eq(asked, 0, "the setting decides");
}

/* The balloon's features under a sysfs root of the test's own: bit 5,
 * VIRTIO_BALLOON_F_REPORTING, as this machine's shows it. */
static void balloon(const char *root, const char *features) {
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "rm -rf %s && mkdir -p %s/bus/virtio/drivers/virtio_balloon/virtio0 && "
             "printf '%s\\n' > %s/bus/virtio/drivers/virtio_balloon/virtio0/features && "
             "ln -s /nonexistent %s/bus/virtio/drivers/virtio_balloon/bind",
             root, root, features, root, root);
    cr_assert_eq(system(cmd), 0);
}
Test(hugepages, page_reporting_is_read_off_the_balloon) {
    char root[64];
    snprintf(root, sizeof root, "/tmp/dsp-sysfs-%d", (int)getpid());
    balloon(root, "0110010100000000000000000000000010000000");
    cr_assert_eq(__real_dsp_page_reporting(root), 1);
    balloon(root, "0110000100000000000000000000000010000000");
    cr_assert_eq(__real_dsp_page_reporting(root), 0, "bit 5 clear");
    balloon(root, "01100");
    cr_assert_eq(__real_dsp_page_reporting(root), 0, "too short");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(__real_dsp_page_reporting(root), 0, "no balloon");
}
