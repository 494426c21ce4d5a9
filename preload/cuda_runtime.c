/* CUDA runtime hooks: pinned host allocations served by the manager.
 *
 * cudaHostAlloc/cudaMallocHost get a manager block of the exact (page-rounded)
 * size, registered with the real cudaHostRegister so the driver treats it as
 * pinned; cudaFreeHost waits for the device, as the real one does, and returns
 * the block to the pool still registered. Everything the shim cannot serve, or
 * that fails on its side, goes to the real function with the caller's
 * arguments: never worse than without the shim. The rules are the CUDA core's
 * (cuda_core.c), shared with the driver API's hooks (cuda_driver.c); docs/cuda.md
 * explains each decision.
 *
 * The shim links no CUDA library: real functions are found at the first call
 * (src/symbols.c), including in a libcudart loaded RTLD_LOCAL. */
#include "config.h"
#include "cuda_core.h"
#include "cuda_driver.h"
#include "cuda_types.h"
#include "interposed.h"
#include "log.h"
#include "stats.h"

/* The real functions and the resolver's list of them: preload/interposed.h. */
DSP_HOOK_DECLS(runtime)
static DSP_REAL_STRUCT(runtime) dsp_real_runtime;
static const struct dsp_sym dsp_syms_runtime[] = DSP_SYMS(runtime);

static int start(void);
static struct dsp_layer layer = {DSP_LAYER_OF(runtime), .start = start};

static cudaError_t missing(const char *name) {
    dsp_once(DSP_LOG_ERROR,
             "%s called but no loaded libcudart defines it; returning "
             "cudaErrorInsufficientDriver",
             name);
    return cudaErrorInsufficientDriver;
}

/* The real function, with the guard set: whatever the runtime asks the
 * driver on the way passes straight through (cuda_core.h). */
#define CALL_REAL(fn, ...)                                                                         \
    ({                                                                                             \
        __typeof__(dsp_real_runtime.fn) f_ = DSP_REAL(dsp_real_runtime.fn);                        \
        f_ ? DSP_CUDA_OUT(f_(__VA_ARGS__)) : missing(#fn);                                         \
    })

static int do_register(void *p, size_t len, unsigned flags) {
    return CALL_REAL(cudaHostRegister, p, len, flags);
}
static int do_unregister(void *p) {
    return CALL_REAL(cudaHostUnregister, p);
}
static int do_sync(void) {
    return CALL_REAL(cudaDeviceSynchronize);
}
static int do_exchange(int *mode) {
    return CALL_REAL(cudaThreadExchangeStreamCaptureMode, mode);
}
static int do_get_device(int *d) {
    return CALL_REAL(cudaGetDevice, d);
}
static int do_set_device(int d) {
    return CALL_REAL(cudaSetDevice, d);
}
static int do_bus_id(char *buf, int len, int dev) {
    return CALL_REAL(cudaDeviceGetPCIBusId, buf, len, dev);
}
static void do_forget(void) {
    cudaError_t (*f)(void) = DSP_REAL(dsp_real_runtime.cudaGetLastError);
    if (f) DSP_CUDA_OUT(f());
}

static struct dsp_cuda_api api = {
    .layer = &layer,
    .name = "cudaHostRegister",
    .reg = do_register,
    .unreg = do_unregister,
    .sync = do_sync,
    .forget = do_forget,
    .no_driver_a = cudaErrorInsufficientDriver,
    .no_driver_b = cudaErrorNoDevice,
};

static int start(void) {
    if (dsp_real_runtime.cudaThreadExchangeStreamCaptureMode) api.exchange_mode = do_exchange;
    if (dsp_real_runtime.cudaGetDevice) api.current_device = do_get_device;
    if (dsp_real_runtime.cudaGetDevice && dsp_real_runtime.cudaSetDevice)
        api.set_device = do_set_device;
    if (dsp_real_runtime.cudaDeviceGetPCIBusId) api.pci_bus_id = do_bus_id;
    return dsp_cuda_start(&api, DSP_CUDA_RUNTIME);
}

static cudaError_t alloc(void **p, size_t size, unsigned flags) {
    int rc = dsp_cuda_alloc(&api, p, size, flags);
    if (rc == DSP_CUDA_REAL) dsp_stat_add(DSP_ST_cuda_host_alloc_passthrough, 1);
    return rc;
}

DSP_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    int rc = alloc(pHost, size, flags);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cudaHostAlloc, pHost, size, flags);
}

DSP_API cudaError_t cudaMallocHost(void **ptr, size_t size) {
    int rc = alloc(ptr, size, 0);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cudaMallocHost, ptr, size);
}

DSP_API cudaError_t cudaFreeHost(void *ptr) {
    int rc = dsp_cuda_free(&api, ptr);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cudaFreeHost, ptr);
}

DSP_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    int rc = dsp_cuda_register(&api, do_register, ptr, size, flags);
    return rc != DSP_CUDA_REAL ? rc : do_register(ptr, size, flags);
}

DSP_API cudaError_t cudaHostUnregister(void *ptr) {
    int rc = dsp_cuda_unregister(&api, do_unregister, ptr);
    return rc != DSP_CUDA_REAL ? rc : do_unregister(ptr);
}

/* Other manager blocks are registered memory, not cudaHostAlloc memory: for
 * them, the driver's own answer (an error, with its last error). */
DSP_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost) {
    int rc = dsp_cuda_get_flags(&api, pFlags, pHost);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cudaHostGetFlags, pFlags, pHost);
}

/* Arena memory outside live blocks is asked about at an address no
 * registration holds (dsp_cuda_question): invalid value, as for any
 * unregistered memory. */
DSP_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
    void *asked = (void *)dsp_cuda_question(&api, pHost); /* resolves */
    return CALL_REAL(cudaHostGetDevicePointer, pDevice, asked, flags);
}

/* The struct's first 24 bytes are the same in CUDA 11, 12 and 13: type,
 * device, devicePointer, hostPointer. */
#define ATTR_DEVICE_POINTER 8
#define ATTR_HOST_POINTER   16

DSP_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                             const void *ptr) {
    const void *asked = dsp_cuda_question(&api, ptr);
    cudaError_t rc = CALL_REAL(cudaPointerGetAttributes, attributes, asked);
    if (rc == cudaSuccess && attributes && asked != ptr) {
        dsp_cuda_answer_for((char *)attributes + ATTR_DEVICE_POINTER, asked, ptr);
        dsp_cuda_answer_for((char *)attributes + ATTR_HOST_POINTER, asked, ptr);
    }
    return rc;
}

/* The runtime's way to the driver's functions (CUDA 11.3+): the answer is the
 * real one, with the shim's hook in place of a driver function it serves, of
 * the same version (cuda_driver.c). Every argument passes on as given: CUDA
 * 11's form has three, 12's four, and only *funcPtr is read back. */
DSP_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                            unsigned long long flags, void *driverStatus) {
    dsp_layer_serving(&layer); /* resolves */
    cudaError_t rc = CALL_REAL(cudaGetDriverEntryPoint, symbol, funcPtr, flags, driverStatus);
    if (rc == cudaSuccess && funcPtr) *funcPtr = dsp_cu_proc_hook(symbol, *funcPtr, -1);
    return rc;
}

DSP_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                     unsigned int cudaVersion,
                                                     unsigned long long flags, void *driverStatus) {
    dsp_layer_serving(&layer);
    cudaError_t rc = CALL_REAL(cudaGetDriverEntryPointByVersion, symbol, funcPtr, cudaVersion,
                               flags, driverStatus);
    if (rc == cudaSuccess && funcPtr)
        *funcPtr = dsp_cu_proc_hook(symbol, *funcPtr, (int)cudaVersion);
    return rc;
}
