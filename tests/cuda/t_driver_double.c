/* The libcuda double's selftest, run WITHOUT the shim (fake_cuda.c): the
 * driver behaviours it models hold, so the shim's tests against it mean
 * something:
 * - before cuInit only cuGetProcAddress(_v2) and cuDriverGetVersion answer
 *   (3 otherwise); a thread without a current context gets 201 from the
 *   memory calls;
 * - host allocation, registration and their codes (1, 712, 713), cuMemFreeHost
 *   of an interior pointer (1), the legacy forms' 32-bit values;
 * - pointer attributes of host, device and unknown memory;
 * - cuGetProcAddress_v2 gives the variant the caller's version asks for, the
 *   same function dlsym gives; unknown names and versions too old are 500;
 * - the libcudart double reaches the driver through it: cudaHostAlloc is one
 *   cudaHostAlloc for the runtime and one cuMemHostAlloc for the driver; the
 *   driver then applies the runtime's capture rules.
 * Exit 0 pass, 1 fail. */
#include "cuda_test.h"
#include "fake_cuda.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

int fakecuda_foll_pinned(const void *p);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaStreamCreate(void **s);
cudaError_t cudaStreamBeginCapture(void *s, int mode);
cudaError_t cudaStreamEndCapture(void *s, void **graph);
cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGraphDestroy(void *g);

#define PG ((size_t)4096)

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, unsigned long long, int *);

static void *driver_sym(const char *name) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h, "libcuda.so.1 is loaded");
    void *f = dlsym(h, name);
    dlclose(h);
    return f;
}

static void before_init(void) {
    void *p = NULL;
    CUdevice dev;
    int v = 0;
    unsigned type = 7;
    int at = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data = &type;
    CHECK(cuMemHostAlloc(&p, PG, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuDeviceGet(&dev, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuPointerGetAttributes(1, &at, &data, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuMemHostGetFlags(&type, p) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuDriverGetVersion(&v) == CUDA_SUCCESS && v == 13000);
    void *f = NULL;
    int st = -1;
    CHECK(cuGetProcAddress_v2("cuInit", &f, 13000, 0, &st) == CUDA_SUCCESS && st == 0 &&
              f == (void *)cuInit,
          "cuGetProcAddress_v2 before cuInit");
    CHECK(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuInit(0) == CUDA_SUCCESS);
}

static void *no_context_thread(void *arg) {
    (void)arg;
    void *p = NULL;
    CUdeviceptr d = 0;
    unsigned f;
    CUcontext c = (CUcontext)1;
    CHECK(cuCtxGetCurrent(&c) == CUDA_SUCCESS && c == NULL, "a new thread has no context");
    CHECK(cuMemHostAlloc(&p, PG, 0) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuMemAllocHost_v2(&p, PG) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuMemHostRegister_v2(&f, sizeof f, 0) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuMemAlloc_v2(&d, PG) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuMemFreeHost(&f) == CUDA_ERROR_INVALID_CONTEXT);
    /* No context needed: */
    CHECK(cuMemHostGetFlags(&f, &f) == CUDA_ERROR_INVALID_VALUE);
    unsigned type = 7;
    int at = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data = &type;
    CHECK(cuPointerGetAttributes(1, &at, &data, (CUdeviceptr)(uintptr_t)&f) == CUDA_SUCCESS &&
          type == 0);
    return NULL;
}

static void contexts(void) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, no_context_thread, NULL) == 0 && pthread_join(t, NULL) == 0);
    CUdevice dev = -1;
    int n = 0;
    CUcontext ctx = NULL, cur = NULL;
    CHECK(cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 1);
    CHECK(cuDeviceGet(&dev, 1) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGet(&dev, 0) == CUDA_SUCCESS && dev == 0);
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && ctx);
    CHECK(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx);
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS, "no runtime device yet: idle");
    int m = 2;
    CHECK(cuThreadExchangeStreamCaptureMode(&m) == CUDA_SUCCESS && m == 0);
    CHECK(cuThreadExchangeStreamCaptureMode(&m) == CUDA_SUCCESS && m == 2);
}

static void host_memory(void) {
    void *p = NULL;
    int allocs = fakecu_count("cuMemHostAlloc");
    CHECK(cuMemHostAlloc(&p, PG, 8) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemHostAlloc(NULL, PG, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemHostAlloc(&p, 0, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemHostAlloc(&p, 3 * PG + 1, 3) == CUDA_SUCCESS && p);
    CHECK(fakecu_count("cuMemHostAlloc") == allocs + 4, "counted, failures too");
    CHECK(fakecu_kind(p) == 1 && fakecu_kind((char *)p + 3 * PG) == 1);
    CHECK(fakecu_host_pinned(p, 4 * PG) && !fakecu_host_pinned(p, 4 * PG + 1));
    unsigned fl = 0;
    CHECK(cuMemHostGetFlags(&fl, p) == CUDA_SUCCESS && fl == 3);
    CHECK(cuMemHostGetFlags(&fl, &fl) == CUDA_ERROR_INVALID_VALUE, "only host-alloc memory");
    /* Attributes of pinned host memory. */
    unsigned type = 0;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                (CUdeviceptr)(uintptr_t)p + 5) == CUDA_SUCCESS &&
          type == CU_MEMORYTYPE_HOST);
    void *hp = NULL;
    CHECK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                (CUdeviceptr)(uintptr_t)p + 5) == CUDA_SUCCESS &&
          hp == (char *)p + 5);
    unsigned char managed[8];
    memset(managed, 0xaa, sizeof managed);
    CHECK(cuPointerGetAttribute(managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS &&
              managed[0] == 0 && managed[1] == 0xaa,
          "IS_MANAGED is one byte");
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                (CUdeviceptr)(uintptr_t)&type) == CUDA_ERROR_INVALID_VALUE,
          "cuPointerGetAttribute of unknown memory is 1");
    /* Device pointers: v2 writes 8 bytes, the legacy v1 4. */
    CUdeviceptr d = 0;
    CHECK(cuMemHostGetDevicePointer_v2(&d, p, 0) == CUDA_SUCCESS && d == (uintptr_t)p);
    CHECK(cuMemHostGetDevicePointer_v2(&d, p, 1) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemHostGetDevicePointer_v2(&d, &d, 0) == CUDA_ERROR_INVALID_VALUE);
    unsigned char b[8];
    memset(b, 0xaa, sizeof b);
    CHECK(cuMemHostGetDevicePointer((unsigned int *)(void *)b, p, 0) == CUDA_SUCCESS);
    unsigned int low;
    memcpy(&low, b, 4);
    CHECK(low == (unsigned int)(uintptr_t)p && b[4] == 0xaa && b[7] == 0xaa,
          "legacy cuMemHostGetDevicePointer writes 4 bytes");
    /* Freeing: the exact base only. */
    int frees = fakecu_count("cuMemFreeHost");
    CHECK(cuMemFreeHost((char *)p + 1) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFreeHost((char *)p + PG) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFreeHost(p) == CUDA_SUCCESS && fakecu_kind(p) == 0);
    CHECK(cuMemFreeHost(p) == CUDA_ERROR_INVALID_VALUE);
    CHECK(fakecu_count("cuMemFreeHost") == frees + 4);
    /* cuMemAllocHost: v2 (size_t) and the legacy v1 (32-bit size). */
    int v1 = fakecu_count("cuMemAllocHost"), v2 = fakecu_count("cuMemAllocHost_v2");
    void *q = NULL, *r = NULL;
    CHECK(cuMemAllocHost(&q, (unsigned int)PG) == CUDA_SUCCESS && fakecu_kind(q) == 1);
    CHECK(cuMemAllocHost_v2(&r, PG) == CUDA_SUCCESS && fakecu_kind(r) == 1);
    CHECK(cuMemHostGetFlags(&fl, q) == CUDA_SUCCESS && fl == 0);
    CHECK(fakecu_count("cuMemAllocHost") == v1 + 1 && fakecu_count("cuMemAllocHost_v2") == v2 + 1);
    CHECK(cuMemFreeHost(q) == CUDA_SUCCESS && cuMemFreeHost(r) == CUDA_SUCCESS);
}

static void registration(void) {
    char *m = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    int v1 = fakecu_count("cuMemHostRegister"), v2 = fakecu_count("cuMemHostRegister_v2");
    CHECK(cuMemHostRegister_v2(m, 4 * PG, 16) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemHostRegister_v2(m + 100, 2 * PG, 0) == CUDA_SUCCESS);
    CHECK(fakecu_kind(m) == 2 && fakecu_kind(m + 2 * PG) == 2 && fakecu_kind(m + 3 * PG) == 0,
          "registered pages, rounded out");
    CHECK(cuMemHostRegister_v2(m + 2 * PG, PG, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CHECK(cuMemHostRegister(m, PG, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CHECK(cuMemHostRegister(m + 4 * PG, PG, 0) == CUDA_SUCCESS, "legacy form");
    CHECK(fakecu_count("cuMemHostRegister") == v1 + 2 &&
          fakecu_count("cuMemHostRegister_v2") == v2 + 3);
    CHECK(cuMemHostGetFlags(&(unsigned){0}, m + 100) == CUDA_ERROR_INVALID_VALUE,
          "cuMemHostGetFlags: not for registered memory");
    CUdeviceptr start = 0;
    size_t size = 0;
    int at[2] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[2] = {&start, &size};
    CHECK(cuPointerGetAttributes(2, at, data, (CUdeviceptr)(uintptr_t)(m + PG)) == CUDA_SUCCESS &&
          start == (uintptr_t)(m + 100) && size == 2 * PG);
    CHECK(cuMemHostUnregister(m) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "not the pointer given");
    CHECK(cuMemHostUnregister(m + 100) == CUDA_SUCCESS && fakecu_kind(m) == 0);
    CHECK(cuMemHostUnregister(m + 100) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK(cuMemHostUnregister(m + 4 * PG) == CUDA_SUCCESS);
    munmap(m, 8 * PG);
}

static void device_memory(void) {
    CUdeviceptr a = 0, b = 0;
    CHECK(cuMemAlloc_v2(&a, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAlloc_v2(&a, 3 * PG) == CUDA_SUCCESS && fakecu_kind((void *)(uintptr_t)a) == 3);
    unsigned type = 0;
    int ord = -1;
    unsigned long long id1 = 0, id2 = 0;
    CUdeviceptr start = 0, dp = 0;
    size_t size = 0;
    void *hp = (void *)1;
    int at[7] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                 CU_POINTER_ATTRIBUTE_BUFFER_ID,   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                 CU_POINTER_ATTRIBUTE_RANGE_SIZE,  CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                 CU_POINTER_ATTRIBUTE_HOST_POINTER};
    void *data[7] = {&type, &ord, &id1, &start, &size, &dp, &hp};
    CHECK(cuPointerGetAttributes(7, at, data, a + 10) == CUDA_SUCCESS);
    CHECK(type == CU_MEMORYTYPE_DEVICE && ord == 0 && id1 && start == a && size == 3 * PG &&
          dp == a + 10 && hp == NULL);
    CHECK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, a) ==
              CUDA_ERROR_INVALID_VALUE,
          "device memory has no host pointer");
    CHECK(cuMemFree_v2(a + 1) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree_v2(a) == CUDA_SUCCESS && fakecu_kind((void *)(uintptr_t)a) == 0);
    CHECK(cuMemAlloc_v2(&b, 3 * PG) == CUDA_SUCCESS && b == a, "a freed range of the size reused");
    data[2] = &id2;
    CHECK(cuPointerGetAttributes(7, at, data, b) == CUDA_SUCCESS && id2 && id2 != id1,
          "a new buffer id");
    /* Unknown memory: success, zeros. */
    type = 9, id1 = 9, start = 9, size = 9, dp = 9, hp = (void *)9;
    CHECK(cuPointerGetAttributes(7, at, data, (CUdeviceptr)(uintptr_t)&type) == CUDA_SUCCESS);
    CHECK(type == 0 && id2 == 0 && start == 0 && size == 0 && dp == 0 && hp == NULL);
    CHECK(cuMemFree_v2(b) == CUDA_SUCCESS);
}

static void proc_addresses(void) {
    gpa_v2_fn gpa = (gpa_v2_fn)driver_sym("cuGetProcAddress_v2");
    CHECK(gpa == cuGetProcAddress_v2);
    void *f = NULL;
    int st = -1;
    CHECK(gpa("cuMemAllocHost", &f, 3010, 0, &st) == CUDA_SUCCESS && st == 0);
    CHECK(f == driver_sym("cuMemAllocHost") && f == (void *)cuMemAllocHost, "3010: v1");
    CHECK(gpa("cuMemAllocHost", &f, 13000, 0, &st) == CUDA_SUCCESS && st == 0);
    CHECK(f == driver_sym("cuMemAllocHost_v2") && f == (void *)cuMemAllocHost_v2, "13000: v2");
    CHECK(gpa("cuMemHostGetDevicePointer", &f, 3000, 0, &st) == 0 &&
          f == (void *)cuMemHostGetDevicePointer);
    CHECK(gpa("cuMemHostGetDevicePointer", &f, 12000, 0, &st) == 0 &&
          f == (void *)cuMemHostGetDevicePointer_v2);
    CHECK(gpa("cuMemHostRegister", &f, 6000, 0, &st) == 0 && f == (void *)cuMemHostRegister);
    CHECK(gpa("cuMemHostRegister", &f, 6050, 0, &st) == 0 && f == (void *)cuMemHostRegister_v2);
    CHECK(gpa("cuMemAlloc", &f, 13000, 0, &st) == 0 && f == (void *)cuMemAlloc_v2);
    CHECK(gpa("cuMemFree", &f, 12000, 1, &st) == 0 && f == (void *)cuMemFree_v2);
    CHECK(gpa("cuMemHostAlloc", &f, 13000, 2, &st) == 0 && f == driver_sym("cuMemHostAlloc"));
    CHECK(gpa("cuGetProcAddress", &f, 12000, 0, &st) == 0 && f == (void *)cuGetProcAddress_v2);
    CHECK(gpa("cuGetProcAddress", &f, 11030, 0, &st) == 0 && f == (void *)cuGetProcAddress);
    f = (void *)1;
    CHECK(gpa("cuGetProcAddress", &f, 11020, 0, &st) == CUDA_ERROR_NOT_FOUND &&
              st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && f == NULL,
          "older than the symbol");
    f = (void *)1;
    CHECK(gpa("cuNoSuchFunction", &f, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND &&
              st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && f == NULL,
          "unknown name");
    CHECK(gpa("cuMemAllocHost_v2", &f, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND &&
              st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
          "base names only");
    CHECK(gpa("fakecu_count", &f, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND, "test controls not");
    CHECK(gpa(NULL, &f, 13000, 0, &st) == CUDA_ERROR_INVALID_VALUE);
    CHECK(gpa("cuInit", NULL, 13000, 0, &st) == CUDA_ERROR_INVALID_VALUE);
    CHECK(gpa("cuInit", &f, 13000, 3, &st) == CUDA_ERROR_INVALID_VALUE);
    CHECK(gpa("cuInit", &f, 13000, 0, NULL) == CUDA_SUCCESS, "status optional");
    /* The legacy 4-argument form (CUDA 11.3). */
    int legacy = fakecu_count("cuGetProcAddress");
    CHECK(cuGetProcAddress("cuMemHostRegister", &f, 6000, 0) == CUDA_SUCCESS &&
          f == (void *)cuMemHostRegister);
    CHECK(cuGetProcAddress("cuMemAllocHost", &f, 11030, 0) == CUDA_SUCCESS &&
          f == (void *)cuMemAllocHost_v2);
    CHECK(cuGetProcAddress("cuNoSuchFunction", &f, 11030, 0) == CUDA_ERROR_NOT_FOUND && !f);
    CHECK(fakecu_count("cuGetProcAddress") == legacy + 3);
    CHECK(fakecu_count("cuNoSuchFunction") == -1);
}

static void *runtime_thread(void *arg) {
    (void)arg;
    void *p = NULL;
    /* The runtime makes the primary context current in this thread itself. */
    CHECK(cudaHostAlloc(&p, PG, 0) == cudaSuccess && fakecu_kind(p) == 1);
    CHECK(cudaFreeHost(p) == cudaSuccess);
    return NULL;
}

static void runtime_on_driver(void) {
    int gpa = fakecu_count("cuGetProcAddress_v2");
    int rt = fakecuda_count("cudaHostAlloc"), drv = fakecu_count("cuMemHostAlloc");
    void *p = NULL;
    CHECK(cudaHostAlloc(&p, 2 * PG, 1) == cudaSuccess);
    CHECK(fakecuda_count("cudaHostAlloc") == rt + 1 && fakecu_count("cuMemHostAlloc") == drv + 1,
          "cudaHostAlloc reaches cuMemHostAlloc");
    CHECK(fakecu_count("cuGetProcAddress_v2") > gpa, "the runtime's functions came from it");
    CHECK(fakecu_kind(p) == 1 && fakecuda_kind(p) == 1);
    CHECK(fakecuda_foll_pinned(p) == fakecu_foll_pinned(p));
    unsigned fl = 0;
    CHECK(cudaHostGetFlags(&fl, p) == cudaSuccess && fl == 1);
    struct attrs24 a;
    CHECK(cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == 1 && a.device == 0 &&
          a.devicePointer == p && a.hostPointer == p);
    CHECK(cudaPointerGetAttributes(&a, &a) == cudaSuccess && a.type == 0 && a.device == -2);
    void *z = (void *)1;
    drv = fakecu_count("cuMemHostAlloc");
    CHECK(cudaHostAlloc(&z, 0, 0) == cudaSuccess && z == NULL &&
              fakecu_count("cuMemHostAlloc") == drv,
          "size 0: no driver call");
    int frees = fakecu_count("cuMemFreeHost");
    CHECK(cudaFreeHost((char *)p + 1) == cudaErrorInvalidValue && cudaGetLastError() == 1);
    CHECK(cudaFreeHost(NULL) == cudaSuccess && fakecu_count("cuMemFreeHost") == frees + 1);
    CHECK(cudaFreeHost(p) == cudaSuccess && fakecu_count("cuMemFreeHost") == frees + 2);
    /* Registration goes to cuMemHostRegister_v2, the codes unchanged. */
    char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int v2 = fakecu_count("cuMemHostRegister_v2"), v1 = fakecu_count("cuMemHostRegister");
    CHECK(cudaHostRegister(m, 2 * PG, 0) == cudaSuccess && fakecu_kind(m) == 2);
    CHECK(cudaHostRegister(m + PG, PG, 0) == cudaErrorHostMemoryAlreadyRegistered);
    CHECK(fakecu_count("cuMemHostRegister_v2") == v2 + 2 &&
          fakecu_count("cuMemHostRegister") == v1);
    void *dp = NULL;
    CHECK(cudaHostGetDevicePointer(&dp, m, 0) == cudaSuccess && dp == m);
    CHECK(cudaHostUnregister(m + 1) == cudaErrorHostMemoryNotRegistered);
    CHECK(cudaHostUnregister(m) == cudaSuccess && fakecu_kind(m) == 0);
    munmap(m, 4 * PG);
    /* Device memory. */
    int da = fakecu_count("cuMemAlloc_v2");
    void *d = NULL;
    CHECK(cudaMalloc(&d, 5000) == cudaSuccess && fakecu_kind(d) == 3 &&
          fakecu_count("cuMemAlloc_v2") == da + 1);
    CHECK(cudaPointerGetAttributes(&a, d) == cudaSuccess && a.type == 2 && a.hostPointer == NULL);
    CHECK(cudaFree(d) == cudaSuccess && fakecu_kind(d) == 0);
    int syncs = fakecu_count("cuCtxSynchronize");
    CHECK(cudaDeviceSynchronize() == cudaSuccess && fakecu_count("cuCtxSynchronize") == syncs + 1);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, runtime_thread, NULL) == 0 && pthread_join(t, NULL) == 0);
    /* The runtime handed the driver its device: capture rules apply to
     * driver calls, checked once (one refusal, the capture invalidated). */
    void *s = NULL, *g = NULL;
    CHECK(cudaStreamCreate(&s) == cudaSuccess);
    CHECK(cudaStreamBeginCapture(s, 0) == cudaSuccess);
    void *q = NULL;
    CHECK(cuMemHostAlloc(&q, PG, 0) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cudaStreamEndCapture(s, &g) == 901 && g == NULL);
    cudaGetLastError();
    CHECK(cudaStreamBeginCapture(s, 0) == cudaSuccess);
    CHECK(cudaHostAlloc(&q, PG, 0) == 900 && cudaGetLastError() == 900);
    CHECK(cudaStreamEndCapture(s, &g) == 901);
    cudaGetLastError();
    CHECK(cudaStreamBeginCapture(s, 0) == cudaSuccess);
    int mode = 2;
    CHECK(cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS && mode == 0,
          "the driver's mode is the runtime's");
    CHECK(cuMemHostAlloc(&q, PG, 0) == CUDA_SUCCESS, "relaxed");
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess && mode == 2);
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess && g);
    CHECK(cudaGraphDestroy(g) == cudaSuccess);
    CHECK(cuMemFreeHost(q) == CUDA_SUCCESS);
}

int main(void) {
    before_init();
    contexts();
    host_memory();
    registration();
    device_memory();
    proc_addresses();
    runtime_on_driver();
    PASS();
}
