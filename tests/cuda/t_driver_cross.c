/* The runtime's pinned memory is the driver's (issue 15): a block allocated
 * through one API and freed through the other, or asked about through the
 * other, behaves as it does with the driver. The same program runs against
 * the doubles alone (the driver's answers) and under the shim (served, with
 * the same answers). cudaGetDriverEntryPoint hands out the hooks, each of
 * the version asked for. */
#include "cuda_test.h"
#include "fake_cuda.h"
#include "interposed.h"

#include <stdint.h>

int cudaGetDriverEntryPoint(const char *, void **, unsigned long long, int *);
int cudaGetDriverEntryPointByVersion(const char *, void **, unsigned, unsigned long long, int *);

int main(void) {
    int shimmed = dlsym(RTLD_DEFAULT, "dsp_alloc") != NULL;
    size_t n = 3u << 20;
    void *p = NULL, *q = NULL;
    /* The runtime makes the primary context current on this thread. */
    CHECK(cudaHostAlloc(&p, n, cudaHostAllocPortable) == cudaSuccess);
    unsigned flags = 99;
    CHECK(cuMemHostGetFlags(&flags, p) == CUDA_SUCCESS && flags == 1, "%u", flags);
    unsigned type = 0;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (uintptr_t)p) == 0 &&
          type == CU_MEMORYTYPE_HOST);
    CHECK(cuMemFreeHost(p) == CUDA_SUCCESS, "runtime memory, freed by the driver");
    CHECK(cuMemFreeHost(p) == CUDA_ERROR_INVALID_VALUE, "twice: 1");

    CHECK(cuMemHostAlloc(&q, n, 2 /* DEVICEMAP */) == CUDA_SUCCESS);
    CHECK(cudaHostGetFlags(&flags, q) == cudaSuccess && flags == cudaHostAllocMapped);
    void *dev = NULL;
    CHECK(cudaHostGetDevicePointer(&dev, q, 0) == cudaSuccess && dev == q);
    CHECK(host_type(q) == 1, "the runtime sees host memory");
    CHECK(cudaFreeHost(q) == cudaSuccess, "driver memory, freed by the runtime");
    CHECK(cudaFreeHost(q) == cudaErrorInvalidValue && cudaGetLastError() == cudaErrorInvalidValue);

    if (shimmed) {
        CHECK(calls("cudaHostAlloc") == 0 && fakecu_count("cuMemHostAlloc") == 0, "both served");
        CHECK(calls("cudaFreeHost") == 1, "only the double free, for the driver's answer");
        CHECK(stat_of("cuda_host_alloc_served") == 2 && stat_of("cuda_driver_served") == 1);
        CHECK(stat_of("cuda_free_pooled") == 2);
        CHECK(fakecu_kind(p) == 2, "pooled, registered");
    } else {
        CHECK(fakecu_count("cuMemHostAlloc") == 2 && fakecu_kind(p) == 0);
    }

    /* Every served runtime name (the table of interposed functions), on the runtime's handle. */
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!rt) rt = dlopen("libcudart.so.12", RTLD_NOW | RTLD_NOLOAD);
    CHECK(rt);
#define DSP_HOOK_ENTRY(lib, name) #name,
    static const char *const names[] = {DSP_HOOKS_OF(runtime)};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *fn = dlsym(rt, names[i]);
        CHECK(fn && (!shimmed || fn == shim(names[i])), "%s", names[i]);
    }
    /* A versioned lookup, as the runtime's symbols are (libcudart.so.13). */
    void *v = dlvsym(rt, "cudaHostAlloc", "libcudart.so.13");
    if (!v) v = dlvsym(rt, "cudaHostAlloc", "libcudart.so.12");
    CHECK(v && v == dlsym(rt, "cudaHostAlloc") && (!shimmed || v == shim("cudaHostAlloc")));

    /* The runtime's way to the driver. */
    void *f = NULL;
    int status = -1;
    CHECK(cudaGetDriverEntryPoint("cuMemHostAlloc", &f, 0, &status) == cudaSuccess && status == 0);
    CHECK(f == (shimmed ? shim("cuMemHostAlloc") : (void *)cuMemHostAlloc), "%p", f);
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAllocHost", &f, 3010, 0, &status) == 0);
    CHECK(f == (shimmed ? shim("cuMemAllocHost") : (void *)cuMemAllocHost), "v1 for a 3.1 caller");
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAllocHost", &f, 12000, 0, &status) == 0);
    CHECK(f == (shimmed ? shim("cuMemAllocHost_v2") : (void *)cuMemAllocHost_v2));
    CHECK(cudaGetDriverEntryPoint("cuInit", &f, 0, &status) == 0 && f == (void *)cuInit);
    CHECK(cudaGetDriverEntryPoint("cuNoSuch", &f, 0, &status) == 500 && status == 1);
    cudaGetLastError();
    void *r = NULL;
    CUresult (*alloc_v2)(void **, size_t) = NULL;
    CHECK(cudaGetDriverEntryPoint("cuMemAllocHost", (void **)&alloc_v2, 0, &status) == 0);
    CHECK(alloc_v2(&r, n) == CUDA_SUCCESS && r);
    if (shimmed) CHECK(r == p && fakecu_count("cuMemAllocHost_v2") == 0, "from the pool");
    CHECK(cuMemFreeHost(r) == CUDA_SUCCESS);
    CHECK(cudaGetLastError() == cudaSuccess);
    PASS();
}
