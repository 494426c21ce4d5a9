/* Hints off (DSP_MALLOC_MIN unset): every entry point is glibc's, nothing is
 * hinted, and no address space is reserved for a manager nobody uses. */
#include "malloc_test.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>

static long vm_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7)) kb = atol(line + 7);
    if (f) fclose(f);
    return kb;
}

int main(void) {
    long before = vm_kb();
    char *p = malloc(64 << 20), *q = calloc(1, 8 << 20), *r = NULL;
    CHECK(p && q && !is_pinned(p, 1) && !is_pinned(q, 1));
    CHECK(posix_memalign((void **)&r, 1 << 20, 4 << 20) == 0 && (uintptr_t)r % (1 << 20) == 0);
    CHECK(!is_pinned(r, 1));
    char *a = aligned_alloc(4096, 1 << 20), *v = valloc(1 << 20), *pv = pvalloc(5000);
    CHECK(a && v && pv && !is_pinned(a, 1) && !is_pinned(v, 1) && malloc_usable_size(pv) >= 8192);
    p = realloc(p, 128 << 20);
    CHECK(p && !is_pinned(p, 1) && malloc_usable_size(p) >= (size_t)128 << 20);
    errno = 99;
    free(p);
    free(q);
    free(r);
    free(a);
    free(v);
    free(pv);
    CHECK(errno == 99);
    CHECK(stat_of("malloc_hinted") == 0 && stat_of("malloc_hint_rejected") == 0);
    /* The arena (64 GiB and more) was never reserved. */
    CHECK(vm_kb() - before < (1L << 20));
    PASS();
}
