/* A test double of the CUDA runtime (built as libcudart.so.13, its symbols
 * under the libcudart.so.13 version node as the real library's are; the same
 * source is built as libcudart.so.12 in v12/), for machines without a GPU. It
 * is layered on the libcuda.so.1 double (fake_cuda.c) exactly as the real
 * runtime is on the driver: at its first call it does
 * dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) (found beside it: an rpath of
 * $ORIGIN), dlsym(handle, "cuGetProcAddress_v2"), and then takes every driver
 * function it uses from cuGetProcAddress_v2 at its own CUDA version
 * (FAKECUDA_VERSION: 13000, or 12000 for the .so.12); it calls cuInit(0) and,
 * lazily in each thread, makes the primary context current. It does not link
 * libcuda: a shim that interposes dlsym and cuGetProcAddress sees the
 * runtime's driver calls the way it would see the real runtime's. Without a
 * libcuda.so.1 every call that needs the driver fails with 35
 * (cudaErrorInsufficientDriver).
 *
 * Host memory belongs to the driver, which keeps the records and enforces the
 * documented semantics the shim must preserve (fake_cuda.c): the runtime
 * calls map 1:1 onto the driver calls and their codes (0, 1, 2, 712, 713,
 * 900, 901 are the same numbers in both APIs):
 * - cudaHostAlloc, cudaMallocHost -> cuMemHostAlloc (shared, populated,
 *   pinned memory; a size of 0 gives NULL without a driver call);
 * - cudaFreeHost -> cuMemFreeHost (exact base, else 1; waits for the device;
 *   NULL is 0 without a driver call);
 * - cudaHostRegister -> cuMemHostRegister_v2 (712 when any page is pinned
 *   already), cudaHostUnregister -> cuMemHostUnregister (exact pointer, else
 *   713);
 * - cudaHostGetFlags -> cuMemHostGetFlags (only cudaHostAlloc memory),
 *   cudaHostGetDevicePointer -> cuMemHostGetDevicePointer_v2;
 * - cudaPointerGetAttributes -> cuPointerGetAttributes: pinned memory is host
 *   memory (type 1), cudaMalloc'd memory device memory (type 2), anything
 *   else unregistered (type 0, device -2); 24 bytes written;
 * - cudaDeviceSynchronize -> cuCtxSynchronize; cudaMalloc, cudaFree ->
 *   cuMemAlloc_v2, cuMemFree_v2 (device memory is the driver's: host memory it
 *   marks as device);
 * - a failed call sets the thread's last error (cudaGetLastError clears it).
 * The device (streams, copies, events, graph capture) is this library's
 * (fake_device.c), handed to the driver at the first call
 * (fakecu_set_device): the driver waits for it where it must, and applies
 * the capture rules to the calls forwarded to it (900 during a global-mode
 * capture), once: the runtime does not check them again.
 * fakecuda_count() tells the tests which runtime calls reached it (the
 * driver's fakecu_count() which driver calls followed); fakecuda_kind() and
 * fakecuda_foll_pinned() ask the driver's records;
 * fakecuda_call_back_on_register(q) arms the driver's call back (the next
 * successful registration, before it returns, asks
 * cudaPointerGetAttributes(q) on another thread, resolved with
 * dlsym(RTLD_DEFAULT) so a preloaded shim's hook answers, and joins it).
 * FAKECUDA_SYNC_FAIL=1: cudaDeviceSynchronize reports 999.
 * FAKECUDA_DEVICES=N (1 to 8, default 1): the devices cudaGetDeviceCount
 * reports and cudaSetDevice takes. As the real runtime (CUDA 12+), a thread
 * works on device 0 until it calls cudaSetDevice, and the first call that
 * needs a context on a device makes that device's primary context (on a
 * real GPU: hundreds of MiB of its memory); fakecuda_contexts() is the mask
 * of the devices that got one. All share the driver double's one context.
 * Device d's PCI bus id (cudaDeviceGetPCIBusId) is 0000:%02x:00.0 of 0x18 +
 * d, as the driver double's device 0 (cuDeviceGetPCIBusId). */
#include "fake_cudart.h"
#include "fake_cuda.h"

#include <stdatomic.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#ifndef FAKECUDA_VERSION
#define FAKECUDA_VERSION 13000
#endif

static __thread int last_error;

enum {
    C_HOSTALLOC,
    C_MALLOCHOST,
    C_FREEHOST,
    C_REGISTER,
    C_UNREGISTER,
    C_GETFLAGS,
    C_DEVPTR,
    C_ATTR,
    C_SYNC,
    C_BUS_ID,
    C_N
};
static const char *const cname[C_N] = {"cudaHostAlloc",
                                       "cudaMallocHost",
                                       "cudaFreeHost",
                                       "cudaHostRegister",
                                       "cudaHostUnregister",
                                       "cudaHostGetFlags",
                                       "cudaHostGetDevicePointer",
                                       "cudaPointerGetAttributes",
                                       "cudaDeviceSynchronize",
                                       "cudaDeviceGetPCIBusId"};
static int counts[C_N];

static int ret(int e) {
    if (e) last_error = e;
    return e;
}

int fk_ret(int e) {
    return ret(e);
}

static void count(int c) {
    __atomic_fetch_add(&counts[c], 1, __ATOMIC_RELAXED);
}

int fakecuda_count(const char *name) {
    for (int i = 0; i < C_N; i++)
        if (!strcmp(name, cname[i])) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
    return -1;
}

/* --- the driver, as the runtime reaches it ------------------------------- */

#define DRIVER(X)                                                                                  \
    X(Init, "cuInit", (unsigned))                                                                  \
    X(DriverGetVersion, "cuDriverGetVersion", (int *))                                             \
    X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))                       \
    X(CtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                               \
    X(CtxSynchronize, "cuCtxSynchronize", (void))                                                  \
    X(MemHostAlloc, "cuMemHostAlloc", (void **, size_t, unsigned))                                 \
    X(MemFreeHost, "cuMemFreeHost", (void *))                                                      \
    X(MemHostRegister, "cuMemHostRegister", (void *, size_t, unsigned))                            \
    X(MemHostUnregister, "cuMemHostUnregister", (void *))                                          \
    X(MemHostGetFlags, "cuMemHostGetFlags", (unsigned *, void *))                                  \
    X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", (CUdeviceptr *, void *, unsigned))     \
    X(PointerGetAttributes, "cuPointerGetAttributes", (unsigned, int *, void **, CUdeviceptr))     \
    X(MemAlloc, "cuMemAlloc", (CUdeviceptr *, size_t))                                             \
    X(MemFree, "cuMemFree", (CUdeviceptr))

#define FIELD(f, name, args) CUresult(*f) args;
static struct driver {
    DRIVER(FIELD)
    /* The way to the driver, kept for cudaGetDriverEntryPoint. */
    CUresult (*GetProcAddress_v2)(const char *, void **, int, unsigned long long, int *);
    /* The double's test controls, by dlsym on the handle. */
    int (*kind)(const void *);
    int (*foll_pinned)(const void *);
    int (*host_pinned)(const void *, size_t);
    void (*set_device)(void (*)(void), int (*)(void), int (*)(int *));
    void (*call_back_on_register)(const void *);
    int (*called_back)(void);
    CUcontext ctx; /* the primary context */
    int ok;
} drv;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static __thread int ctx_current;   /* this thread has the primary context current */
static __thread int thread_device; /* cudaSetDevice's; 0 until then */
static _Atomic unsigned contexts;  /* devices whose primary context was made */

static int devices(void) {
    const char *v = getenv("FAKECUDA_DEVICES");
    int n = v ? atoi(v) : 1;
    return n < 1 ? 1 : n > 8 ? 8 : n;
}

unsigned fakecuda_contexts(void) {
    return atomic_load(&contexts);
}

/* dlopen("libcuda.so.1") as the runtime does. Where that finds nothing
 * because the search did not start from this library (a sanitizer's dlopen
 * interceptor makes itself the caller, whose runpath is not our $ORIGIN), the
 * folders the runpath names are tried by path: this library's own, then its
 * parent (the .so.12 in v12/). */
static void *open_driver(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    Dl_info self;
    if (h || !dladdr((void *)open_driver, &self) || !self.dli_fname) return h;
    const char *slash = strrchr(self.dli_fname, '/');
    int dir = slash ? (int)(slash - self.dli_fname) : 1;
    const char *base = slash ? self.dli_fname : ".";
    char path[4096];
    snprintf(path, sizeof path, "%.*s/libcuda.so.1", dir, base);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    snprintf(path, sizeof path, "%.*s/../libcuda.so.1", dir, base);
    return h ? h : dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void load(void) {
    void *h = open_driver();
    CUresult (*gpa)(const char *, void **, int, unsigned long long, int *) =
        h ? (CUresult(*)(const char *, void **, int, unsigned long long, int *))dlsym(
                h, "cuGetProcAddress_v2")
          : NULL;
    if (!gpa) {
        fprintf(stderr, "libcudart double: no libcuda.so.1 (%s)\n",
                h ? "no cuGetProcAddress_v2" : dlerror());
        return;
    }
    drv.GetProcAddress_v2 = gpa;
    int missing = 0, status;
#define FETCH(f, name, args)                                                                       \
    missing |= gpa(name, (void **)&drv.f, FAKECUDA_VERSION, 0, &status) != CUDA_SUCCESS;
    DRIVER(FETCH)
    *(void **)&drv.kind = dlsym(h, "fakecu_kind");
    *(void **)&drv.foll_pinned = dlsym(h, "fakecu_foll_pinned");
    *(void **)&drv.host_pinned = dlsym(h, "fakecu_host_pinned");
    *(void **)&drv.set_device = dlsym(h, "fakecu_set_device");
    *(void **)&drv.call_back_on_register = dlsym(h, "fakecu_call_back_on_register");
    *(void **)&drv.called_back = dlsym(h, "fakecu_called_back");
    if (missing || !drv.kind || !drv.foll_pinned || !drv.host_pinned || !drv.set_device ||
        !drv.call_back_on_register || !drv.called_back) {
        fprintf(stderr, "libcudart double: libcuda.so.1 is not the driver double\n");
        return;
    }
    drv.set_device(fk_device_idle, fk_capture_refuses, fk_exchange_mode);
    if (drv.Init(0) || drv.PrimaryCtxRetain(&drv.ctx, 0)) return;
    drv.ok = 1;
}

/* The driver, initialised, with the primary context current in this thread
 * (as the runtime makes it lazily); NULL without one. */
static const struct driver *driver(void) {
    pthread_once(&once, load);
    if (!drv.ok) return NULL;
    if (!ctx_current && drv.CtxSetCurrent(drv.ctx) == CUDA_SUCCESS) {
        ctx_current = 1;
        atomic_fetch_or(&contexts, 1u << thread_device);
    }
    return &drv;
}

#define NO_DRIVER 35 /* cudaErrorInsufficientDriver */
/* The driver's code as the runtime's: the same numbers for every code the
 * calls below can meet. */
#define CALL(f, ...) (d ? ret(d->f(__VA_ARGS__)) : ret(NO_DRIVER))

int fk_host_pinned(const void *p, size_t n) {
    const struct driver *d = driver();
    return d && d->host_pinned(p, n);
}

int fk_is_device(const void *p) {
    const struct driver *d = driver();
    return d && d->kind(p) == 3;
}

/* 1 when p's pages were pinned with FOLL_PIN (fake_pin.c), 0 when the
 * double could only mlock them or p is not pinned memory. */
int fakecuda_foll_pinned(const void *p) {
    const struct driver *d = driver();
    return d && d->foll_pinned(p);
}

/* 0 unknown, 1 cudaHostAlloc memory, 2 registered, 3 cudaMalloc'd. */
int fakecuda_kind(const void *p) {
    const struct driver *d = driver();
    return d ? d->kind(p) : 0;
}

void fakecuda_call_back_on_register(const void *q) {
    const struct driver *d = driver();
    if (d) d->call_back_on_register(q);
}
int fakecuda_called_back(void) {
    const struct driver *d = driver();
    return d ? d->called_back() : 0;
}

/* --- host memory --------------------------------------------------------- */

static int host_alloc(void **p, size_t size, unsigned flags) {
    if (!p || flags > 7) return ret(1);
    if (!size) {
        *p = NULL;
        return 0;
    }
    const struct driver *d = driver();
    return CALL(MemHostAlloc, p, size, flags);
}

int cudaHostAlloc(void **p, size_t size, unsigned flags) {
    count(C_HOSTALLOC);
    return host_alloc(p, size, flags);
}

int cudaMallocHost(void **p, size_t size) {
    count(C_MALLOCHOST);
    return host_alloc(p, size, 0);
}

int cudaFreeHost(void *p) {
    count(C_FREEHOST);
    if (!p) return 0;
    const struct driver *d = driver();
    return CALL(MemFreeHost, p);
}

int cudaHostRegister(void *p, size_t size, unsigned flags) {
    count(C_REGISTER);
    const struct driver *d = driver();
    return CALL(MemHostRegister, p, size, flags);
}

int cudaHostUnregister(void *p) {
    count(C_UNREGISTER);
    const struct driver *d = driver();
    return CALL(MemHostUnregister, p);
}

int cudaHostGetFlags(unsigned *flags, void *p) {
    count(C_GETFLAGS);
    const struct driver *d = driver();
    return CALL(MemHostGetFlags, flags, p);
}

int cudaHostGetDevicePointer(void **dev, void *p, unsigned flags) {
    count(C_DEVPTR);
    if (!dev) return ret(1);
    const struct driver *d = driver();
    CUdeviceptr dp = 0;
    int rc = CALL(MemHostGetDevicePointer, &dp, p, flags);
    if (!rc) *dev = (void *)(uintptr_t)dp;
    return rc;
}

struct attrs24 {
    int type, device;
    void *devicePointer, *hostPointer;
};

int cudaPointerGetAttributes(void *attr, const void *p) {
    count(C_ATTR);
    if (!attr) return ret(1);
    const struct driver *d = driver();
    unsigned type = 0;
    int ordinal = 0;
    CUdeviceptr dp = 0;
    void *hp = NULL;
    int at[4] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER};
    void *data[4] = {&type, &ordinal, &dp, &hp};
    int rc = CALL(PointerGetAttributes, 4, at, data, (CUdeviceptr)(uintptr_t)p);
    if (rc) return rc;
    struct attrs24 a = {(int)type, type ? ordinal : -2 /* cudaInvalidDeviceId */,
                        (void *)(uintptr_t)dp, hp};
    memcpy(attr, &a, sizeof a);
    return 0;
}

/* FAKECUDA_SYNC_FAIL=1: the device reports an error (999, cudaErrorUnknown). */
int cudaDeviceSynchronize(void) {
    count(C_SYNC);
    const struct driver *d = driver();
    int rc = CALL(CtxSynchronize);
    if (rc) return rc;
    const char *f = getenv("FAKECUDA_SYNC_FAIL");
    return ret(f && *f == '1' ? 999 : 0);
}

/* Device memory: the driver's. A size of 0 gives NULL. */
int cudaMalloc(void **p, size_t size) {
    if (!p) return ret(1);
    if (!size) {
        *p = NULL;
        return 0;
    }
    const struct driver *d = driver();
    CUdeviceptr dp = 0;
    int rc = CALL(MemAlloc, &dp, size);
    if (!rc) *p = (void *)(uintptr_t)dp;
    return rc;
}

/* cudaFree(NULL) is how programs create the context: 0. */
int cudaFree(void *p) {
    const struct driver *d = driver();
    if (!p) return d ? 0 : ret(NO_DRIVER);
    return CALL(MemFree, (CUdeviceptr)(uintptr_t)p);
}

int cudaGetDeviceCount(int *n) {
    if (!n) return ret(1);
    *n = devices();
    return 0;
}

/* CUDA 12+: the device's primary context is made here, if it was not. */
int cudaSetDevice(int d) {
    if (d < 0 || d >= devices()) return ret(101 /* cudaErrorInvalidDevice */);
    thread_device = d;
    ctx_current = 0; /* the next call makes it current (one context in the driver double) */
    return driver() ? 0 : ret(NO_DRIVER);
}

int cudaDeviceGetPCIBusId(char *buf, int len, int d) {
    count(C_BUS_ID);
    if (!buf || len < 13) return ret(1);
    if (d < 0 || d >= devices()) return ret(101 /* cudaErrorInvalidDevice */);
    snprintf(buf, (size_t)len, "0000:%02x:00.0", 0x18 + d);
    return 0;
}

int cudaGetDevice(int *d) {
    if (!d) return ret(1);
    *d = thread_device;
    return 0;
}

int cudaRuntimeGetVersion(int *v) {
    if (!v) return ret(1);
    *v = 13000;
    return 0;
}

int cudaDriverGetVersion(int *v) {
    if (!v) return ret(1);
    const struct driver *d = driver();
    return CALL(DriverGetVersion, v);
}

const char *cudaGetErrorString(int e) {
    switch (e) {
    case 0:
        return "no error";
    case 1:
        return "invalid argument";
    case 2:
        return "out of memory";
    case 35:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case 100:
        return "no CUDA-capable device is detected";
    case 101:
        return "invalid device ordinal";
    case 600:
        return "device not ready";
    case 712:
        return "part or all of the requested memory range is already mapped";
    case 713:
        return "pointer does not correspond to a registered memory region";
    case 900:
        return "operation not permitted when stream is capturing";
    case 901:
        return "operation failed due to a previous error during capture";
    case 999:
        return "unknown error";
    default:
        return "unrecognized error code";
    }
}

int cudaGetLastError(void) {
    int e = last_error;
    last_error = 0;
    return e;
}

int cudaPeekAtLastError(void) {
    return last_error;
}

/* --- the driver's entry points ------------------------------------------- */

/* As the runtime answers them (CUDA 12's forms): through the driver's
 * cuGetProcAddress_v2, the one it got from dlsym on libcuda's handle, at the
 * runtime's own version or the caller's. cudaErrorSymbolNotFound (500) when
 * the driver has no such function. */
static int entry_point(const char *symbol, void **fn, int version, unsigned long long flags,
                       int *status) {
    pthread_once(&once, load);
    if (!drv.GetProcAddress_v2) return ret(NO_DRIVER);
    int st = 0;
    CUresult rc = drv.GetProcAddress_v2(symbol, fn, version, flags, status ? status : &st);
    return ret(rc == CUDA_SUCCESS ? 0 : rc == 1 ? 1 : 500);
}

int cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags, int *status) {
    return entry_point(symbol, fn, FAKECUDA_VERSION, flags, status);
}

int cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                     unsigned long long flags, int *status) {
    return entry_point(symbol, fn, (int)version, flags, status);
}
