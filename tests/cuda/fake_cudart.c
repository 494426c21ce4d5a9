/* A test double of the CUDA runtime (built as libcudart.so.13, its symbols
 * under the libcudart.so.13 version node as the real library's are), for
 * machines without a GPU. It keeps its own page-granular record of pinned
 * memory and enforces the documented semantics the shim must preserve:
 * - cudaHostRegister fails with 712 when any page is pinned already;
 * - cudaHostUnregister takes the exact registered pointer, else 713;
 * - cudaFreeHost takes the exact base of cudaHostAlloc memory, else 1;
 * - cudaHostGetFlags answers only for cudaHostAlloc memory;
 * - cudaPointerGetAttributes reports pinned memory as host memory (type 1),
 *   anything else as unregistered (type 0), writing 24 bytes;
 * - a failed call sets the thread's last error (cudaGetLastError clears it).
 * fakecuda_count() tells the tests which calls reached it.
 * fakecuda_call_back_on_register(q) arms a driver that calls back: the next
 * successful cudaHostRegister, before it returns, asks
 * cudaPointerGetAttributes(q) on another thread and joins it (through the
 * PLT, so a preloaded shim's hook answers): a shim holding a lock of its own
 * across the call deadlocks there.
 * Memory is pinned as the driver pins it (fake_pin.c: FOLL_PIN, not
 * VM_LOCKED), and cudaHostAlloc memory is what the driver maps
 * (kernel-open/nvidia/nv-mmap.c: VM_SHARED, to avoid copy-on-write, and
 * VM_DONTDUMP): shared anonymous memory left out of core dumps, populated and
 * pinned, so a forked child shares it and fork copies nothing; registered
 * private memory is copied into a child at fork (Linux 5.9+). Pinning costs
 * what it costs for real, so benchmarks against the double compare like with
 * like. fakecuda_foll_pinned(p) says whether p's pages were really pinned.
 * As the driver does: cudaFreeHost waits until the device is idle; allocation,
 * registration and cudaFreeHost fail with 900 during a global-mode capture
 * (fake_device.c: streams, copies, capture). cudaMalloc'd "device" memory is
 * host memory that cudaPointerGetAttributes reports as device memory (type 2). */
#include "fake_cudart.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE   4096ul
#define MAXREC 65536

enum { NONE = 0, ALLOC = 1, REGISTER = 2, DEVICE = 3 };

struct rec {
    uintptr_t lo, hi; /* pages */
    void *ptr;        /* exact pointer given or returned */
    size_t len;       /* mapping length, for ALLOC */
    int pin;          /* fk_pin's handle, or -1 */
    unsigned flags;
    int kind;
};

static struct rec recs[MAXREC];
static int nrec;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
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
                                       "cudaDeviceSynchronize"};
static int counts[C_N];

static int ret(int e) {
    if (e) last_error = e;
    return e;
}

int fk_ret(int e) {
    return ret(e);
}

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

/* A copy of the record holding p (kind NONE when there is none). */
static struct rec record_of(const void *p) {
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p), c = r ? *r : (struct rec){.kind = NONE, .pin = -1};
    pthread_mutex_unlock(&mu);
    return c;
}

static void drop(struct rec *r) {
    *r = recs[--nrec];
}

int fk_host_pinned(const void *p, size_t n) {
    struct rec r = record_of(p);
    return (r.kind == ALLOC || r.kind == REGISTER) && (uintptr_t)p + n <= r.hi;
}

int fk_is_device(const void *p) {
    return record_of(p).kind == DEVICE;
}

int fakecuda_count(const char *name) {
    for (int i = 0; i < C_N; i++)
        if (!strcmp(name, cname[i])) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
    return -1;
}

/* 1 when p's pages were pinned with FOLL_PIN (fake_pin.c), 0 when the
 * double could only mlock them or p is not pinned memory. */
int fakecuda_foll_pinned(const void *p) {
    struct rec r = record_of(p);
    return r.kind != NONE && r.pin >= 0;
}

/* 0 unknown, 1 cudaHostAlloc memory, 2 registered, 3 cudaMalloc'd. */
int fakecuda_kind(const void *p) {
    return record_of(p).kind;
}

static void count(int c) {
    __atomic_fetch_add(&counts[c], 1, __ATOMIC_RELAXED);
}

static int host_alloc(void **p, size_t size, unsigned flags) {
    if (!p || flags > 7) return ret(1);
    int refused = fk_capture_refuses();
    if (refused) return ret(refused);
    if (!size) {
        *p = NULL;
        return 0;
    }
    size_t len = ceil_page(size);
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return ret(2);
    madvise(m, len, MADV_DONTDUMP);
    madvise(m, len, 23 /* MADV_POPULATE_WRITE */);
    int pin = fk_pin(m, len, 1);
    pthread_mutex_lock(&mu);
    if (nrec == MAXREC) {
        pthread_mutex_unlock(&mu);
        fk_unpin(pin);
        munmap(m, len);
        return ret(2);
    }
    recs[nrec++] = (struct rec){(uintptr_t)m, (uintptr_t)m + len, m, len, pin, flags, ALLOC};
    pthread_mutex_unlock(&mu);
    *p = m;
    return 0;
}

int cudaHostAlloc(void **p, size_t size, unsigned flags) {
    count(C_HOSTALLOC);
    return host_alloc(p, size, flags);
}

int cudaMallocHost(void **p, size_t size) {
    count(C_MALLOCHOST);
    return host_alloc(p, size, 0);
}

/* Frees memory the double mapped (cudaHostAlloc, cudaMalloc): p must be the
 * exact base of a record of that kind, else 1 (cudaErrorInvalidValue). */
static int unmap_exact(void *p, int kind) {
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p);
    if (!r || r->kind != kind || r->ptr != p) {
        pthread_mutex_unlock(&mu);
        return ret(1);
    }
    size_t len = r->len;
    int pin = r->pin;
    drop(r);
    pthread_mutex_unlock(&mu);
    fk_unpin(pin);
    munmap(p, len);
    return 0;
}

int cudaFreeHost(void *p) {
    count(C_FREEHOST);
    if (!p) return 0;
    int refused = fk_capture_refuses();
    if (refused) return ret(refused);
    fk_device_idle(); /* the driver's cudaFreeHost synchronises the device */
    return unmap_exact(p, ALLOC);
}

static const void *call_back_on;
static int called_back;

void fakecuda_call_back_on_register(const void *q) {
    __atomic_store_n(&call_back_on, q, __ATOMIC_RELEASE);
}
int fakecuda_called_back(void) {
    return __atomic_load_n(&called_back, __ATOMIC_ACQUIRE);
}

int cudaPointerGetAttributes(void *attr, const void *p);
static void *call_back(void *q) {
    struct {
        int type, device;
        void *devicePointer, *hostPointer;
    } a;
    if (cudaPointerGetAttributes(&a, q) == 0) __atomic_fetch_add(&called_back, 1, __ATOMIC_RELEASE);
    return NULL;
}

int cudaHostRegister(void *p, size_t size, unsigned flags) {
    count(C_REGISTER);
    if (!p || !size || flags > 15) return ret(1);
    int refused = fk_capture_refuses();
    if (refused) return ret(refused);
    uintptr_t lo = floor_page((uintptr_t)p), hi = ceil_page((uintptr_t)p + size);
    pthread_mutex_lock(&mu);
    int rc = 0;
    if (overlaps(lo, hi))
        rc = 712;
    else if (nrec == MAXREC)
        rc = 2;
    else
        recs[nrec++] = (struct rec){lo, hi, p, 0, -1, flags, REGISTER};
    pthread_mutex_unlock(&mu);
    if (!rc) {
        madvise((void *)lo, hi - lo, 23 /* MADV_POPULATE_WRITE: pinning faults pages in */);
        int pin = fk_pin((void *)lo, hi - lo, 0);
        pthread_mutex_lock(&mu);
        struct rec *r = containing((void *)lo);
        if (r && r->kind == REGISTER && r->ptr == p && r->pin < 0) r->pin = pin, pin = -1;
        pthread_mutex_unlock(&mu);
        fk_unpin(pin); /* unregistered meanwhile */
    }
    const void *q = rc ? NULL : __atomic_exchange_n(&call_back_on, NULL, __ATOMIC_ACQ_REL);
    pthread_t t;
    if (q && pthread_create(&t, NULL, call_back, (void *)q) == 0) pthread_join(t, NULL);
    return ret(rc);
}

int cudaHostUnregister(void *p) {
    count(C_UNREGISTER);
    int refused = fk_capture_refuses();
    if (refused) return ret(refused);
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p);
    int rc = 713;
    int pin = -1;
    if (r && r->kind == REGISTER && r->ptr == p) {
        pin = r->pin;
        drop(r);
        rc = 0;
    }
    pthread_mutex_unlock(&mu);
    fk_unpin(pin);
    return ret(rc);
}

int cudaHostGetFlags(unsigned *flags, void *p) {
    count(C_GETFLAGS);
    if (!flags) return ret(1);
    pthread_mutex_lock(&mu);
    struct rec *r = containing(p);
    int rc = 1;
    if (r && r->kind == ALLOC) {
        *flags = r->flags;
        rc = 0;
    }
    pthread_mutex_unlock(&mu);
    return ret(rc);
}

int cudaHostGetDevicePointer(void **dev, void *p, unsigned flags) {
    count(C_DEVPTR);
    if (!dev || flags) return ret(1);
    int kind = record_of(p).kind;
    if (kind != ALLOC && kind != REGISTER) return ret(1);
    *dev = p; /* unified addressing */
    return 0;
}

struct attrs24 {
    int type, device;
    void *devicePointer, *hostPointer;
};

int cudaPointerGetAttributes(void *attr, const void *p) {
    count(C_ATTR);
    if (!attr) return ret(1);
    int kind = record_of(p).kind; /* a copy: the record may go once unlocked */
    struct attrs24 a = {0, -2, NULL, NULL};
    if (kind == DEVICE)
        a = (struct attrs24){2, 0, (void *)p, NULL};
    else if (kind != NONE)
        a = (struct attrs24){1, 0, (void *)p, (void *)p};
    memcpy(attr, &a, sizeof a);
    return 0;
}

/* FAKECUDA_SYNC_FAIL=1: the device reports an error (999, cudaErrorUnknown). */
int cudaDeviceSynchronize(void) {
    count(C_SYNC);
    int refused = fk_capture_refuses();
    if (refused) return ret(refused);
    fk_device_idle();
    const char *f = getenv("FAKECUDA_SYNC_FAIL");
    return ret(f && *f == '1' ? 999 : 0);
}

/* Device memory: page-granular host memory the records call device memory. */
int cudaMalloc(void **p, size_t size) {
    if (!p) return ret(1);
    int refused = fk_capture_refuses();
    if (refused) return ret(refused);
    size_t len = ceil_page(size ? size : 1);
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return ret(2);
    pthread_mutex_lock(&mu);
    if (nrec == MAXREC) {
        pthread_mutex_unlock(&mu);
        munmap(m, len);
        return ret(2);
    }
    recs[nrec++] = (struct rec){(uintptr_t)m, (uintptr_t)m + len, m, len, -1, 0, DEVICE};
    pthread_mutex_unlock(&mu);
    *p = m;
    return 0;
}

/* cudaFree(NULL) is how programs create the context: 0. */
int cudaFree(void *p) {
    if (!p) return 0;
    int refused = fk_capture_refuses();
    if (refused) return ret(refused);
    fk_device_idle();
    return unmap_exact(p, DEVICE);
}

int cudaGetDeviceCount(int *n) {
    if (!n) return ret(1);
    *n = 1;
    return 0;
}

int cudaSetDevice(int d) {
    return d == 0 ? 0 : ret(101 /* cudaErrorInvalidDevice */);
}

int cudaGetDevice(int *d) {
    if (!d) return ret(1);
    *d = 0;
    return 0;
}

int cudaRuntimeGetVersion(int *v) {
    if (!v) return ret(1);
    *v = 13000;
    return 0;
}

int cudaDriverGetVersion(int *v) {
    return cudaRuntimeGetVersion(v);
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
