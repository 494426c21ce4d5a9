/* The CUDA driver API's hooks (cuda_driver.c), as the other hooks see them. */
#ifndef DSP_CUDA_DRIVER_H
#define DSP_CUDA_DRIVER_H

/* For a driver function `symbol` (a base name without _vN, as cuGetProcAddress
 * and cudaGetDriverEntryPoint take it) whose real address a lookup returned:
 * the shim's hook of the same version when the shim serves that function,
 * else `fn` unchanged. The version is the one the real lookup chose (its
 * address tells), else the one cudaVersion asks for (-1: the newest). */
void *dsp_cu_proc_hook(const char *symbol, void *fn, int cudaVersion);

#endif
