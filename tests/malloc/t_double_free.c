/* Regression (issue 14): free() of a hinted block checked the block's flags
 * without the manager's lock, then freed by base. A racing double free could
 * pass the check, lose the race to the other free, and then free the block
 * the pool had meanwhile handed to its next owner (a cudaHostAlloc).
 *
 * The interleaving is made deterministic here: the malloc layer and the core
 * are linked into this program (it is its own allocator, as under
 * LD_PRELOAD), and dsp_reg_find is wrapped (-Wl,--wrap). At the stale free's
 * lock-free lookup the wrapper plays the other threads: the winning free, then
 * a served allocation that reuses the span. The stale free must leave that
 * block alone. */
#include "block.h"
#include "block_bits.h"
#include "manager.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, msg)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #c, msg);                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define N (4u << 20)

int __real_dsp_reg_find(uintptr_t addr, struct dsp_range *out);

static volatile uintptr_t armed; /* volatile: the compiler assumes free() touches no global */
static void *volatile served;

static void other_threads(uintptr_t base) {
    /* The free that won the race. */
    CHECK(dsp_block_free(base) == 0, "the first free");
    /* cudaHostAlloc served from the pool: the same span, a new owner. */
    struct dsp_block b;
    served = dsp_block_alloc(N, DSP_BLK_USER(DSP_BLOCKF_CUDA_SERVED), &b);
    CHECK(served == (void *)base, "the span reused by the next owner");
    memset(served, 0xa5, N);
}

int __wrap_dsp_reg_find(uintptr_t addr, struct dsp_range *out) {
    int found = __real_dsp_reg_find(addr, out);
    /* The stale free's lookup is the lock-free one (no lock of ours held). */
    if (addr == armed && !dsp_in_manager) {
        armed = 0;
        struct dsp_range stale = *out;
        other_threads(addr);
        *out = stale;
    }
    return found;
}

int main(void) {
    char *p = malloc(N);
    struct dsp_block b;
    CHECK(p && dsp_block_holding(p, &b) && (b.flags & DSP_BLOCKF_MALLOC), "a hinted block");
    memset(p, 1, N);
    uintptr_t at = (uintptr_t)p;
    armed = at;
    free(p); /* the stale free: the wrapper frees and re-serves it first */
    CHECK(!armed && (uintptr_t)served == at, "the interleaving ran");
    CHECK(dsp_block_at((uintptr_t)served, &b) && (b.flags & DSP_BLOCKF_CUDA_SERVED),
          "the next owner's block is still live");
    const unsigned char *s = served;
    for (size_t i = 0; i < N; i += 4096) CHECK(s[i] == 0xa5, "and its bytes intact");
    CHECK(dsp_block_free((uintptr_t)served) == 0, "its owner frees it");
    /* An ordinary double free: the second one is detected and ignored. */
    char *q = malloc(N);
    CHECK(q && dsp_block_holding(q, &b), "hinted again");
    free(q);
    free(q);
    char *r = malloc(N);
    CHECK(r && dsp_block_holding(r, &b) && (b.flags & DSP_BLOCKF_MALLOC), "still usable");
    free(r);
    printf("PASS\n");
    return 0;
}
