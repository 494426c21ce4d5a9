/* The libcuda.so.1 double's interface (fake_cuda.c): the slice of the CUDA
 * driver API it exports (CUDA 12/13 ABI, the values of the public cuda.h) and
 * its test controls (fakecu_*). Included by the double itself, by the doubles
 * built on it (fake_cudart.c reaches it only through dlopen and
 * cuGetProcAddress_v2, fake_cufile.c links it) and by its selftest. */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h" /* CUresult, CUdeviceptr, the first codes and attributes */

#include <stddef.h>
#include <stdint.h>

typedef int CUdevice;
typedef struct fakecu_ctx *CUcontext;

enum {
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
};
enum {
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3, /* CUdeviceptr */
    CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,   /* void * */
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9, /* int */
};
/* cuGetProcAddress_v2's *symbolStatus (CUdriverProcAddressQueryResult). */
enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

CUresult cuDriverGetVersion(int *version);
CUresult cuDeviceGet(CUdevice *dev, int ordinal);
CUresult cuDeviceGetCount(int *n);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext *ctx);
CUresult cuCtxSynchronize(void);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned flags);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemAllocHost(void **pp, unsigned int bytesize); /* v1: a 32-bit size */
CUresult cuMemFreeHost(void *p);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned flags);
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemHostGetFlags(unsigned *flags, void *p);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags);
CUresult cuMemHostGetDevicePointer(unsigned int *d, void *p, unsigned flags); /* v1: 32-bit */
CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p);
CUresult cuThreadExchangeStreamCaptureMode(int *mode);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             unsigned long long flags, int *symbolStatus);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          unsigned long long flags); /* CUDA 11.3's */

/* --- test controls ------------------------------------------------------- */

/* Calls made to the exported driver function of that name, -1 for a name the
 * double does not export. */
int fakecu_count(const char *name);
/* 0 unknown, 1 cuMemHostAlloc memory, 2 registered, 3 device memory. */
int fakecu_kind(const void *p);
/* 1 when p's pages were pinned with FOLL_PIN (fake_pin.c). */
int fakecu_foll_pinned(const void *p);
/* 1 when [p, p + n) lies in host-allocated or registered memory. */
int fakecu_host_pinned(const void *p, size_t n);
/* The live device allocation holding p, copied: 1, or 0. */
int fakecu_find_device(uintptr_t p, uintptr_t *base, size_t *len, unsigned long long *id);
/* The runtime's device (fake_device.c): idle() waits until every stream is
 * idle; capture_refuses() is the capture rules' verdict on a potentially
 * unsafe call (900, the capture then invalidated, or 0); exchange_mode is
 * cudaThreadExchangeStreamCaptureMode's work. Any may be NULL. */
void fakecu_set_device(void (*idle)(void), int (*capture_refuses)(void),
                       int (*exchange_mode)(int *));
/* Arms a driver that calls back: the next successful registration, before
 * returning, runs cudaPointerGetAttributes(q) on another thread and joins it. */
void fakecu_call_back_on_register(const void *q);
int fakecu_called_back(void);

/* --- internal to the driver double (not exported: fake_cuda.map) ---------- */

/* Pins [p, p + len) as the driver does (FOLL_PIN, fake_pin.c): returns the
 * handle fk_unpin takes, or -1 when that was refused (then mlock instead,
 * best effort, when lock_instead). */
int fk_pin(void *p, size_t len, int lock_instead);
void fk_unpin(int pin);

#endif
