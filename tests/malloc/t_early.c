/* A library constructor that allocates before the shim's constructor: the
 * allocation initialises the manager from inside malloc and is hinted; every
 * block stays usable and freeable. */
#include "malloc_test.h"

#include <string.h>

extern void *early_block, *early_small;

int main(void) {
    if (!early_block || !early_small) {
        fprintf(stderr, "FAIL: the constructor's allocations failed\n");
        return 1;
    }
    if (((char *)early_block)[(1 << 20) - 1] != 9) {
        fprintf(stderr, "FAIL: data\n");
        return 1;
    }
    if (!is_pinned(early_block, 1 << 20)) {
        fprintf(stderr, "FAIL: the constructor's large block is not hinted\n");
        return 1;
    }
    if (is_pinned(early_small, 1)) {
        fprintf(stderr, "FAIL: a small block is hinted\n");
        return 1;
    }
    free(early_block);
    free(early_small);
    if (stat_of("malloc_hinted_bytes") != 0) {
        fprintf(stderr, "FAIL: account\n");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
