/* A test double of the CUDA driver's memory API (built as libcuda.so.1) for
 * machines without a GPU: "device memory" is host memory this library hands
 * out and marks as device, each allocation with its own buffer id, so the
 * shim's question (cuPointerGetAttributes, as cuFile asks it) has the answers
 * a driver gives:
 * - MEMORY_TYPE is CU_MEMORYTYPE_DEVICE inside a live allocation, else 0, and
 *   the call succeeds for any pointer (the driver's documented behaviour);
 * - RANGE_START_ADDR / RANGE_SIZE give the whole allocation;
 * - BUFFER_ID is unique per allocation: a freed range allocated again at the
 *   same address (this double reuses a freed range of the same size first, as
 *   a caching allocator would) gets a new id;
 * - IS_MANAGED is written as a one-byte bool (callers must not read more);
 * - an unknown attribute is CUDA_ERROR_INVALID_VALUE. */
#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#define MAXDEV 4096
static struct dev {
    uintptr_t base;
    size_t len, map_len;
    unsigned long long id;
    int live;
} devs[MAXDEV];
static int ndev;
static unsigned long long next_id = 1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

CUresult cuInit(unsigned flags) {
    return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
    if (!p || !size) return CUDA_ERROR_INVALID_VALUE;
    size_t map_len = (size + 4095) & ~(size_t)4095;
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
        memset((void *)d->base, 0xdd, map_len);
        *p = d->base;
    }
    pthread_mutex_unlock(&mu);
    return d ? CUDA_SUCCESS : 2 /* CUDA_ERROR_OUT_OF_MEMORY */;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
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

/* The live allocation holding p, copied: 1, or 0. */
int fakedrv_find(uintptr_t p, uintptr_t *base, size_t *len, unsigned long long *id) {
    int found = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ndev && !found; i++)
        if (devs[i].live && p - devs[i].base < devs[i].len) {
            *base = devs[i].base;
            *len = devs[i].len;
            *id = devs[i].id;
            found = 1;
        }
    pthread_mutex_unlock(&mu);
    return found;
}

CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
    if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t base = 0;
    size_t len = 0;
    unsigned long long id = 0;
    int dev = fakedrv_find((uintptr_t)p, &base, &len, &id);
    for (unsigned i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned *)data[i] = dev ? CU_MEMORYTYPE_DEVICE : 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = base;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data[i] = len;
            break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *)data[i] = id;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *(bool *)data[i] = false;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}
