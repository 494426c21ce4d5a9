/* Programs that reach the driver API, each way frameworks do, are served by
 * the manager (issue 15):
 *   linked       linked against libcuda.so.1 (calls through the PLT)
 *   dlsym        dlopen("libcuda.so.1", RTLD_LOCAL) and dlsym of each
 *                function on that handle (JAX/XLA, TensorFlow, KvikIO)
 *   procaddress  dlopen and dlsym of cuGetProcAddress_v2 only, every other
 *                function through it (static cudart: CuPy, cuda-python 13)
 * Each: 20 cycles of 64 MiB pinned allocations never reach the double's
 * cuMemHostAlloc, and registrations of the program's own memory still do.
 * The program is not linked against libcuda unless linked. */
#include "cuda_test.h"
#include "interposed.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(int *, int);
    CUresult (*DevicePrimaryCtxRetain)(void **, int);
    CUresult (*CtxSetCurrent)(void *);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemAllocHost)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemHostRegister)(void *, size_t, unsigned);
    CUresult (*MemHostUnregister)(void *);
    CUresult (*MemHostGetFlags)(unsigned *, void *);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
} cu;
static int (*count)(const char *);
static int (*kind)(const void *);

/* Linked: the driver's own symbols, through the PLT. */
CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuDevicePrimaryCtxRetain(void **, int);
CUresult cuCtxSetCurrent(void *);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemFreeHost(void *);
CUresult cuMemHostRegister_v2(void *, size_t, unsigned);
CUresult cuMemHostUnregister(void *);
CUresult cuMemHostGetFlags(unsigned *, void *);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *, unsigned);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
int fakecu_count(const char *);
int fakecu_kind(const void *);

/* dsp_trim on a thread with no context current: the driver API cannot
 * unregister there, so nothing is given back and nothing is lost (regression:
 * cuda_driver_trim_without_context, where the spans were kept out of use for
 * good). */
static void *trim_elsewhere(void *out) {
    *(size_t *)out = ((size_t(*)(void))shim("dsp_trim"))();
    return NULL;
}

static void linked(void) {
#ifdef LINKED
    cu.Init = cuInit, cu.DeviceGet = cuDeviceGet,
    cu.DevicePrimaryCtxRetain = cuDevicePrimaryCtxRetain;
    cu.CtxSetCurrent = cuCtxSetCurrent, cu.MemHostAlloc = cuMemHostAlloc;
    cu.MemAllocHost = cuMemAllocHost_v2, cu.MemFreeHost = cuMemFreeHost;
    cu.MemHostRegister = cuMemHostRegister_v2, cu.MemHostUnregister = cuMemHostUnregister;
    cu.MemHostGetFlags = cuMemHostGetFlags,
    cu.MemHostGetDevicePointer = cuMemHostGetDevicePointer_v2;
    cu.PointerGetAttribute = cuPointerGetAttribute;
    count = fakecu_count, kind = fakecu_kind;
#endif
}

static void *must(void *h, const char *name) {
    void *f = dlsym(h, name);
    CHECK(f, "dlsym(%s): %s", name, dlerror());
    return f;
}

static void *open_driver(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(h, "dlopen: %s", dlerror());
    CHECK(!dlsym(RTLD_DEFAULT, "fakecu_count"), "loaded RTLD_LOCAL: not in the global scope");
    count = (int (*)(const char *))must(h, "fakecu_count");
    kind = (int (*)(const void *))must(h, "fakecu_kind");
    return h;
}

/* The functions a framework takes from the driver: the name it looks up
 * with dlsym (as cuda.h expands it), and the base name cuGetProcAddress
 * takes. */
#define FN(field, exported, base)                                                                  \
    { (void **)&cu.field, exported, base }
static const struct {
    void **slot;
    const char *exported, *base;
} fns[] = {
    FN(Init, "cuInit", "cuInit"),
    FN(DeviceGet, "cuDeviceGet", "cuDeviceGet"),
    FN(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain"),
    FN(CtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent"),
    FN(MemHostAlloc, "cuMemHostAlloc", "cuMemHostAlloc"),
    FN(MemAllocHost, "cuMemAllocHost_v2", "cuMemAllocHost"),
    FN(MemFreeHost, "cuMemFreeHost", "cuMemFreeHost"),
    FN(MemHostRegister, "cuMemHostRegister_v2", "cuMemHostRegister"),
    FN(MemHostUnregister, "cuMemHostUnregister", "cuMemHostUnregister"),
    FN(MemHostGetFlags, "cuMemHostGetFlags", "cuMemHostGetFlags"),
    FN(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer"),
    FN(PointerGetAttribute, "cuPointerGetAttribute", "cuPointerGetAttribute"),
};
#define NFNS (sizeof fns / sizeof *fns)

static void by_dlsym(void) {
    void *h = open_driver();
    for (size_t i = 0; i < NFNS; i++) *fns[i].slot = must(h, fns[i].exported);
    /* The shim's hooks, not the library's own functions. */
    CHECK(cu.MemHostAlloc == shim("cuMemHostAlloc"), "dlsym on the handle gives the hook");
    CHECK(stat_of("dlsym_hooked") >= 8, "%lld", stat_of("dlsym_hooked"));
    /* Not served: the library's own. */
    CHECK(dlsym(h, "cuInit") != dlsym(RTLD_DEFAULT, "cuInit"));
    /* Every served driver name, from the table of interposed functions. */
#define DSP_HOOK_ENTRY(lib, name) #name,
    static const char *const served[] = {DSP_HOOKS_OF(driver)};
    for (size_t i = 0; i < sizeof served / sizeof *served; i++)
        CHECK(dlsym(h, served[i]) == shim(served[i]), "%s", served[i]);
}

static CUresult (*proc)(const char *, void **, int, unsigned long long, int *);
static void *get(const char *name, int version) {
    void *f = NULL;
    int status = -1;
    CHECK(proc(name, &f, version, 0, &status) == 0 && f && status == 0, "%s", name);
    return f;
}
static void by_proc_address(void) {
    void *h = open_driver();
    *(void **)&proc = must(h, "cuGetProcAddress_v2");
    CHECK((void *)proc == shim("cuGetProcAddress_v2"), "the hook answers the lookups");
    /* Static cudart asks the driver for cuGetProcAddress itself. */
    CHECK(get("cuGetProcAddress", 12000) == shim("cuGetProcAddress_v2"));
    CHECK(get("cuGetProcAddress", 11030) == shim("cuGetProcAddress"), "an 11.x caller: v1");
    for (size_t i = 0; i < NFNS; i++) *fns[i].slot = get(fns[i].base, 12000);
    /* Each version as the caller asked (HAMi-core issue 57). */
    CHECK((void *)cu.MemAllocHost == shim("cuMemAllocHost_v2"));
    CHECK(get("cuMemAllocHost", 3010) == shim("cuMemAllocHost"), "a pre-3.2 caller: 32-bit size");
    CHECK(get("cuMemHostRegister", 6000) == shim("cuMemHostRegister"));
    CHECK((void *)cu.MemHostRegister == shim("cuMemHostRegister_v2"));
    CHECK(get("cuMemHostGetDevicePointer", 3000) == shim("cuMemHostGetDevicePointer"));
    CHECK((void *)cu.Init == dlsym(h, "cuInit"), "what the shim does not serve: the driver's own");
    /* Not found stays not found, with the driver's status. */
    void *f = (void *)1;
    int status = -1;
    CHECK(proc("cuNoSuchFunction", &f, 12000, 0, &status) == 500 && !f && status == 1);
    CHECK(stat_of("cuda_proc_hooked") >= 8, "%lld", stat_of("cuda_proc_hooked"));
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "";
    if (!strcmp(how, "linked"))
        linked();
    else if (!strcmp(how, "dlsym"))
        by_dlsym();
    else if (!strcmp(how, "procaddress"))
        by_proc_address();
    CHECK(cu.MemHostAlloc, "usage: t_driver_clients linked|dlsym|procaddress (got '%s')", how);

    /* As a framework starts: the driver, the device, its primary context. */
    int dev = -1;
    void *ctx = NULL;
    CHECK(cu.Init(0) == 0 && cu.DeviceGet(&dev, 0) == 0);
    CHECK(cu.DevicePrimaryCtxRetain(&ctx, dev) == 0 && cu.CtxSetCurrent(ctx) == 0);

    const size_t n = 64u << 20;
    void *first = NULL;
    for (int i = 0; i < 20; i++) {
        void *p = NULL;
        CHECK((i & 1 ? cu.MemAllocHost(&p, n) : cu.MemHostAlloc(&p, n, 1 /* PORTABLE */)) == 0);
        if (!first) first = p;
        CHECK(is_pinned(p, n), "the manager's block");
        CHECK(kind(p) == 2, "registered with the driver by the shim: %d", kind(p));
        unsigned flags = 99;
        CHECK(cu.MemHostGetFlags(&flags, p) == 0 && flags == (i & 1 ? 0u : 1u), "%u", flags);
        unsigned type = 0;
        CHECK(cu.PointerGetAttribute(&type, 2 /* MEMORY_TYPE */, (uintptr_t)p) == 0 && type == 1,
              "host memory to the driver");
        ((char *)p)[n - 1] = (char)i;
        CHECK(cu.MemFreeHost(p) == 0);
    }
    CHECK(count("cuMemHostAlloc") == 0 && count("cuMemAllocHost_v2") == 0,
          "never the driver's allocation: %d %d", count("cuMemHostAlloc"),
          count("cuMemAllocHost_v2"));
    CHECK(count("cuMemFreeHost") == 0);
    CHECK(count("cuMemHostRegister_v2") == 1, "one registration, then the pool: %d",
          count("cuMemHostRegister_v2"));
    CHECK(count("cuCtxSynchronize") == 20, "each free waits, as the driver's: %d",
          count("cuCtxSynchronize"));
    CHECK(stat_of("cuda_driver_served") == 20 && stat_of("pool_hits") >= 19);
    CHECK(kind(first) == 2, "pooled, still registered");

    /* The program's own memory still goes to the driver. */
    size_t m = 1u << 20;
    void *own = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(own != MAP_FAILED);
    CHECK(cu.MemHostRegister(own, m, 0) == 0);
    CHECK(count("cuMemHostRegister_v2") == 2 && kind(own) == 2, "reached the driver");
    CHECK(is_pinned(own, m), "and every layer sees it pinned");
    CHECK(cu.MemHostRegister(own, m, 0) == 712, "the driver's own answer");
    CHECK(cu.MemHostUnregister(own) == 0 && kind(own) == 0);
    CHECK(cu.MemHostUnregister(own) == 713);
    CHECK(!is_pinned(own, m));

    /* The driver's codes where the driver would answer. */
    void *p = NULL;
    CHECK(cu.MemHostAlloc(&p, n, 0) == 0);
    CHECK(cu.MemFreeHost((char *)p + 4096) == 1, "an interior pointer: the driver's 1");
    CHECK(cu.MemHostUnregister(p) == 713, "never registered by the program");
    CHECK(cu.MemHostRegister((char *)p + 8192, 4096, 0) == 712, "inside the block: pinned already");
    CHECK(cu.MemHostUnregister((char *)p + 8192) == 713);
    CUdeviceptr d = 0;
    CHECK(cu.MemHostGetDevicePointer(&d, p, 0) == 0 && d == (uintptr_t)p);
    CHECK(cu.MemFreeHost(p) == 0);
    CHECK(cu.MemFreeHost(p) == 1, "a double free: the driver's 1");

    /* Trimming needs a context: elsewhere nothing happens, here everything. */
    size_t elsewhere = 1;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, trim_elsewhere, &elsewhere) == 0 && pthread_join(t, NULL) == 0);
    CHECK(elsewhere == 0 && kind(first) == 2, "no context: the pool stays, registered");
    CHECK(stat_of("cuda_unregistrations") == 0);
    size_t trimmed = ((size_t(*)(void))shim("dsp_trim"))();
    CHECK(trimmed >= n && kind(first) == 0, "with the context: given back (%zu)", trimmed);
    CHECK(stat_of("pinned_bytes") == 0, "nothing kept out of use: %lld", stat_of("pinned_bytes"));
    PASS();
}
