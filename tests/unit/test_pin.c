/* Pins that fail and cannot be undone the usual way. This test binary wraps
 * mmap and syscall (-Wl,--wrap) so that a populate fails after touching the
 * pages, then the mapping back to PROT_NONE fails (ENOMEM: what
 * vm.max_map_count gives), and, if asked, the munlock too.
 *
 * Regression (issue 14): the failed unmap's result was ignored, so the span
 * went back to the arena with its pages populated and locked but no longer
 * counted anywhere. */
#include "manager.h"
#include "pin.h"
#include "harness.h"
#include "helpers.h"

#include <dspreload.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N (4u << 20)

/* With _FILE_OFFSET_BITS=64 (meson's default) the core calls mmap64. */
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
long __real_syscall(long nr, ...);

static atomic_int fail_populate, fail_munlock;
static _Atomic uintptr_t refuse_at; /* the span whose unmap (and munlock) is refused */
static _Atomic uintptr_t stuck_at;  /* its base, for the test */

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    uintptr_t at = atomic_load(&refuse_at);
    if (at && (uintptr_t)addr == at && prot == PROT_NONE && (flags & MAP_FIXED)) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return __real_mmap64(addr, len, prot, flags, fd, off);
}

long __wrap_syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    /* The core's system calls take at most four arguments; reading a sixth
     * would reach into the caller's stack (AddressSanitizer: stack-buffer-
     * underflow), since only five fit in registers after nr. */
    long a[6] = {0};
    for (int i = 0; i < 5; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_madvise && a[2] == 23 /* MADV_POPULATE_WRITE */ &&
        atomic_exchange(&fail_populate, 0)) {
        __real_syscall(nr, a[0], a[1], a[2]); /* the pages are there, and locked */
        atomic_store(&refuse_at, (uintptr_t)a[0]);
        atomic_store(&stuck_at, (uintptr_t)a[0]);
        errno = ENOMEM;
        return -1;
    }
    if (nr == SYS_munlock && atomic_load(&fail_munlock) &&
        (uintptr_t)a[0] == atomic_load(&refuse_at)) {
        errno = ENOMEM;
        return -1;
    }
    return __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static size_t resident(uintptr_t base, size_t len) {
    unsigned char v[N / 4096];
    if (mincore((void *)base, len, v) != 0) return (size_t)-1;
    size_t n = 0;
    for (size_t i = 0; i < len / 4096; i++) n += v[i] & 1;
    return n;
}

Test(pin, failed_unmap_gives_the_pages_back) {
    long lck = status_kb("VmLck");
    atomic_store(&fail_populate, 1);
    cr_assert_null(dsp_alloc(N), "the populate failed");
    uintptr_t at = atomic_load(&stuck_at);
    cr_assert(at, "the interposed populate ran");
    cr_assert_eq(resident(at, N), 0, "the pages were given back");
    cr_assert_leq(status_kb("VmLck"), lck, "and unlocked");
    cr_assert_eq(stat_of("pinned_bytes"), 0);
    cr_assert_eq(stat_of("pin_stuck_bytes"), 0);
    atomic_store(&refuse_at, 0);
    char *p = dsp_alloc(N);
    cr_assert_not_null(p, "the span is usable again");
    memset(p, 0x5a, N);
    cr_assert(dsp_is_pinned(p, N));
    cr_assert_eq(dsp_free(p), 0);
}

Test(pin, unmap_and_unlock_refused_stay_counted) {
    atomic_store(&fail_munlock, 1);
    atomic_store(&fail_populate, 1);
    log_capture_start();
    cr_assert_null(dsp_alloc(N));
    const char *log = log_capture_collect();
    cr_assert(strstr(log, "cannot give back 4 MiB after a failed pin"), "logged: %s", log);
    uintptr_t at = atomic_load(&stuck_at);
    cr_assert(at);
    cr_assert_eq(stat_of("pinned_bytes"), N, "still counted: its pages may be pinned");
    cr_assert_eq(stat_of("locked_bytes"), N);
    cr_assert_eq(stat_of("pin_stuck_bytes"), N);
    for (int i = 0; i < 4; i++) {
        char *p = dsp_alloc(N);
        cr_assert_not_null(p);
        cr_assert((uintptr_t)p + N <= at || (uintptr_t)p >= at + N, "never reused");
        memset(p, 1, N);
    }
    atomic_store(&fail_munlock, 0);
}

/* The mappings that look like a thread stack of glibc's: a one-page guard
 * (PROT_NONE) with a read-write mapping right above it. (Counting every
 * mapping would count ThreadSanitizer's own, kept for each thread.) */
static int stacks(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], prot[8];
    unsigned long lo, hi, guard_end = 0;
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, prot) == 3) {
            if (lo == guard_end && !strcmp(prot, "rw-p")) n++;
            guard_end = hi - lo == 4096 && !strcmp(prot, "---p") ? hi : 0;
        }
    if (f) fclose(f);
    return n;
}

static void *nothing(void *arg) {
    return arg;
}

/* Regression (issue 29): the threads that populate a large first pin ran on
 * stacks of glibc's, which its cache kept mapped after they ended: two more
 * mappings with pages, whose page tables every later fork copied. */
Test(pin, prefault_threads_leave_no_thread_stack_behind) {
    size_t len = 128u << 20; /* two slices at least: threads populate it */
    char *p =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    /* A thread first: what the first thread brings (ThreadSanitizer's own
     * thread) is there before the count. */
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, nothing, NULL), 0);
    pthread_join(t, NULL);
    int before = stacks();
    cr_assert_eq(dsp_prefault(p, len, 4, NULL, NULL), 0);
    unsigned char v;
    for (size_t off = 0; off < len; off += len / 4)
        cr_assert(mincore(p + off, 4096, &v) == 0 && (v & 1), "every slice populated (%zu)", off);
    int after = stacks();
    munmap(p, len);
    cr_assert_eq(after, before, "%d thread stacks after the populate, %d before", after, before);
}
