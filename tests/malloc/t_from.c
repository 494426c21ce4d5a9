/* DSP_MALLOC_FROM=libmfrom.so,libmctor: only allocations made by those
 * libraries are hinted. Also: a library dlopen'ed while other threads
 * allocate, whose constructor allocates under the loader's lock, neither
 * deadlocks nor is misjudged (run with a timeout). */
#include "malloc_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

void *from_lib_malloc(size_t n);
void *from_lib_calloc(size_t n);

static atomic_int stop;

static void *churn(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        void *p = malloc(200 << 10); /* from the program: never hinted */
        if (!p || is_pinned(p, 1)) return (void *)1;
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    char *mine = malloc(1 << 20);
    char *theirs = from_lib_malloc(1 << 20);
    char *zeroed = from_lib_calloc(1 << 20);
    CHECK(mine && theirs && zeroed);
    CHECK(!is_pinned(mine, 1));
    CHECK(is_pinned(theirs, 1 << 20));
    CHECK(is_pinned(zeroed, 1 << 20) && zeroed[12345] == 0);
    long long rejected = stat_of("malloc_hint_rejected");
    CHECK(rejected >= 1);
    /* The second time round the answer comes from the site cache. */
    for (int i = 0; i < 100; i++) {
        char *a = from_lib_malloc(300 << 10), *b = malloc(300 << 10);
        CHECK(is_pinned(a, 1) && !is_pinned(b, 1));
        free(a);
        free(b);
    }
    free(mine);
    free(theirs);
    free(zeroed);

    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, churn, NULL);
    for (int round = 0; round < 20; round++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        CHECK(h);
        void **block = dlsym(h, "ctor_block");
        CHECK(block && *block);
        CHECK(is_pinned(*block, 1 << 20)); /* its caller lies in libmctor */
        CHECK(((char *)*block)[(1 << 20) - 1] == 3);
        free(*block);
        dlclose(h);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        CHECK(rc == NULL);
    }
    CHECK(stat_of("malloc_hinted_bytes") == 0);
    PASS();
}
