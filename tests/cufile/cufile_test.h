/* For the cuFile test programs: each runs under LD_PRELOAD=libdspreload.so,
 * linked against the test doubles libcufile.so.0 and libcuda.so.1, and exits 0
 * (pass) or 1. CHECK, shim(), stat_of() and is_pinned() come from the CUDA
 * tests. */
#ifndef DSP_CUFILE_TEST_H
#define DSP_CUFILE_TEST_H

#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"
#include "cuda_test.h"
#include "fake_cuda.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1u << 20)

int fakecufile_count(const char *name);
long long fakecufile_staged(void);
long long fakecufile_direct(void);
int fakecufile_close_failures(void);
int fakecufile_register_failures(void);
size_t fakecufile_registered(const void *base);
int fakecufile_nregistered(void);
void fakecufile_call_back(int on);
int fakecufile_called_back(void);

/* The byte at offset i of a test file (seed s): no period a misplaced copy
 * could hide in. */
static inline unsigned char pat(size_t i, unsigned s) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ s;
    return (unsigned char)(x >> 56);
}

/* A file of n bytes of pattern s in dir (unlinked at once; the fd keeps it). */
static inline int make_file(const char *dir, size_t n, unsigned s) {
    char path[256];
    snprintf(path, sizeof path, "%s/dsp_cufile_XXXXXX", dir);
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp in %s: errno %d", dir, errno);
    unlink(path);
    unsigned char *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) b[i] = pat(i, s);
    CHECK(pwrite(fd, b, n, 0) == (ssize_t)n);
    free(b);
    CHECK(fsync(fd) == 0);
    return fd;
}

/* The same file opened again with other flags (O_DIRECT, O_RDONLY). */
static inline int reopen(int fd, int flags) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int r = open(path, flags);
    CHECK(r >= 0, "reopen with flags %#x: errno %d", flags, errno);
    return r;
}

static inline CUfileHandle_t handle_of(int fd) {
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    CUfileError_t rc = cuFileHandleRegister(&fh, &d);
    CHECK(rc.err == CU_FILE_SUCCESS && fh, "cuFileHandleRegister: %d", rc.err);
    return fh;
}

static inline void *pinned(size_t n) {
    void *p = ((void *(*)(size_t))shim("dsp_alloc"))(n);
    CHECK(p && is_pinned(p, n));
    return p;
}

/* Device memory as a program gets it from the driver (the libcuda double,
 * tests/cuda/fake_cuda.c): initialised, with the primary context current in
 * the calling thread. (No __thread flag: LeakSanitizer crashes at exit on
 * the dynamic TLS of a sanitized module loaded RTLD_LOCAL, libcufile_user.) */
static inline void *device(size_t n) {
    CUcontext ctx = NULL;
    CHECK(cuInit(0) == CUDA_SUCCESS && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
    if (!ctx) {
        CUdevice dev = -1;
        CHECK(cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
              cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
              cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    }
    CUdeviceptr d = 0;
    CHECK(cuMemAlloc_v2(&d, n) == CUDA_SUCCESS);
    return (void *)(uintptr_t)d;
}

/* 1 when p[0..n) holds the file's bytes from offset off. */
static inline int same(const void *p, size_t n, size_t off, unsigned s) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(off + i, s)) return 0;
    return 1;
}

/* Descriptors of this process open on the same file as fd (fd included),
 * and of those how many have O_DIRECT. */
static inline int fds_on_file(int fd, int *direct) {
    struct stat st, o;
    CHECK(fstat(fd, &st) == 0);
    int n = 0;
    if (direct) *direct = 0;
    for (int i = 0; i < 1024; i++) {
        if (fstat(i, &o) != 0 || o.st_ino != st.st_ino || o.st_dev != st.st_dev) continue;
        n++;
        int fl = fcntl(i, F_GETFL);
        if (direct && fl >= 0 && (fl & O_DIRECT)) ++*direct;
    }
    return n;
}

#define OPEN_DRIVER() CHECK(cuFileDriverOpen().err == CU_FILE_SUCCESS)

/* Most tests' start: the driver opened, and a file of n bytes of pattern s on
 * tmpfs (make_file; *fd, where fd is not NULL, is its descriptor) with its
 * cuFile handle. */
static inline CUfileHandle_t driver_and_file(size_t n, unsigned s, int *fd) {
    OPEN_DRIVER();
    int f = make_file("/dev/shm", n, s);
    if (fd) *fd = f;
    return handle_of(f);
}

#endif
