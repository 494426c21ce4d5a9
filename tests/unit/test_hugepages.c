#include "helpers.h"
#include "plan.h"

#include <unistd.h>

#include "harness.h"
#include <dspreload.h>
#include <stdatomic.h>
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

/* The clock that times huge pages as they are populated (pin.c,
 * populate_part), replaced: each read is a microsecond after the one before,
 * so every piece is fast, unless a test sets slow_from: from that read on the
 * clock is a second ahead, so the piece that spans the jump took a second.
 * slow_from = 2 makes the first piece timed slow (whichever thread times
 * it). The machine's own huge pages are not assumed fast or slow. */
static _Atomic uint64_t reads, slow_from, cold_every;
uint64_t __wrap_dsp_sys_thread_ns(void) {
    uint64_t n = atomic_fetch_add(&reads, 1) + 1, from = atomic_load(&slow_from);
    /* cold_every E (one thread): reads 2p-1 and 2p time piece p, and every
     * E-th piece takes 3 ms more, a huge page the host took back. */
    uint64_t e = atomic_load(&cold_every), cold = e ? n / 2 / e * 3000000u : 0;
    return n * 1000 + cold + (from && n >= from ? 1000000000u : 0);
}

/* Whether the host takes free pages back (plan.c): no, unless a test says
 * so (this machine's own balloon is not assumed either way). */
static _Atomic int host_takes;
int __wrap_dsp_host_takes_free_pages(void) {
    return atomic_load(&host_takes);
}

/* Every 4 KiB page of the block holds its own number, and reads back. */
static void data_holds(char *p, size_t len) {
    for (size_t off = 0; off < len; off += 4096) {
        cr_assert_eq(p[off], 0, "populated zero at %zu", off);
        *(size_t *)(p + off) = off;
    }
    for (size_t off = 0; off < len; off += 4096)
        cr_assert_eq(*(size_t *)(p + off), off, "page at %zu", off);
}

Test(hugepages, elsewhere_large_blocks_keep_them) {
    char *first = dsp_alloc(64 << 20);
    cr_assert(has_flag(first, "hg"));
    cr_assert_gt(atomic_load(&reads), 0, "timed as populated");
    char *next = dsp_alloc(64 << 20);
    cr_assert(has_flag(next, "hg"));
}

/* Issue 29: on a VM whose host takes free memory back (virtio free page
 * reporting), the first touch of a free huge page faults in the host, and
 * huge pages made a first pin up to 7x slower than posix_memalign+mlock. A
 * block whose huge pages populate slower than small pages would turns to
 * small pages for the rest, as one map. */
static void first_slow(void) {
    atomic_store(&slow_from, 2);
}
Test(hugepages, a_first_huge_page_slow_turns_the_block_to_small_pages, .init = first_slow) {
    size_t len = 64 << 20;
    char *p = dsp_alloc(len);
    cr_assert_not_null(p);
    cr_assert(has_flag(p, "nh"), "small pages, as posix_memalign's");
    cr_assert_not(has_flag(p, "hg"));
    cr_assert_eq(maps_over((uintptr_t)p, (uintptr_t)p + len), 1, "the block stays one map");
    cr_assert(dsp_is_pinned(p, len));
    cr_assert_geq(status_kb("VmLck"), (long)(len >> 10), "locked whole");
    data_holds(p, len);
}

static void threads_first_slow(void) {
    setenv("DSP_PREFAULT_THREADS", "2", 1);
    atomic_store(&slow_from, 2);
}
Test(hugepages, populating_threads_turn_the_block_once, .init = threads_first_slow) {
    size_t len = 256 << 20; /* two threads' slices */
    char *p = dsp_alloc(len);
    cr_assert_not_null(p);
    cr_assert(has_flag(p, "nh"));
    cr_assert(has_flag(p + len - 4096, "nh"), "the other thread's slice too");
    cr_assert_eq(maps_over((uintptr_t)p, (uintptr_t)p + len), 1, "the block stays one map");
    data_holds(p, len);
}

/* Slow after some fast pieces: the huge pages so far stay, the rest is small. */
static void slow_later(void) {
    atomic_store(&slow_from, 12);
}
/* A block of len whose pages are flag ("hg" or "nh"), one map, pinned, data
 * whole. */
static void block_is(size_t len, const char *flag) {
    char *p = dsp_alloc(len);
    cr_assert_not_null(p);
    cr_assert(has_flag(p, flag), "%s", flag);
    cr_assert_eq(maps_over((uintptr_t)p, (uintptr_t)p + len), 1, "the block stays one map");
    cr_assert(dsp_is_pinned(p, len));
    data_holds(p, len);
}

Test(hugepages, huge_pages_turning_slow_midway_turn_the_rest, .init = slow_later) {
    block_is((64 << 20) + 4096 * 3, "nh");
}

/* Warm and cold stretches of free memory interleave: a cold huge page
 * (3 ms) among warm ones that each save half a millisecond is no reason to
 * give up huge pages (the first slow one turned a 1 GiB block that huge
 * pages populated 5x faster). Huge pages that cost more than small ones
 * would, on the whole, still turn the block. */
static void one_cold_in_ten(void) {
    atomic_store(&cold_every, 10);
}
Test(hugepages, a_few_cold_huge_pages_among_warm_ones_keep_huge_pages, .init = one_cold_in_ten) {
    block_is(64 << 20, "hg"); /* one cold page in ten: huge pages still pay */
}
static void one_cold_in_two(void) {
    atomic_store(&cold_every, 2);
}
Test(hugepages, cold_huge_pages_outweighing_warm_ones_turn_the_block, .init = one_cold_in_two) {
    block_is(64 << 20, "nh"); /* one cold page in two: small pages would be faster */
}

Test(hugepages, each_block_decides_for_itself, .init = first_slow) {
    char *slow = dsp_alloc(64 << 20);
    cr_assert(has_flag(slow, "nh"));
    atomic_store(&slow_from, 0);
    char *fast = dsp_alloc(64 << 20);
    cr_assert(has_flag(fast, "hg"), "a block of warm memory keeps huge pages' speed");
}

/* Issue 29: on a VM whose host takes free pages back, the guest's free huge
 * pages are cold, 4-8x slower to populate than small pages, and the first
 * huge pages a block tried cost it 10-15% of its first pin against small
 * pages from the start (1 GiB: 1.7x posix_memalign+mlock against 2.0x). */
static void host_takes_free_pages(void) {
    atomic_store(&host_takes, 1);
}
Test(hugepages, where_the_host_takes_free_pages_back_blocks_get_small_pages,
     .init = host_takes_free_pages) {
    size_t len = 64 << 20;
    char *p = dsp_alloc(len);
    cr_assert(has_flag(p, "nh"), "small pages from the start");
    cr_assert_eq(atomic_load(&reads), 0, "no huge page tried and timed");
    data_holds(p, len);
}
/* ... but huge pages this process gave back a moment ago are still the
 * guest's: a block pinned right after gets them. */
Test(hugepages, huge_pages_given_back_lately_are_used_again) {
    size_t len = 64 << 20;
    char *first = dsp_alloc(len);
    cr_assert(has_flag(first, "hg"));
    dsp_free(first);
    dsp_trim(); /* its huge pages back to the kernel */
    atomic_store(&host_takes, 1);
    char *next = dsp_alloc(len);
    cr_assert(has_flag(next, "hg"), "huge pages freed a moment ago are warm");
    data_holds(next, len);
}

/* always and never decide whatever the clock says, and time nothing. */
static void slow_under(const char *mode) {
    atomic_store(&slow_from, 2);
    setenv("DSP_HUGEPAGES", mode, 1);
}
static void setting_decides(const char *flag) {
    char *first = dsp_alloc(64 << 20);
    cr_assert(has_flag(first, flag), "%s", flag);
    cr_assert_eq(atomic_load(&reads), 0, "nothing timed");
}
static void always_slow(void) {
    slow_under("always");
}
Test(hugepages, always_keeps_them_however_slow, .init = always_slow) {
    setting_decides("hg");
}
static void never_slow(void) {
    slow_under("never");
}
Test(hugepages, never_times_nothing, .init = never_slow) {
    setting_decides("nh");
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
    cr_assert_eq(dsp_page_reporting(root), 1);
    balloon(root, "0110000100000000000000000000000010000000");
    cr_assert_eq(dsp_page_reporting(root), 0, "bit 5 clear");
    balloon(root, "01100");
    cr_assert_eq(dsp_page_reporting(root), 0, "too short");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(dsp_page_reporting(root), 0, "no balloon");
}
