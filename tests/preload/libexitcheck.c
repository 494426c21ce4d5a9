/* For startup_resident.c: preloaded after libdspreload.so, so that its
 * destructor runs after the library's. glibc initialises preloaded objects
 * that do not depend on each other from the last to the first and finalises
 * them in the reverse order (both of glibc 2.36's sorts,
 * glibc.rtld.dynamic_sort=1 and 2); the order is not specified, and were it to
 * flip, this check would run too early and pass without checking. It checks
 * that the exit left the fork locks' page (address in TEST_FORK_LOCKS_PAGE,
 * set by the program) untouched, and makes the process exit 1 if not. */
#include "pages.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((destructor)) static void check(void) {
    const char *a = getenv("TEST_FORK_LOCKS_PAGE");
    if (!a) return; /* the program failed before it set it */
    int v = page_resident((uintptr_t)strtoull(a, NULL, 16));
    if (v < 0) _exit(2);
    printf("fork locks' page resident after the library's destructors: %d\n", v);
    fflush(stdout);
    if (v) {
        fprintf(stderr, "FAIL: the exit touched the fork locks' page\n");
        _exit(1);
    }
}
