/* The program's registrations inside the arena: those the shim answered itself
 * (cudaHostRegister of a range inside a block of ordinary memory, dsp_alloc or
 * a malloc hint's, registered with the driver whole; inside a cudaHostAlloc
 * block the driver answers 712), kept so that cudaHostUnregister mirrors them
 * and overlaps fail as the driver's would; and those the driver took (a
 * ReadOnly registration inside a block not registered yet), kept so that
 * cudaHostUnregister knows them from the shim's own (docs/cuda.md). */
#ifndef DSP_CUDA_VREG_H
#define DSP_CUDA_VREG_H

#include <stddef.h>
#include <stdint.h>

/* mu's fork slot (src/fork.h): taken under bounce.c's mu (a kept block freed
 * drops its sub-registrations), never held while a lock of the core is. */
#define DSP_FORK_VREG DSP_FORK_LEAF_1

/* 0, or 712 (cudaErrorHostMemoryAlreadyRegistered) when a page of the range is
 * registered already, or 2 (cudaErrorMemoryAllocation) when out of memory.
 * driver: the driver holds this registration (the program's own). */
int dsp_vreg_add(const void *ptr, size_t size, int driver);

/* When ptr was added exactly so (and is now removed): DSP_VREG_SHIM, or
 * DSP_VREG_DRIVER for one the driver holds (the caller undoes it there); else 0. */
enum { DSP_VREG_SHIM = 1, DSP_VREG_DRIVER = 2 };
int dsp_vreg_remove(const void *ptr);

/* Forgets every registration inside [base, base+len) (its block was freed). */
void dsp_vreg_drop_range(uintptr_t base, size_t len);

#endif
