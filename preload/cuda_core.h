/* What the two CUDA layers share: the runtime API (cuda_runtime.c, what
 * PyTorch calls) and the driver API (cuda_driver.c, what static cudart, CuPy,
 * JAX and cuda-python reach). Both serve pinned host memory from the same
 * manager with the same rules (docs/cuda.md); they differ only in which real
 * functions register, unregister and wait, so each hands the core an api
 * table of its own. The codes the core deals in have the same values in both
 * APIs (0, 1, 2, 712, 713, 900), so they pass back unchanged. */
#ifndef DSP_CUDA_CORE_H
#define DSP_CUDA_CORE_H

#include "internal.h"
#include "symbols.h"

#include <stddef.h>

/* ondemand_mu's fork slot (src/fork.h): a leaf, held under no lock of ours. */
#define DSP_FORK_CUDA DSP_FORK_LEAF_0

enum {
    DSP_CU_SUCCESS = 0,
    DSP_CU_INVALID_VALUE = 1,
    DSP_CU_NOT_REGISTERED =
        713, /* cudaErrorHostMemoryNotRegistered, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
    DSP_CU_PORTABLE = 1,        /* cudaHostAllocPortable, CU_MEMHOSTALLOC_PORTABLE */
    DSP_CU_MAPPED = 2,          /* cudaHostAllocMapped, CU_MEMHOSTALLOC_DEVICEMAP */
    DSP_CU_REG_IOMEMORY = 4,    /* cudaHostRegisterIoMemory, CU_MEMHOSTREGISTER_IOMEMORY */
    DSP_CU_REG_READONLY = 8,    /* cudaHostRegisterReadOnly, CU_MEMHOSTREGISTER_READ_ONLY */
    DSP_CU_CAPTURE_RELAXED = 2, /* cudaStreamCaptureModeRelaxed, CU_STREAM_CAPTURE_MODE_RELAXED */
};

struct dsp_cuda_api {
    struct dsp_layer *layer; /* its resolver and mode */
    const char *name;        /* "cudaHostRegister" or "cuMemHostRegister", for log lines */
    /* The real functions, called with the guard set (dsp_cuda_out). */
    int (*reg)(void *p, size_t len, unsigned flags);
    int (*unreg)(void *p);
    int (*sync)(void);               /* wait for the device */
    int (*exchange_mode)(int *mode); /* the thread's capture mode; NULL when absent */
    /* After a failed call of ours: the runtime clears the last error it left. */
    void (*forget)(void);
    /* 1 when a driver call can succeed on this thread now (the driver API:
     * a context is current); NULL: always. Without it the shim neither pins
     * a new block (its registration would fail, 201) nor evicts (an
     * unregister would fail, and the span be kept out of use for good). */
    int (*ready)(void);
    /* The runtime's: setting the device on a thread of the shim's before its
     * first call (NULL: the driver API, whose context is the caller's). */
    int (*set_device)(int d);
    /* The device current on the calling thread (the runtime's cudaGetDevice,
     * the driver's cuCtxGetDevice: for set_device, and for NUMA placement,
     * src/numa.h) and a device's PCI bus id; 0 or the API's error. NULL when
     * absent. */
    int (*current_device)(int *d);
    int (*pci_bus_id)(char *buf, int len, int dev);
    int no_driver_a, no_driver_b; /* codes meaning no usable driver or device */
};

/* The shim's own calls into CUDA in progress on this thread. The real runtime
 * reaches the driver through a table it got from cuGetProcAddress, which
 * holds the shim's driver hooks: a call the shim makes on its own behalf
 * (registering a block) or passes on for the program must reach the driver
 * straight, never the manager again (it would answer the registration of its
 * own block itself, and the driver would never see it). */
extern DSP_TLS int dsp_cuda_out;
#define DSP_CUDA_OUT(call)                                                                         \
    ({                                                                                             \
        dsp_cuda_out++;                                                                            \
        __typeof__(call) r_ = (call);                                                              \
        dsp_cuda_out--;                                                                            \
        r_;                                                                                        \
    })

/* A layer's start hook (struct dsp_layer): the core's locks, fork handlers
 * and manager hooks, once, whichever layer starts first. Returns 1, or 0 in
 * a forked child of a process that used CUDA (CUDA does not survive fork:
 * no layer starts serving there). slot: DSP_CUDA_RUNTIME or DSP_CUDA_DRIVER,
 * the order in which the manager's hooks pick a serving API. */
enum { DSP_CUDA_RUNTIME = 0, DSP_CUDA_DRIVER = 1 };
int dsp_cuda_start(const struct dsp_cuda_api *api, int slot);

/* The hooks' bodies. Each returns the code to return, or DSP_CUDA_REAL when
 * the caller must call the real function with the program's arguments. */
enum { DSP_CUDA_REAL = -1 };
int dsp_cuda_alloc(const struct dsp_cuda_api *a, void **p, size_t size, unsigned flags);
int dsp_cuda_free(const struct dsp_cuda_api *a, void *p);
/* real: the real registration the program called (runtime, driver v1 or v2). */
int dsp_cuda_register(const struct dsp_cuda_api *a, int (*real)(void *, size_t, unsigned), void *p,
                      size_t size, unsigned flags);
int dsp_cuda_unregister(const struct dsp_cuda_api *a, int (*real)(void *), void *p);
int dsp_cuda_get_flags(const struct dsp_cuda_api *a, unsigned *flags, const void *p);
/* Before a question about p (device pointer, attributes): a manager block of
 * another layer is registered first, so the driver's answer is that of
 * pinned memory. Returns the address to ask the real function about: p, or
 * for arena memory outside every live block (which the driver knows only
 * through the shim's registrations) an address no registration holds, so the
 * answer, last error included, is the runtime's for unregistered memory. */
const void *dsp_cuda_question(const struct dsp_cuda_api *a, const void *p);
/* After such a question: a pointer-sized answer at field that is the address
 * asked about becomes p (unregistered memory's host pointer is the pointer
 * itself). */
void dsp_cuda_answer_for(void *field, const void *asked, const void *p);

#endif
