/* Helper for test_stats: allocates so that at exit blocks_live is 2 and
 * pool_hits 1, then returns; the library's destructor does the rest. */
#include <dspreload.h>

int main(void) {
    /* Above 256 KiB, so that no block is cut from a chunk (manager.c). */
    void *a = dsp_alloc(1 << 20), *b = dsp_alloc(512 << 10), *c = dsp_alloc(768 << 10);
    if (!a || !b || !c || dsp_free(a) != 0) return 1;
    void *d = dsp_alloc(1 << 20); /* from the pool */
    if (d != a || dsp_free(c) != 0) return 2;
    return 0;
}
