/* Linked into t_early: its constructor allocates before the shim's own
 * constructor has run (docs/internals.md, "Start-up order and thread-locals"). */
#include <stdlib.h>
#include <string.h>

void *early_block;
void *early_small;

__attribute__((constructor)) static void early(void) {
    early_block = malloc(1 << 20);
    early_small = malloc(64);
    if (early_block) memset(early_block, 9, 1 << 20);
}
