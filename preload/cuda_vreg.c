#include "cuda_vreg.h"

#include "fork.h"
#include "reentry.h"
#include "internal.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

/* Sorted by first page, non-overlapping at page granularity (as the driver's
 * own record). Rare operations, few entries: a sorted array under a mutex,
 * binary-searched, grown with mmap (never malloc: the shim interposes it).
 * mu is taken with dsp_lock (reentry.h): a hinted free reaches it. */
struct vreg {
    uintptr_t lo, hi; /* pages [lo, hi) */
    const void *ptr;  /* what the caller passed, for unregister */
    int driver;       /* the driver holds it (dsp_vreg_add) */
};

#define mu (dsp_fork_locks.slot[DSP_FORK_VREG]) /* fork.c takes it at fork (fork.h) */
static struct vreg *v;
static size_t n, cap;

static size_t first_not_below(uintptr_t lo) { /* first entry with hi > lo */
    size_t a = 0, b = n;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (v[mid].hi <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static int grow(void) {
    size_t ncap = cap ? cap * 2 : 256;
    struct vreg *nv =
        mmap(NULL, ncap * sizeof *nv, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (nv == MAP_FAILED) return -1;
    if (v) {
        memcpy(nv, v, n * sizeof *v);
        munmap(v, cap * sizeof *v);
    }
    v = nv;
    cap = ncap;
    return 0;
}

int dsp_vreg_add(const void *ptr, size_t size, int driver) {
    uintptr_t lo = (uintptr_t)ptr & ~(uintptr_t)(DSP_PAGE - 1);
    uintptr_t hi = dsp_align_up_ptr((uintptr_t)ptr + size, DSP_PAGE);
    dsp_lock(&mu);
    size_t i = first_not_below(lo);
    int rc = 0;
    if (i < n && v[i].lo < hi) {
        rc = 712;
    } else if (n == cap && grow() != 0) {
        rc = 2;
    } else {
        memmove(v + i + 1, v + i, (n - i) * sizeof *v);
        v[i] = (struct vreg){lo, hi, ptr, driver};
        n++;
    }
    dsp_unlock(&mu);
    return rc;
}

int dsp_vreg_remove(const void *ptr) {
    uintptr_t lo = (uintptr_t)ptr & ~(uintptr_t)(DSP_PAGE - 1);
    dsp_lock(&mu);
    size_t i = first_not_below(lo);
    int found = i < n && v[i].ptr == ptr ? (v[i].driver ? DSP_VREG_DRIVER : DSP_VREG_SHIM) : 0;
    if (found) {
        memmove(v + i, v + i + 1, (n - i - 1) * sizeof *v);
        n--;
    }
    dsp_unlock(&mu);
    return found;
}

void dsp_vreg_drop_range(uintptr_t base, size_t len) {
    dsp_lock(&mu);
    size_t i = first_not_below(base), j = i;
    while (j < n && v[j].lo < base + len) j++;
    if (j > i) {
        memmove(v + i, v + j, (n - j) * sizeof *v);
        n -= j - i;
    }
    dsp_unlock(&mu);
}
