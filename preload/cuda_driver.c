/* CUDA driver API hooks: the pinned host memory of programs that reach the
 * driver without the runtime's exported symbols (static cudart: CuPy,
 * cuda-python 13, nvcc's default; JAX/XLA; TensorFlow) is served by the same
 * manager, with the same rules as the runtime's (cuda_core.c), and the
 * driver's codes: 1 for a bad free, 712 for overlapping registrations, 713
 * for an unregister of what the caller never registered.
 *
 * Such programs find the driver with dlopen("libcuda.so.1") and dlsym on that
 * handle, or through cuGetProcAddress: the shim answers both with these hooks
 * (dlsym: preload/dlsym.c; cuGetProcAddress, below), choosing the version of
 * each function the caller asked for (HAMi-core issue 57: the newest _vN
 * handed to an older caller reads arguments it never passed). docs/cuda.md,
 * "The driver API", has the table. */
#include "cuda_driver.h"

#include "config.h"
#include "cuda_core.h"
#include "interposed.h"
#include "log.h"
#include "stats.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum {
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
};

/* The real functions and the resolver's list of them: preload/interposed.h. */
DSP_HOOK_DECLS(driver)
static DSP_REAL_STRUCT(driver) dsp_real_driver;
static const struct dsp_sym dsp_syms_driver[] = DSP_SYMS(driver);

static int start(void);
static struct dsp_layer layer = {DSP_LAYER_OF(driver), .start = start};

/* A hook found with dlsym(RTLD_DEFAULT) in a process with no libcuda loaded. */
static CUresult missing(const char *name) {
    dsp_once(DSP_LOG_ERROR,
             "%s called but no loaded libcuda defines it; returning CUDA_ERROR_NOT_INITIALIZED",
             name);
    return CUDA_ERROR_NOT_INITIALIZED;
}

/* Resolves first. */
#define CALL_REAL(fn, ...)                                                                         \
    ({                                                                                             \
        (void)dsp_layer_serving(&layer);                                                           \
        __typeof__(dsp_real_driver.fn) f_ = DSP_REAL(dsp_real_driver.fn);                          \
        f_ ? DSP_CUDA_OUT(f_(__VA_ARGS__)) : missing(#fn);                                         \
    })

static int do_register(void *p, size_t len, unsigned flags) {
    return CALL_REAL(cuMemHostRegister_v2, p, len, flags);
}
static int do_register_v1(void *p, size_t len, unsigned flags) {
    return CALL_REAL(cuMemHostRegister, p, len, flags);
}
static int do_unregister(void *p) {
    return CALL_REAL(cuMemHostUnregister, p);
}
static int do_sync(void) {
    return CALL_REAL(cuCtxSynchronize);
}
static int do_exchange(int *mode) {
    return CALL_REAL(cuThreadExchangeStreamCaptureMode, mode);
}
/* A context current on this thread (the driver API has no implicit one). */
static int do_ready(void) {
    void *ctx = NULL;
    return CALL_REAL(cuCtxGetCurrent, &ctx) == 0 && ctx;
}

static int do_ctx_device(int *d) {
    return CALL_REAL(cuCtxGetDevice, d);
}
static int do_bus_id(char *buf, int len, int dev) {
    return CALL_REAL(cuDeviceGetPCIBusId, buf, len, dev);
}

static struct dsp_cuda_api api = {
    .layer = &layer,
    .name = "cuMemHostRegister",
    .reg = do_register,
    .unreg = do_unregister,
    .sync = do_sync,
    .no_driver_a = CUDA_ERROR_NO_DEVICE,
    .no_driver_b = CUDA_ERROR_STUB_LIBRARY,
};

static int start(void) {
    if (dsp_real_driver.cuThreadExchangeStreamCaptureMode) api.exchange_mode = do_exchange;
    if (dsp_real_driver.cuCtxGetCurrent) api.ready = do_ready;
    if (dsp_real_driver.cuCtxGetDevice) api.current_device = do_ctx_device;
    if (dsp_real_driver.cuDeviceGetPCIBusId) api.pci_bus_id = do_bus_id;
    return dsp_cuda_start(&api, DSP_CUDA_DRIVER);
}

static CUresult alloc(void **pp, size_t size, unsigned flags) {
    int rc = dsp_cuda_alloc(&api, pp, size, flags);
    if (rc == DSP_CUDA_REAL && !dsp_cuda_out) /* the runtime's own call is counted there */
        dsp_stat_add(DSP_ST_cuda_host_alloc_passthrough, 1);
    else if (rc == 0)
        dsp_stat_add(DSP_ST_cuda_driver_served, 1);
    return rc;
}

DSP_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
    CUresult rc = alloc(pp, bytesize, Flags);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cuMemHostAlloc, pp, bytesize, Flags);
}

DSP_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
    CUresult rc = alloc(pp, bytesize, 0);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cuMemAllocHost_v2, pp, bytesize);
}

/* Before CUDA 3.2: a 32-bit size. */
DSP_API CUresult cuMemAllocHost(void **pp, unsigned int bytesize) {
    CUresult rc = alloc(pp, bytesize, 0);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cuMemAllocHost, pp, bytesize);
}

DSP_API CUresult cuMemFreeHost(void *p) {
    CUresult rc = dsp_cuda_free(&api, p);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cuMemFreeHost, p);
}

DSP_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
    CUresult rc = dsp_cuda_register(&api, do_register, p, bytesize, Flags);
    return rc != DSP_CUDA_REAL ? rc : do_register(p, bytesize, Flags);
}

DSP_API CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) {
    CUresult rc = dsp_cuda_register(&api, do_register_v1, p, bytesize, Flags);
    return rc != DSP_CUDA_REAL ? rc : do_register_v1(p, bytesize, Flags);
}

DSP_API CUresult cuMemHostUnregister(void *p) {
    CUresult rc = dsp_cuda_unregister(&api, do_unregister, p);
    return rc != DSP_CUDA_REAL ? rc : do_unregister(p);
}

DSP_API CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p) {
    CUresult rc = dsp_cuda_get_flags(&api, pFlags, p);
    return rc != DSP_CUDA_REAL ? rc : CALL_REAL(cuMemHostGetFlags, pFlags, p);
}

/* Arena memory outside live blocks is asked about at an address no
 * registration holds (dsp_cuda_question): the driver's answers for memory it
 * does not know. */
DSP_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
    void *asked = (void *)dsp_cuda_question(&api, p);
    return CALL_REAL(cuMemHostGetDevicePointer_v2, pdptr, asked, Flags);
}

/* Before CUDA 3.2: a 32-bit device pointer. */
DSP_API CUresult cuMemHostGetDevicePointer(unsigned int *pdptr, void *p, unsigned int Flags) {
    void *asked = (void *)dsp_cuda_question(&api, p);
    return CALL_REAL(cuMemHostGetDevicePointer, pdptr, asked, Flags);
}

/* The attributes whose value is an address (CUpointer_attribute). */
static int address_valued(int attribute) {
    return attribute == 3 /* DEVICE_POINTER */ || attribute == 4 /* HOST_POINTER */ ||
           attribute == 11 /* RANGE_START_ADDR */;
}

DSP_API CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
    const void *p = (const void *)(uintptr_t)ptr, *asked = dsp_cuda_question(&api, p);
    CUresult rc = CALL_REAL(cuPointerGetAttribute, data, attribute, (uintptr_t)asked);
    if (rc == 0 && data && address_valued(attribute)) dsp_cuda_answer_for(data, asked, p);
    return rc;
}

DSP_API CUresult cuPointerGetAttributes(unsigned int numAttributes, int *attributes, void **data,
                                        CUdeviceptr ptr) {
    const void *p = (const void *)(uintptr_t)ptr, *asked = dsp_cuda_question(&api, p);
    CUresult rc =
        CALL_REAL(cuPointerGetAttributes, numAttributes, attributes, data, (uintptr_t)asked);
    for (unsigned i = 0; rc == 0 && asked != p && attributes && data && i < numAttributes; i++)
        if (data[i] && address_valued(attributes[i])) dsp_cuda_answer_for(data[i], asked, p);
    return rc;
}

/* The functions cuGetProcAddress is asked for by base name, with the versions
 * the driver has of each: `since` is the cudaVersion from which the driver
 * hands out the newer one (cuda.h's #define of the name to its _v2). */
struct proc {
    const char *name;
    void *hook_old, *hook_new; /* the same for a function with one version */
    void **real_old, **real_new;
    int since;
};
/* Sorted by name (bsearch): the table's order (preload/interposed.h). */
#define DSP_PROC_ENTRY(name, newer, since)                                                         \
    {#name,                                                                                        \
     (void *)name,                                                                                 \
     (void *)newer,                                                                                \
     (void **)&dsp_real_driver.name,                                                               \
     (void **)&dsp_real_driver.newer,                                                              \
     since},
static const struct proc procs[] = {DSP_PROCS};
static const size_t nprocs = sizeof procs / sizeof procs[0];

static int by_name(const void *key, const void *elem) {
    return strcmp(key, ((const struct proc *)elem)->name);
}

void *dsp_cu_proc_hook(const char *symbol, void *fn, int cudaVersion) {
    if (!fn || !symbol || symbol[0] != 'c' || symbol[1] != 'u') return fn;
    const struct proc *p = bsearch(symbol, procs, nprocs, sizeof *procs, by_name);
    /* Resolving also reads DSP_CUDA: off, the real answer stands. */
    if (!p || !dsp_layer_serving(&layer)) return fn;
    if (fn == p->hook_old || fn == p->hook_new) return fn;
    void *hook;
    if (fn == __atomic_load_n(p->real_new, __ATOMIC_ACQUIRE))
        hook = p->hook_new;
    else if (fn == __atomic_load_n(p->real_old, __ATOMIC_ACQUIRE))
        hook = p->hook_old;
    else if (cudaVersion < 0) /* an address of the driver's own, and no version to go by */
        return fn;
    else /* an address of the driver's own: its version by the caller's */
        hook = cudaVersion >= p->since ? p->hook_new : p->hook_old;
    dsp_stat_add(DSP_ST_cuda_proc_hooked, 1);
    return hook;
}

/* CUDA 12+: what static cudart and cudaGetDriverEntryPoint call. The real
 * lookup runs first, with every argument as given, so its code, status and
 * the version it picked are the driver's; only a found function the shim
 * serves is replaced, by its hook of the same version. */
DSP_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     unsigned long long flags, int *symbolStatus) {
    CUresult rc = CALL_REAL(cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == 0 && pfn) *pfn = dsp_cu_proc_hook(symbol, *pfn, cudaVersion);
    return rc;
}

/* CUDA 11.3 to 11.8: four arguments. */
DSP_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  unsigned long long flags) {
    CUresult rc = CALL_REAL(cuGetProcAddress, symbol, pfn, cudaVersion, flags);
    if (rc == 0 && pfn) *pfn = dsp_cu_proc_hook(symbol, *pfn, cudaVersion);
    return rc;
}
