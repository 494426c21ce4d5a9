/* The slice of the cuFile (GPUDirect Storage) ABI and of the CUDA driver API's
 * pointer attributes the cuFile layer needs (docs/internals.md, "cuFile"). The
 * real cufile.h
 * needs cuda.h, so the project declares its own; values are those of the
 * public headers (CUfileOpError is 5000 plus a small number). */
#ifndef DSP_CUFILE_TYPES_H
#define DSP_CUFILE_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    int err;    /* CUfileOpError */
    int cu_err; /* CUresult, for CU_FILE_CUDA_DRIVER_ERROR */
} CUfileError_t;

typedef void *CUfileHandle_t;

enum { CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1 };

typedef struct {
    int type; /* CU_FILE_HANDLE_TYPE_* */
    union {
        int fd;
        void *handle;
    } handle;
    const void *fs_ops;
} CUfileDescr_t;

enum {
    CU_FILE_SUCCESS = 0,
    CU_FILE_DRIVER_NOT_INITIALIZED = 5001,
    CU_FILE_DRIVER_CLOSING = 5006,
    CU_FILE_CUDA_DRIVER_ERROR = 5011,
    CU_FILE_CUDA_POINTER_INVALID = 5012,
    CU_FILE_INVALID_FILE_TYPE = 5018,
    CU_FILE_INVALID_VALUE = 5022,
    CU_FILE_MEMORY_ALREADY_REGISTERED = 5023,
    CU_FILE_MEMORY_NOT_REGISTERED = 5024,
    CU_FILE_DRIVER_ALREADY_OPEN = 5026,
    CU_FILE_HANDLE_NOT_REGISTERED = 5027,
    CU_FILE_HANDLE_ALREADY_REGISTERED = 5028,
    CU_FILE_INTERNAL_ERROR = 5030,
};

/* CUDA driver API: cuPointerGetAttributes(n, attrs, data, ptr). */
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_INITIALIZED = 3 };
enum {
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,       /* unsigned int: CU_MEMORYTYPE_* */
    CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,         /* unsigned long long, unique per allocation */
    CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,        /* a boolean */
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11, /* CUdeviceptr */
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,       /* size_t */
};
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_ARRAY = 3 };

#ifdef DSP_CUFILE_PROTOTYPES
CUfileError_t cuFileDriverOpen(void);
CUfileError_t cuFileDriverClose(void);
CUfileError_t cuFileDriverClose_v2(void);
CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr);
void cuFileHandleDeregister(CUfileHandle_t fh);
CUfileError_t cuFileBufRegister(const void *base, size_t len, int flags);
CUfileError_t cuFileBufDeregister(const void *base);
ssize_t cuFileRead(CUfileHandle_t fh, void *base, size_t size, off_t file_off, off_t buf_off);
ssize_t cuFileWrite(CUfileHandle_t fh, const void *base, size_t size, off_t file_off,
                    off_t buf_off);
CUresult cuInit(unsigned flags);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p);
#endif

#endif
