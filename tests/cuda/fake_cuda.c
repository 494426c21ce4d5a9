/* A test double of the CUDA driver (built as libcuda.so.1, its symbols
 * unversioned as the real library's are: fake_cuda.map), for machines without
 * a GPU. It owns every memory record: host memory it maps (cuMemHostAlloc),
 * registrations (cuMemHostRegister), device memory (cuMemAlloc). The libcudart
 * double (fake_cudart.c) is built on it the way the real runtime is built on
 * the real driver: dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL),
 * dlsym(handle, "cuGetProcAddress_v2"), then every driver function through
 * cuGetProcAddress_v2; the cuFile double links it. A shim that interposes at
 * the driver level (dlsym, cuGetProcAddress) is thus exercised by the
 * runtime's own path, as it would be with the real libraries.
 *
 * What it models of the real driver (docs: CUDA Driver API; the field notes'
 * sections on the driver's memory):
 * - before cuInit(0) every call fails with CUDA_ERROR_NOT_INITIALIZED (3),
 *   except cuGetProcAddress(_v2) and cuDriverGetVersion (13000);
 * - one device (0) and its primary context; the current context is per
 *   thread, and the memory calls (host allocation, registration, device
 *   allocation, the device pointer of host memory, cuCtxSynchronize) fail
 *   with CUDA_ERROR_INVALID_CONTEXT (201) on a thread without one;
 *   cuMemHostGetFlags and cuPointerGetAttribute(s) need none;
 * - cuMemHostAlloc memory is what the NVIDIA module maps
 *   (kernel-open/nvidia/nv-mmap.c: VM_SHARED, "to avoid any undesired
 *   copy-on-write effects", and VM_DONTDUMP): shared anonymous memory left out
 *   of core dumps, populated and pinned, so a forked child shares it and fork
 *   copies nothing; cuMemFreeHost takes its exact base, else 1, and waits
 *   until the device is idle first;
 * - cuMemHostRegister pins with FOLL_PIN as the driver does (os-mlock.c:
 *   pin_user_pages; fake_pin.c), so registered private memory is copied into
 *   a child at fork (Linux 5.9+); a range with any page pinned already fails
 *   with 712; cuMemHostUnregister takes the exact registered pointer, else
 *   713. Pinning costs what it costs for real, so benchmarks against the
 *   double compare like with like;
 * - cuMemHostGetFlags answers only for cuMemHostAlloc memory;
 *   cuMemHostGetDevicePointer gives the host address (unified addressing);
 *   the legacy (v1) forms take and write 32-bit values;
 * - device memory is host memory the double marks as device, each allocation
 *   with its own buffer id: a freed range allocated again at the same address
 *   (the double reuses a freed range of the same size first, as a caching
 *   allocator would) gets a new id. cuMemFree waits until the device is idle;
 * - cuPointerGetAttribute fails (1) for memory the driver does not know;
 *   cuPointerGetAttributes succeeds for any pointer and writes 0 / NULL for
 *   unknown memory. MEMORY_TYPE is HOST (1) for pinned host memory, DEVICE
 *   (2) for device memory; RANGE_START_ADDR / RANGE_SIZE give the whole
 *   allocation or registration; IS_MANAGED is written as a one-byte bool
 *   (callers must not read more); an unknown attribute is 1;
 * - cuGetProcAddress_v2 (and CUDA 11.3's 4-argument cuGetProcAddress) take
 *   base names without _vN and give the variant the caller's cudaVersion asks
 *   for (cuMemAllocHost at 3010 is the 32-bit v1, at 3020 or later _v2), the
 *   very functions dlsym gives; an unknown name is SYMBOL_NOT_FOUND, a name
 *   asked at a version older than it is VERSION_NOT_SUFFICIENT (both 500).
 * The device itself (streams, copies, graph capture) is the runtime double's
 * (fake_device.c), handed over by fakecu_set_device: cuMemFreeHost, cuMemFree
 * and cuCtxSynchronize wait for it; the potentially unsafe calls (host
 * allocation, registration and unregistration, cuMemFreeHost,
 * cuCtxSynchronize, cuMemAlloc, cuMemFree) fail with 900 where its capture
 * rules say so (checked here once: the check invalidates the capture);
 * cuThreadExchangeStreamCaptureMode is its thread mode. Without a runtime
 * loaded the device is always idle and never captures.
 * fakecu_count() tells the tests which driver calls were made;
 * fakecu_call_back_on_register(q) arms a driver that calls back: the next
 * successful registration, before it returns, asks cudaPointerGetAttributes(q)
 * (resolved with dlsym(RTLD_DEFAULT), so a preloaded shim's hook answers) on
 * another thread and joins it: a shim holding a lock of its own across the
 * call deadlocks there. */
#include "fake_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE   4096ul
#define MAXREC 65536
#define MAXDEV 65536

enum { NONE = 0, ALLOC = 1, REGISTER = 2, DEVICE = 3 };

/* Host memory: page-granular records of what is pinned. */
struct rec {
    uintptr_t lo, hi; /* pages */
    void *ptr;        /* exact pointer given or returned */
    size_t size;      /* bytes asked for */
    size_t len;       /* mapping length, for ALLOC */
    int pin;          /* fk_pin's handle, or -1 */
    unsigned flags;
    int kind;
    unsigned long long id;
};

/* Device memory: freed allocations keep their mapping, for reuse. */
struct dev {
    uintptr_t base;
    size_t len, map_len;
    unsigned long long id;
    int live;
};

static struct rec recs[MAXREC];
static int nrec;
static struct dev devs[MAXDEV];
static int ndev;
static unsigned long long next_id = 1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* --- counts -------------------------------------------------------------- */

#define CALLS(X)                                                                                   \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetCount)                                                                            \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxGetDevice)                                                                              \
    X(cuDeviceGetPCIBusId)                                                                         \
    X(cuCtxSynchronize)                                                                            \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemAllocHost_v2)                                                                           \
    X(cuMemAllocHost)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuMemHostRegister_v2)                                                                        \
    X(cuMemHostRegister)                                                                           \
    X(cuMemHostUnregister)                                                                         \
    X(cuMemHostGetFlags)                                                                           \
    X(cuMemHostGetDevicePointer_v2)                                                                \
    X(cuMemHostGetDevicePointer)                                                                   \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemFree_v2)                                                                                \
    X(cuPointerGetAttribute)                                                                       \
    X(cuPointerGetAttributes)                                                                      \
    X(cuThreadExchangeStreamCaptureMode)                                                           \
    X(cuGetProcAddress_v2)                                                                         \
    X(cuGetProcAddress)

#define ENUM(f) C_##f,
enum { CALLS(ENUM) C_N };
#define NAME(f) #f,
static const char *const cname[C_N] = {CALLS(NAME)};
static int counts[C_N];

#define COUNT(f) __atomic_fetch_add(&counts[C_##f], 1, __ATOMIC_RELAXED)

int fakecu_count(const char *name) {
    for (int i = 0; name && i < C_N; i++)
        if (!strcmp(name, cname[i])) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
    return -1;
}

/* --- initialisation, device, contexts ------------------------------------ */

struct fakecu_ctx {
    int refs; /* primary context retains */
};
static struct fakecu_ctx primary;
static int initialised;

/* Per-thread state (the current context, the capture mode without a
 * runtime) lives in pthread keys, not __thread: LeakSanitizer (GCC 12, glibc
 * 2.36) crashes at exit scanning the dynamic TLS of this library when it is
 * loaded RTLD_LOCAL behind another (cufile_rtld_local in the ASan build). */
static pthread_key_t key_ctx, key_mode;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static void make_keys(void) {
    pthread_key_create(&key_ctx, NULL);
    pthread_key_create(&key_mode, NULL);
}
static void *thread_get(pthread_key_t *k) {
    pthread_once(&keys_once, make_keys);
    return pthread_getspecific(*k);
}
static void thread_set(pthread_key_t *k, void *v) {
    pthread_once(&keys_once, make_keys);
    pthread_setspecific(*k, v);
}

#define NEED_INIT()                                                                                \
    do {                                                                                           \
        if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED;   \
    } while (0)

/* The calling thread's context is current and alive. */
static int have_context(void) {
    return thread_get(&key_ctx) == &primary && __atomic_load_n(&primary.refs, __ATOMIC_ACQUIRE) > 0;
}

#define NEED_CONTEXT()                                                                             \
    do {                                                                                           \
        NEED_INIT();                                                                               \
        if (!have_context()) return CUDA_ERROR_INVALID_CONTEXT;                                    \
    } while (0)

/* The runtime's device (fakecu_set_device), or none. */
static void (*dev_idle)(void);
static int (*dev_capture_refuses)(void);
static int (*dev_exchange_mode)(int *);

void fakecu_set_device(void (*idle)(void), int (*capture_refuses)(void),
                       int (*exchange_mode)(int *)) {
    __atomic_store_n(&dev_idle, idle, __ATOMIC_RELEASE);
    __atomic_store_n(&dev_capture_refuses, capture_refuses, __ATOMIC_RELEASE);
    __atomic_store_n(&dev_exchange_mode, exchange_mode, __ATOMIC_RELEASE);
}

static void device_idle(void) {
    void (*f)(void) = __atomic_load_n(&dev_idle, __ATOMIC_ACQUIRE);
    if (f) f();
}

static int capture_refuses(void) {
    int (*f)(void) = __atomic_load_n(&dev_capture_refuses, __ATOMIC_ACQUIRE);
    return f ? f() : 0;
}

#define UNLESS_REFUSED()                                                                           \
    do {                                                                                           \
        int refused_ = capture_refuses();                                                          \
        if (refused_) return refused_;                                                             \
    } while (0)

CUresult cuInit(unsigned flags) {
    COUNT(cuInit);
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    __atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
    COUNT(cuDriverGetVersion);
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
    COUNT(cuDeviceGet);
    NEED_INIT();
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *dev = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
    COUNT(cuDeviceGetCount);
    NEED_INIT();
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    *n = 1;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    COUNT(cuDevicePrimaryCtxRetain);
    NEED_INIT();
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    __atomic_fetch_add(&primary.refs, 1, __ATOMIC_ACQ_REL);
    *ctx = &primary;
    return CUDA_SUCCESS;
}

/* The last release leaves the context inactive: threads that have it current
 * then have no usable context. */
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
    COUNT(cuDevicePrimaryCtxRelease);
    NEED_INIT();
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    int refs = __atomic_load_n(&primary.refs, __ATOMIC_ACQUIRE);
    do
        if (refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    while (!__atomic_compare_exchange_n(&primary.refs, &refs, refs - 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    COUNT(cuCtxSetCurrent);
    NEED_INIT();
    if (ctx && ctx != &primary) return CUDA_ERROR_INVALID_CONTEXT;
    thread_set(&key_ctx, ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) {
    COUNT(cuCtxGetCurrent);
    NEED_INIT();
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    *ctx = thread_get(&key_ctx);
    return CUDA_SUCCESS;
}

/* The one device's: the context current on the thread is device 0's. */
CUresult cuCtxGetDevice(CUdevice *dev) {
    COUNT(cuCtxGetDevice);
    NEED_CONTEXT();
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    *dev = 0;
    return CUDA_SUCCESS;
}

/* The runtime double's device 0 has the same (fake_cudart.c). */
CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice dev) {
    COUNT(cuDeviceGetPCIBusId);
    NEED_INIT();
    if (!buf || len < 13) return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    memcpy(buf, "0000:18:00.0", 13);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    COUNT(cuCtxSynchronize);
    NEED_CONTEXT();
    UNLESS_REFUSED();
    device_idle();
    return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
    COUNT(cuThreadExchangeStreamCaptureMode);
    NEED_INIT();
    int (*f)(int *) = __atomic_load_n(&dev_exchange_mode, __ATOMIC_ACQUIRE);
    if (f) return f(mode);
    if (!mode || *mode < 0 || *mode > 2) return CUDA_ERROR_INVALID_VALUE;
    int old = (int)(intptr_t)thread_get(&key_mode); /* without a runtime: the thread's own */
    thread_set(&key_mode, (void *)(intptr_t)*mode);
    *mode = old;
    return CUDA_SUCCESS;
}

/* --- records ------------------------------------------------------------- */

static uintptr_t floor_page(uintptr_t p) {
    return p & ~(PAGE - 1);
}
static uintptr_t ceil_page(uintptr_t p) {
    return (p + PAGE - 1) & ~(PAGE - 1);
}

static int overlaps(uintptr_t lo, uintptr_t hi) {
    for (int i = 0; i < nrec; i++)
        if (recs[i].lo < hi && lo < recs[i].hi) return 1;
    return 0;
}

static struct rec *containing(const void *p) {
    for (int i = 0; i < nrec; i++)
        if ((uintptr_t)p >= recs[i].lo && (uintptr_t)p < recs[i].hi) return &recs[i];
    return NULL;
}

static struct dev *live_device(uintptr_t p) {
    for (int i = 0; i < ndev; i++)
        if (devs[i].live && p - devs[i].base < devs[i].len) return &devs[i];
    return NULL;
}

/* What the driver knows of p, copied (kind NONE when nothing). */
struct what {
    int kind;
    uintptr_t start; /* allocation or registration */
    size_t size;
    unsigned long long id;
    int pin;
    uintptr_t hi; /* end of the pinned pages, host memory */
};

static struct what what_of(const void *p) {
    struct what w = {.kind = NONE, .pin = -1};
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p);
    struct dev *d = r ? NULL : live_device((uintptr_t)p);
    if (r)
        w = (struct what){r->kind, (uintptr_t)r->ptr, r->size, r->id, r->pin, r->hi};
    else if (d)
        w = (struct what){DEVICE, d->base, d->len, d->id, -1, 0};
    pthread_mutex_unlock(&mu);
    return w;
}

int fakecu_kind(const void *p) {
    return what_of(p).kind;
}

/* 1 when p's pages were pinned with FOLL_PIN, 0 when the double could only
 * mlock them or p is not pinned host memory. */
int fakecu_foll_pinned(const void *p) {
    struct what w = what_of(p);
    return (w.kind == ALLOC || w.kind == REGISTER) && w.pin >= 0;
}

int fakecu_host_pinned(const void *p, size_t n) {
    struct what w = what_of(p);
    return (w.kind == ALLOC || w.kind == REGISTER) && (uintptr_t)p + n <= w.hi;
}

int fakecu_find_device(uintptr_t p, uintptr_t *base, size_t *len, unsigned long long *id) {
    pthread_mutex_lock(&mu);
    struct dev *d = live_device(p);
    if (d) *base = d->base, *len = d->len, *id = d->id;
    pthread_mutex_unlock(&mu);
    return d != NULL;
}

/* --- host memory --------------------------------------------------------- */

static CUresult host_alloc(void **pp, size_t size, unsigned flags) {
    NEED_CONTEXT();
    if (!pp || !size || flags > 7) return CUDA_ERROR_INVALID_VALUE;
    UNLESS_REFUSED();
    size_t len = ceil_page(size);
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    madvise(m, len, MADV_DONTDUMP);
    madvise(m, len, 23 /* MADV_POPULATE_WRITE */);
    int pin = fk_pin(m, len, 1);
    pthread_mutex_lock(&mu);
    if (nrec == MAXREC) {
        pthread_mutex_unlock(&mu);
        fk_unpin(pin);
        munmap(m, len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    recs[nrec++] =
        (struct rec){(uintptr_t)m, (uintptr_t)m + len, m, size, len, pin, flags, ALLOC, next_id++};
    pthread_mutex_unlock(&mu);
    *pp = m;
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned flags) {
    COUNT(cuMemHostAlloc);
    return host_alloc(pp, bytesize, flags);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
    COUNT(cuMemAllocHost_v2);
    return host_alloc(pp, bytesize, 0);
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize) {
    COUNT(cuMemAllocHost);
    return host_alloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p) {
    COUNT(cuMemFreeHost);
    NEED_CONTEXT();
    UNLESS_REFUSED();
    device_idle(); /* the driver synchronises the device first */
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p);
    if (!r || r->kind != ALLOC || r->ptr != p) {
        pthread_mutex_unlock(&mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t len = r->len;
    int pin = r->pin;
    *r = recs[--nrec];
    pthread_mutex_unlock(&mu);
    fk_unpin(pin);
    munmap(p, len);
    return CUDA_SUCCESS;
}

static const void *call_back_on;
static int called_back;

void fakecu_call_back_on_register(const void *q) {
    __atomic_store_n(&call_back_on, q, __ATOMIC_RELEASE);
}
int fakecu_called_back(void) {
    return __atomic_load_n(&called_back, __ATOMIC_ACQUIRE);
}

static void *call_back(void *q) {
    struct {
        int type, device;
        void *devicePointer, *hostPointer;
    } a;
    int (*attrs)(void *, const void *) =
        (int (*)(void *, const void *))dlsym(RTLD_DEFAULT, "cudaPointerGetAttributes");
    if (attrs && attrs(&a, q) == 0) __atomic_fetch_add(&called_back, 1, __ATOMIC_RELEASE);
    return NULL;
}

static CUresult host_register(void *p, size_t size, unsigned flags) {
    NEED_CONTEXT();
    if (!p || !size || flags > 15) return CUDA_ERROR_INVALID_VALUE;
    UNLESS_REFUSED();
    uintptr_t lo = floor_page((uintptr_t)p), hi = ceil_page((uintptr_t)p + size);
    pthread_mutex_lock(&mu);
    CUresult rc = CUDA_SUCCESS;
    if (overlaps(lo, hi))
        rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else if (nrec == MAXREC)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
        recs[nrec++] = (struct rec){lo, hi, p, size, 0, -1, flags, REGISTER, next_id++};
    pthread_mutex_unlock(&mu);
    if (rc) return rc;
    madvise((void *)lo, hi - lo, 23 /* MADV_POPULATE_WRITE: pinning faults pages in */);
    int pin = fk_pin((void *)lo, hi - lo, 0);
    pthread_mutex_lock(&mu);
    struct rec *r = containing((void *)lo);
    if (r && r->kind == REGISTER && r->ptr == p && r->pin < 0) r->pin = pin, pin = -1;
    pthread_mutex_unlock(&mu);
    fk_unpin(pin); /* unregistered meanwhile */
    const void *q = __atomic_exchange_n(&call_back_on, NULL, __ATOMIC_ACQ_REL);
    pthread_t t;
    if (q && pthread_create(&t, NULL, call_back, (void *)q) == 0) pthread_join(t, NULL);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned flags) {
    COUNT(cuMemHostRegister_v2);
    return host_register(p, bytesize, flags);
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned flags) {
    COUNT(cuMemHostRegister);
    return host_register(p, bytesize, flags);
}

CUresult cuMemHostUnregister(void *p) {
    COUNT(cuMemHostUnregister);
    NEED_CONTEXT();
    UNLESS_REFUSED();
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p);
    CUresult rc = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    int pin = -1;
    if (r && r->kind == REGISTER && r->ptr == p) {
        pin = r->pin;
        *r = recs[--nrec];
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    fk_unpin(pin);
    return rc;
}

CUresult cuMemHostGetFlags(unsigned *flags, void *p) {
    COUNT(cuMemHostGetFlags);
    NEED_INIT();
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (r && r->kind == ALLOC) {
        *flags = r->flags;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static CUresult device_pointer(void *p, unsigned flags) {
    NEED_CONTEXT();
    int kind = what_of(p).kind;
    if (flags || (kind != ALLOC && kind != REGISTER)) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
    COUNT(cuMemHostGetDevicePointer_v2);
    CUresult rc = d ? device_pointer(p, flags) : CUDA_ERROR_INVALID_VALUE;
    if (!rc) *d = (CUdeviceptr)(uintptr_t)p; /* unified addressing */
    return rc;
}

/* CUdeviceptr_v1 is 32 bits: 4 bytes written, the address truncated. */
CUresult cuMemHostGetDevicePointer(unsigned int *d, void *p, unsigned flags) {
    COUNT(cuMemHostGetDevicePointer);
    CUresult rc = d ? device_pointer(p, flags) : CUDA_ERROR_INVALID_VALUE;
    if (!rc) *d = (unsigned int)(uintptr_t)p;
    return rc;
}

/* --- device memory ------------------------------------------------------- */

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
    COUNT(cuMemAlloc_v2);
    NEED_CONTEXT();
    if (!p || !size) return CUDA_ERROR_INVALID_VALUE;
    UNLESS_REFUSED();
    size_t map_len = ceil_page(size);
    pthread_mutex_lock(&mu);
    struct dev *d = NULL;
    for (int i = 0; i < ndev && !d; i++)
        if (!devs[i].live && devs[i].map_len == map_len) d = &devs[i];
    if (!d && ndev < MAXDEV) {
        void *m = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            d = &devs[ndev++];
            d->base = (uintptr_t)m;
            d->map_len = map_len;
        }
    }
    if (d) {
        d->len = size;
        d->id = next_id++;
        d->live = 1;
        memset((void *)d->base, 0xdd, map_len); /* not zeroed: the device's old contents */
        *p = d->base;
    }
    pthread_mutex_unlock(&mu);
    return d ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    COUNT(cuMemFree_v2);
    NEED_CONTEXT();
    UNLESS_REFUSED();
    device_idle(); /* cuMemFree synchronises as cuMemFreeHost does */
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ndev; i++)
        if (devs[i].live && devs[i].base == p) {
            devs[i].live = 0;
            rc = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* --- pointer attributes -------------------------------------------------- */

/* One attribute of w (p's record) into data: 0, or 1 for an unknown attribute
 * or one the memory does not have (e.g. the host pointer of device memory). */
static CUresult attribute(void *data, int attr, CUdeviceptr p, const struct what *w) {
    int host = w->kind == ALLOC || w->kind == REGISTER, known = w->kind != NONE;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = w->kind == DEVICE ? CU_MEMORYTYPE_DEVICE
                            : host            ? CU_MEMORYTYPE_HOST
                                              : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = known ? p : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data = host ? (void *)(uintptr_t)p : NULL;
        return !known || host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = w->id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(bool *)data = false;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = w->start;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = w->size;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
    COUNT(cuPointerGetAttribute);
    NEED_INIT();
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    struct what w = what_of((const void *)(uintptr_t)p);
    if (w.kind == NONE) return CUDA_ERROR_INVALID_VALUE;
    char buf[sizeof(unsigned long long)];
    CUresult rc = attribute(buf, attr, p, &w); /* written only on success */
    if (rc) return rc;
    size_t n = attr == CU_POINTER_ATTRIBUTE_MEMORY_TYPE      ? sizeof(unsigned)
               : attr == CU_POINTER_ATTRIBUTE_IS_MANAGED     ? sizeof(bool)
               : attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL ? sizeof(int)
                                                             : sizeof(unsigned long long);
    memcpy(data, buf, n);
    return CUDA_SUCCESS;
}

/* Succeeds for any pointer: unknown memory reads as 0 / NULL. */
CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
    COUNT(cuPointerGetAttributes);
    NEED_INIT();
    if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
    struct what w = what_of((const void *)(uintptr_t)p);
    for (unsigned i = 0; i < n; i++) {
        if (!data[i]) return CUDA_ERROR_INVALID_VALUE;
        if (attribute(data[i], attrs[i], p, &w) && attrs[i] != CU_POINTER_ATTRIBUTE_HOST_POINTER)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* --- entry points -------------------------------------------------------- */

/* Each name's variants, by the CUDA version that introduced them: a caller
 * gets the newest one not newer than the version it was built for. */
static const struct proc {
    const char *name;
    int since;
    void *fn;
} procs[] = {
    {"cuInit", 2000, (void *)cuInit},
    {"cuDriverGetVersion", 2020, (void *)cuDriverGetVersion},
    {"cuDeviceGet", 2000, (void *)cuDeviceGet},
    {"cuDeviceGetCount", 2000, (void *)cuDeviceGetCount},
    {"cuDevicePrimaryCtxRetain", 7000, (void *)cuDevicePrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", 7000, (void *)cuDevicePrimaryCtxRelease},
    {"cuCtxSetCurrent", 4000, (void *)cuCtxSetCurrent},
    {"cuCtxGetCurrent", 4000, (void *)cuCtxGetCurrent},
    {"cuCtxGetDevice", 2000, (void *)cuCtxGetDevice},
    {"cuDeviceGetPCIBusId", 4010, (void *)cuDeviceGetPCIBusId},
    {"cuCtxSynchronize", 2000, (void *)cuCtxSynchronize},
    {"cuMemHostAlloc", 2020, (void *)cuMemHostAlloc},
    {"cuMemAllocHost", 2000, (void *)cuMemAllocHost},
    {"cuMemAllocHost", 3020, (void *)cuMemAllocHost_v2},
    {"cuMemFreeHost", 2000, (void *)cuMemFreeHost},
    {"cuMemHostRegister", 4000, (void *)cuMemHostRegister},
    {"cuMemHostRegister", 6050, (void *)cuMemHostRegister_v2},
    {"cuMemHostUnregister", 4000, (void *)cuMemHostUnregister},
    {"cuMemHostGetFlags", 2030, (void *)cuMemHostGetFlags},
    {"cuMemHostGetDevicePointer", 2020, (void *)cuMemHostGetDevicePointer},
    {"cuMemHostGetDevicePointer", 3020, (void *)cuMemHostGetDevicePointer_v2},
    {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2},
    {"cuMemFree", 3020, (void *)cuMemFree_v2},
    {"cuPointerGetAttribute", 4000, (void *)cuPointerGetAttribute},
    {"cuPointerGetAttributes", 7000, (void *)cuPointerGetAttributes},
    {"cuThreadExchangeStreamCaptureMode", 10010, (void *)cuThreadExchangeStreamCaptureMode},
    {"cuGetProcAddress", 11030, (void *)cuGetProcAddress},
    {"cuGetProcAddress", 12000, (void *)cuGetProcAddress_v2},
};

static CUresult proc_address(const char *symbol, void **pfn, int version, unsigned long long flags,
                             int *status) {
    if (!symbol || !pfn || flags > 2) return CUDA_ERROR_INVALID_VALUE;
    const struct proc *got = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        if (strcmp(procs[i].name, symbol)) continue;
        known = 1;
        if (procs[i].since <= version && (!got || procs[i].since > got->since)) got = &procs[i];
    }
    *pfn = got ? got->fn : NULL;
    if (status)
        *status = got     ? CU_GET_PROC_ADDRESS_SUCCESS
                  : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return got ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             unsigned long long flags, int *symbolStatus) {
    COUNT(cuGetProcAddress_v2);
    return proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          unsigned long long flags) {
    COUNT(cuGetProcAddress);
    return proc_address(symbol, pfn, cudaVersion, flags, NULL);
}
