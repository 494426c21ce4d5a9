/* The program's own memory calls on hinted blocks (issue 12, "the program's
 * own memory calls on our blocks"), under LD_PRELOAD with DSP_MALLOC_MIN=64K.
 * Each test is named after what broke; each runs in its own process. */
#include "malloc_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

/* The VmFlags of the mapping holding p contain flag (" lo", " hg"). */
static int vmflag(const void *p, const char *flag) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)p >= a && (uintptr_t)p < b;
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            found = strstr(line, flag) != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

static long vmlck_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld kB", &v) == 1) break;
    fclose(f);
    return v;
}

/* DeepSpeed's native pinning: posix_memalign + mlock ... munlock + free. With
 * hints on, 49 of 50 rounds handed out a pooled block that dsp_is_pinned
 * called pinned while the kernel held 0 bytes of it locked. */
Test(memcalls, munlock_by_the_program_leaves_pooled_blocks_locked) {
    for (int round = 0; round < 50; round++) {
        void *p = NULL;
        cr_assert_eq(posix_memalign(&p, 4096, 4 * MiB), 0);
        cr_assert(is_pinned(p, 4 * MiB), "round %d: hinted", round);
        cr_assert_eq(mlock(p, 4 * MiB), 0);
        memset(p, round, 4 * MiB);
        cr_assert_eq(munlock(p, 4 * MiB), 0);
        cr_assert(vmflag(p, " lo"), "round %d: pinned but the kernel holds it unlocked", round);
        free(p);
    }
    cr_assert_geq(vmlck_kb(), (long)(stat_of("locked_bytes") >> 10),
                  "the kernel holds less locked than the manager counts");
}

Test(memcalls, munlockall_leaves_live_and_pooled_blocks_locked) {
    char *live = malloc(8 * MiB), *pooled = malloc(8 * MiB);
    cr_assert(is_pinned(live, 8 * MiB) && is_pinned(pooled, 8 * MiB));
    free(pooled);
    cr_assert_eq(munlockall(), 0);
    cr_assert(vmflag(live, " lo"), "a live block lost its lock");
    cr_assert_geq(vmlck_kb(), (long)(stat_of("locked_bytes") >> 10));
    char *again = malloc(8 * MiB);
    cr_assert(is_pinned(again, 8 * MiB));
    cr_assert(vmflag(again, " lo"), "a pooled block came back unlocked");
}

/* mprotect(PROT_READ) then free then malloc: the next owner got a read-only
 * block and crashed, where glibc would have unmapped it. */
Test(memcalls, readonly_block_freed_is_never_handed_out_readonly) {
    char *p = malloc(4 * MiB);
    memset(p, 1, 4 * MiB);
    cr_assert_eq(mprotect(p, 4 * MiB, PROT_READ), 0);
    cr_assert_eq(p[100], 1);
    free(p);
    for (int i = 0; i < 4; i++) {
        char *q = malloc(4 * MiB);
        cr_assert_not_null(q);
        memset(q, 2, 4 * MiB); /* SIGSEGV before the fix */
        cr_assert(is_pinned(q, 4 * MiB));
        cr_assert(vmflag(q, " lo"));
        free(q);
    }
}

/* The next owners of memory of that size can use all of it, in a forked
 * child too. Before the fix one of them was handed p's pooled pages as the
 * program left them; now they were given back (or restored), so whether any
 * of them overlaps p is the manager's choice. */
static void next_owners_can_use(size_t n) {
    char *q[4];
    for (int i = 0; i < 4; i++) {
        q[i] = malloc(n);
        memset(q[i], 9, n);
    }
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 4; i++)
            if (q[i][n - 1] != 9) _exit(1); /* SIGSEGV if DONTFORK stayed */
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    for (int i = 0; i < 4; i++) free(q[i]);
}

/* A part of a block made PROT_NONE (a guard page): the same. */
Test(memcalls, guard_page_in_a_block_is_gone_after_free) {
    char *p = malloc(MiB);
    cr_assert_eq(mprotect(p + MiB - 4096, 4096, PROT_NONE), 0);
    free(p);
    next_owners_can_use(MiB);
}

/* madvise(MADV_DONTNEED/MADV_FREE) on a hinted block returned EINVAL and kept
 * the data, where glibc's memory returns 0 and reads zero. */
Test(memcalls, dontneed_and_free_zero_the_block_and_succeed) {
    int advice[] = {MADV_DONTNEED, MADV_FREE};
    for (int i = 0; i < 2; i++) {
        unsigned char *p = malloc(2 * MiB);
        memset(p, 0xab, 2 * MiB);
        cr_assert_eq(madvise(p + 4096, MiB, advice[i]), 0, "advice %d: %s", advice[i],
                     strerror(errno));
        cr_assert_eq(p[4095], 0xab, "outside the range: kept");
        for (size_t off = 4096; off < MiB + 4096; off += 512) cr_assert_eq(p[off], 0);
        cr_assert_eq(p[MiB + 4096], 0xab);
        cr_assert(is_pinned(p, 2 * MiB));
        cr_assert(vmflag(p, " lo"), "still locked");
        free(p);
    }
}

Test(memcalls, dontneed_on_a_readonly_block_reads_zero) {
    unsigned char *p = malloc(MiB);
    memset(p, 0xcd, MiB);
    cr_assert_eq(mprotect(p, MiB, PROT_READ), 0);
    cr_assert_eq(madvise(p, MiB, MADV_DONTNEED), 0, "%s", strerror(errno));
    for (size_t off = 0; off < MiB; off += 4096) cr_assert_eq(p[off], 0);
    free(p);
}

/* Advice that changes the mapping (here: not inherited by fork) must not
 * reach the next owner: a child forked after the next malloc reads it. */
Test(memcalls, dontfork_advice_is_not_inherited_by_the_next_owner) {
    char *p = malloc(4 * MiB);
    cr_assert_eq(madvise(p, 4 * MiB, MADV_DONTFORK), 0);
    free(p);
    next_owners_can_use(4 * MiB);
}

/* NumPy advises MADV_HUGEPAGE on every large array: a block that already has
 * it stays poolable. */
Test(memcalls, hugepage_advice_on_a_huge_block_keeps_it_pooled) {
    char *p = malloc(8 * MiB);
    cr_assert(vmflag(p, " hg"));
    cr_assert_eq(madvise(p, 8 * MiB, MADV_HUGEPAGE), 0);
    free(p);
    long long hits = stat_of("pool_hits"), releases = stat_of("pool_releases");
    cr_assert_geq(stat_of("pool_cached_bytes"), 8 * MiB, "the block went back to the pool");
    char *q = malloc(8 * MiB);
    cr_assert(is_pinned(q, 8 * MiB));
    cr_assert_eq(stat_of("pool_hits"), hits + 1);
    cr_assert_eq(stat_of("pool_releases"), releases);
}

/* Outside the arena each call is the system call, errors included. */
Test(memcalls, unrelated_calls_behave_as_without_the_shim) {
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_eq(mprotect(m, 4096, PROT_READ), 0);
    errno = 0;
    cr_assert_eq(mprotect(m + 1, 4096, PROT_READ), -1);
    cr_assert_eq(errno, EINVAL);
    m[4096] = 1;
    cr_assert_eq(madvise(m + 4096, 4096, MADV_DONTNEED), 0);
    cr_assert_eq(m[4096], 0);
    errno = 0;
    cr_assert_eq(madvise(m, 4096, 12345), -1);
    cr_assert_eq(errno, EINVAL);
    cr_assert_eq(mlock(m + 4096, 4096), 0);
    cr_assert_eq(munlock(m + 4096, 4096), 0);
    munmap(m, 8192);
}
