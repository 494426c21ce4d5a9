/* cudaHostRegister/cudaHostUnregister inside manager blocks and elsewhere. */
#include "cuda_test.h"

#include <stdint.h>

int main(void) {
    char *p = NULL, *s = NULL;
    size_t n = 8 << 20;
    /* A served block is pinned memory already: the runtime's own 712, with
     * its last error (issue 30), and the registration of the block stays. */
    CHECK(cudaHostAlloc((void **)&s, n, 0) == cudaSuccess);
    CHECK(cudaHostRegister(s + 4096, 1 << 20, 0) == cudaErrorHostMemoryAlreadyRegistered);
    CHECK(cudaGetLastError() == cudaErrorHostMemoryAlreadyRegistered);
    CHECK(fakecuda_kind(s) == 2);

    /* A block of ordinary memory (dsp_alloc here; malloc hints alike), pageable
     * without the shim: torch's register path and cudart().cudaHostRegister on
     * a slice succeed without touching the driver (which would say 712), once
     * the block is registered whole (its first question). */
    void *(*dsp_alloc)(size_t) = shim("dsp_alloc");
    int (*dsp_free)(void *) = shim("dsp_free");
    p = dsp_alloc(n);
    CHECK(p && host_type(p) == 1, "registered on demand");
    int regs = calls("cudaHostRegister");
    CHECK(cudaHostRegister(p + 4096, 1 << 20, 0) == cudaSuccess);
    CHECK(cudaHostRegister(p, 4096, cudaHostRegisterPortable) == cudaSuccess, "the base page too");
    CHECK(calls("cudaHostRegister") == regs, "no driver call");
    CHECK(stat_of("cuda_register_inside_block") == 2);
    CHECK(cudaHostRegister(p + 8192, 4096, 0) == cudaErrorHostMemoryAlreadyRegistered,
          "overlaps a sub-registration");
    CHECK(cudaHostRegister(p + n - 4096, 8192, 0) == cudaErrorHostMemoryAlreadyRegistered,
          "runs past the block");
    CHECK(calls("cudaHostRegister") == regs + 2, "both answered by the driver itself");
    CHECK(cudaGetLastError() == cudaErrorHostMemoryAlreadyRegistered, "so its last error is set");
    regs += 2;
    CHECK(cudaHostUnregister(p + 4096) == cudaSuccess, "mirrored");
    int unregs = calls("cudaHostUnregister");
    CHECK(cudaHostUnregister(p + 4096) == cudaErrorHostMemoryNotRegistered, "twice: 713");
    CHECK(cudaHostUnregister(p + 8192) == cudaErrorHostMemoryNotRegistered,
          "never registered: 713");
    CHECK(cudaHostUnregister(p + 4096 * 10) == cudaErrorHostMemoryNotRegistered);
    CHECK(cudaHostUnregister(p + 4096 * 100) == cudaErrorHostMemoryNotRegistered);
    /* Arena memory the program never registered: the runtime's own 713, asked
     * about an address it does not know, never about the program's, which the
     * driver knows only through the shim (issue 14). */
    CHECK(calls("cudaHostUnregister") == unregs + 4, "the runtime answered each");
    CHECK(cudaGetLastError() == cudaErrorHostMemoryNotRegistered, "with its last error");
    CHECK(fakecuda_kind(p) == 2, "the block's own registration is never touched");
    CHECK(cudaHostRegister(p + 4096, 4096, 0) == cudaSuccess, "free again after unregister");
    CHECK(cudaHostUnregister(p) == cudaSuccess && cudaHostUnregister(p + 4096) == cudaSuccess);
    CHECK(cudaHostUnregister(p) == cudaErrorHostMemoryNotRegistered,
          "the block's base: the runtime's 713");
    cudaGetLastError();
    CHECK(fakecuda_kind(p) == 2);

    /* IoMemory and ReadOnly go straight through (the driver refuses here). */
    CHECK(cudaHostRegister(p, 4096, cudaHostRegisterReadOnly) ==
          cudaErrorHostMemoryAlreadyRegistered);
    CHECK(calls("cudaHostRegister") == regs + 1);
    cudaGetLastError();

    /* Elsewhere: the real call; on success the range is pinned for every layer. */
    char *m = malloc(3 << 20);
    char *page = (char *)(((uintptr_t)m + 4095) & ~(uintptr_t)4095);
    CHECK(!is_pinned(page, 4096));
    CHECK(cudaHostRegister(page, 1 << 20, 0) == cudaSuccess);
    CHECK(calls("cudaHostRegister") == regs + 2);
    CHECK(is_pinned(page, 1 << 20) && is_pinned(page + 100, 200), "recorded as pinned");
    CHECK(stat_of("cuda_register_external") == 1);
    CHECK(cudaHostRegister(page + 4096, 4096, 0) == cudaErrorHostMemoryAlreadyRegistered,
          "the driver's own 712");
    cudaGetLastError();
    CHECK(cudaHostUnregister(page) == cudaSuccess);
    CHECK(!is_pinned(page, 1), "unregistered: no longer pinned");
    CHECK(cudaHostUnregister(page) == cudaErrorHostMemoryNotRegistered, "the driver's own 713");
    cudaGetLastError();

    /* Freeing a block drops its sub-registrations. */
    CHECK(cudaHostRegister(p + 4096, 4096, 0) == cudaSuccess);
    CHECK(dsp_free(p) == 0);
    CHECK(cudaHostUnregister(p + 4096) == cudaErrorHostMemoryNotRegistered,
          "no stale sub-registration");
    cudaGetLastError();
    CHECK(cudaFreeHost(s) == cudaSuccess);
    free(m);
    PASS();
}
