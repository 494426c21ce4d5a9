/* Registrations the shim answered itself: cudaHostRegister of a range inside a
 * manager block that is already registered with the driver. Kept so that
 * cudaHostUnregister mirrors them and overlaps fail as the driver's would. */
#ifndef DSP_CUDA_VREG_H
#define DSP_CUDA_VREG_H

#include <stddef.h>
#include <stdint.h>

/* Registers the fork handlers of its lock; call once before any other use
 * (a fork while another thread holds it must not lock the child out). */
void dsp_vreg_init(void);

/* 0, or 712 (cudaErrorHostMemoryAlreadyRegistered) when a page of the range is
 * registered already, or 2 (cudaErrorMemoryAllocation) when out of memory. */
int dsp_vreg_add(const void *ptr, size_t size);

/* 1 when ptr was added exactly so (and is now removed), else 0. */
int dsp_vreg_remove(const void *ptr);

/* Forgets every registration inside [base, base+len) (its block was freed). */
void dsp_vreg_drop_range(uintptr_t base, size_t len);

#endif
