/* A library whose own fork handler allocates and frees 8 MiB (hinted under
 * DSP_MALLOC_MIN=1M). Its constructor runs before the shim registers its
 * handlers, so glibc runs this prepare handler after the shim's, while the
 * shim holds every lock of its own (fork_handler_alloc.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int ran;
static char *volatile kept; /* the compiler may drop an allocation nobody sees */

static void prepare(void) {
    kept = malloc(8 << 20);
    if (kept) memset(kept, 1, 4096);
    free(kept);
    ran++;
}

static void parent(void) {
    kept = malloc(8 << 20);
    free(kept);
}

__attribute__((constructor)) static void install(void) {
    pthread_atfork(prepare, parent, NULL);
}

__attribute__((visibility("default"))) int forkalloc_ran(void) {
    return ran;
}
