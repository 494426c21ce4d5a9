/* For startup_resident.c: preloaded after libdspreload.so, so that its
 * destructor runs after the library's (the loader finalises in the reverse
 * order of initialisation). It checks that the exit left the fork locks'
 * page (address in TEST_FORK_LOCKS_PAGE, set by the program) untouched, and
 * makes the process exit 1 if not. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((destructor)) static void check(void) {
    const char *a = getenv("TEST_FORK_LOCKS_PAGE");
    if (!a) return; /* the program failed before it set it */
    uintptr_t page = (uintptr_t)strtoull(a, NULL, 16) & ~(uintptr_t)4095;
    unsigned char v = 0;
    if (mincore((void *)page, 4096, &v) != 0) _exit(2);
    printf("fork locks' page resident after the library's destructors: %d\n", v & 1);
    fflush(stdout);
    if (v & 1) {
        fprintf(stderr, "FAIL: the exit touched the fork locks' page\n");
        _exit(1);
    }
}
