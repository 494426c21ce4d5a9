/* Run inside a memory cgroup limited to 512 MiB (tests/cgroup/limit.sh), under
 * LD_PRELOAD with DSP_MALLOC_MIN=1M: pinning 1 GiB got the process OOM-killed
 * (exit 137) where plain malloc worked (issue 12, "Containers"). Now the pin
 * is refused with ENOMEM and every caller falls back. */
#include "malloc_test.h"

#include <errno.h>

#define MiB ((size_t)1 << 20)

int main(void) {
    void *(*dsp_alloc)(size_t) = (void *(*)(size_t))shim("dsp_alloc");
    errno = 0;
    void *p = dsp_alloc(1024 * MiB);
    CHECK(!p && errno == ENOMEM, "dsp_alloc(1 GiB) in a 512 MiB cgroup: %p, errno %d", p, errno);
    char *m = malloc(1024 * MiB); /* hinted size: falls through to glibc */
    CHECK(m, "malloc(1 GiB)");
    for (size_t off = 0; off < 64 * MiB; off += 4096)
        m[off] = 1; /* a few pages, within the limit */
    CHECK(!is_pinned(m, 1), "the big malloc is glibc's, not pinned");
    free(m);
    char *q = dsp_alloc(64 * MiB);
    CHECK(q, "dsp_alloc(64 MiB) still fits");
    memset(q, 2, 64 * MiB);
    CHECK(is_pinned(q, 64 * MiB));
    CHECK(stat_of("pin_failures") + stat_of("budget_refusals") >= 1, "the refusal is counted");
    PASS();
}
