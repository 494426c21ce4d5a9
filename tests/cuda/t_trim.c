/* Pooled registered blocks past DSP_POOL_MAX (2M here) are unregistered and
 * given back; dsp_trim gives back the rest. */
#include "cuda_test.h"

int main(void) {
    void *p[4];
    for (int i = 0; i < 4; i++) CHECK(cudaHostAlloc(&p[i], 1 << 20, 0) == cudaSuccess);
    for (int i = 0; i < 4; i++) CHECK(cudaFreeHost(p[i]) == cudaSuccess);
    CHECK(stat_of("pool_cached_bytes") <= 2 << 20, "%lld", stat_of("pool_cached_bytes"));
    CHECK(calls("cudaHostUnregister") == 2, "two unregistered: %d", calls("cudaHostUnregister"));
    CHECK(fakecuda_kind(p[3]) == 0 || fakecuda_kind(p[0]) == 0, "the driver forgot them");
    size_t (*trim)(void) = shim("dsp_trim");
    CHECK(trim() == 2 << 20);
    CHECK(calls("cudaHostUnregister") == 4, "all unregistered");
    CHECK(calls("cudaDeviceSynchronize") == 4, "one per free, none for the trim: %d",
          calls("cudaDeviceSynchronize"));
    CHECK(stat_of("pinned_bytes") == 0);
    for (int i = 0; i < 4; i++) CHECK(fakecuda_kind(p[i]) == 0);
    PASS();
}
