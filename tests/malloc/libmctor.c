/* Loaded by t_from with dlopen while other threads allocate: its constructor
 * allocates a large block under the dynamic loader's lock. */
#include <stdlib.h>
#include <string.h>

void *ctor_block;

__attribute__((constructor)) static void grab(void) {
    ctor_block = malloc(1 << 20);
    if (ctor_block) memset(ctor_block, 3, 1 << 20);
}
