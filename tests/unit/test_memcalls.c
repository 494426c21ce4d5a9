/* src/memcalls.c called directly (the preload hooks are thin; tests/malloc/
 * t_memcalls.c runs them under LD_PRELOAD in the plain build): here in all
 * three builds, on dsp_alloc blocks. */
#include "manager.h"
#include "memcalls.h"
#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <string.h>
#include <sys/mman.h>

#define MiB ((size_t)1 << 20)

static int locked(const void *p) {
    char flags[256];
    return smaps_vmflags(p, flags, sizeof flags) == 0 && strstr(flags, " lo") != NULL;
}

Test(memcalls, munlock_of_a_block_keeps_it_locked) {
    char *p = dsp_alloc(4 * MiB);
    cr_assert_eq(dsp_mem_munlock(p, 4 * MiB), 0);
    cr_assert(locked(p));
    cr_assert(dsp_is_pinned(p, 4 * MiB));
}

Test(memcalls, munlockall_locks_the_blocks_again) {
    char *a = dsp_alloc(4 * MiB), *b = dsp_alloc(64 << 10), *c = dsp_alloc(2 * MiB);
    dsp_free(c); /* pooled */
    cr_assert_eq(dsp_mem_munlockall(), 0);
    cr_assert(locked(a) && locked(b));
    cr_assert_geq(status_kb("VmLck"), stat_of("locked_bytes") >> 10);
}

Test(memcalls, protected_block_is_given_back_not_pooled) {
    char *p = dsp_alloc(4 * MiB);
    cr_assert_eq(dsp_mem_mprotect(p, 4 * MiB, PROT_READ), 0);
    long long releases = stat_of("pool_cached_bytes");
    cr_assert_eq(dsp_free(p), 0);
    cr_assert_eq(stat_of("pool_cached_bytes"), releases, "a read-only block went into the pool");
    char *q = dsp_alloc(4 * MiB);
    memset(q, 1, 4 * MiB);
}

/* Read-write is what the manager made: a program that mprotects its block
 * read-write (PyTorch and NumPy never do otherwise) must not cost it the
 * pool. */
Test(memcalls, read_write_mprotect_keeps_the_block_pooled) {
    char *p = dsp_alloc(4 * MiB);
    cr_assert_eq(dsp_mem_mprotect(p, 4 * MiB, PROT_READ | PROT_WRITE), 0);
    cr_assert_eq(dsp_free(p), 0);
    cr_assert_eq(stat_of("pool_cached_bytes"), 4 * MiB, "pooled");
    cr_assert_eq(dsp_alloc(4 * MiB), p, "and served again");
}

Test(memcalls, dontneed_zeroes_a_block) {
    unsigned char *p = dsp_alloc(MiB);
    memset(p, 0xee, MiB);
    cr_assert_eq(dsp_mem_madvise(p + 8192, 8192, MADV_DONTNEED), 0);
    cr_assert_eq(p[8191], 0xee);
    cr_assert_eq(p[8192], 0);
    cr_assert_eq(p[16383], 0);
    cr_assert_eq(p[16384], 0xee);
    cr_assert(locked(p));
}
