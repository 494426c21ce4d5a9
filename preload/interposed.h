/* The one table of the functions the shim interposes or calls in the CUDA
 * runtime, the CUDA driver and cuFile (docs/cuda.md, "Adding an interposed
 * function"). Generated from it: each layer's real-function struct and the
 * resolver's list of them (src/symbols.h, struct dsp_layer), the declarations
 * of the hooks (a hook whose type differs from its row does not compile), the
 * dlsym hook's table (preload/dlsym.c) and the cuGetProcAddress table
 * (preload/cuda_driver.c). Both are searched with bsearch: the rows of each
 * library are in strcmp order, the libraries in the order cufile, driver,
 * runtime ("cuFile" < "cuG".."cuP" < "cuda"), so that the hooks come out
 * sorted; the test interposed_tables_sorted walks the generated lists and
 * fails on disorder.
 *
 * F(lib, name, use, need, ret, params): one function of library lib
 *   use:    HOOK, the shim defines `name` (exported, handed out by the dlsym
 *           hook and, for the driver, by cuGetProcAddress); CALL, the shim
 *           only calls the real one
 *   need:   REQUIRED, the layer cannot serve without the real one; OPTIONAL
 *   ret, params: the real function's type, which the hook shares
 * V(lib, name, since, ret, need, params, need_v2, params_v2): a driver
 *   function with two entry points, `name` and `name`_v2, both hooked:
 *   cuGetProcAddress hands out the _v2 to callers of cudaVersion `since` or
 *   newer (cuda.h's #define of the name to its _v2), the first to older ones
 *   (HAMi-core issue 57).
 *
 * The types are the including file's (cuda_types.h, cufile_types.h, the
 * driver's own in cuda_driver.c): only the generators that expand them need
 * them. */
#ifndef DSP_INTERPOSED_H
#define DSP_INTERPOSED_H

/* ---- the table ---- */

#define DSP_FNS_cufile(F, V)                                                                       \
    F(cufile, cuFileBufDeregister, HOOK, REQUIRED, CUfileError_t, (const void *))                  \
    F(cufile, cuFileBufRegister, HOOK, REQUIRED, CUfileError_t, (const void *, size_t, int))       \
    F(cufile, cuFileDriverClose, HOOK, OPTIONAL, CUfileError_t, (void))                            \
    F(cufile, cuFileDriverClose_v2, HOOK, OPTIONAL, CUfileError_t, (void))                         \
    F(cufile, cuFileDriverOpen, HOOK, OPTIONAL, CUfileError_t, (void))                             \
    F(cufile, cuFileHandleDeregister, HOOK, REQUIRED, void, (CUfileHandle_t))                      \
    F(cufile, cuFileHandleRegister, HOOK, REQUIRED, CUfileError_t,                                 \
      (CUfileHandle_t *, CUfileDescr_t *))                                                         \
    F(cufile, cuFileRead, HOOK, REQUIRED, ssize_t, (CUfileHandle_t, void *, size_t, off_t, off_t)) \
    F(cufile, cuFileUseCount, CALL, OPTIONAL, long, (void))                                        \
    F(cufile, cuFileWrite, HOOK, REQUIRED, ssize_t,                                                \
      (CUfileHandle_t, const void *, size_t, off_t, off_t))

#define DSP_FNS_driver(F, V)                                                                       \
    F(driver, cuCtxGetCurrent, CALL, OPTIONAL, CUresult, (void **))                                \
    F(driver, cuCtxGetDevice, CALL, OPTIONAL, CUresult, (int *))                                   \
    F(driver, cuCtxSynchronize, CALL, REQUIRED, CUresult, (void))                                  \
    F(driver, cuDeviceGetPCIBusId, CALL, OPTIONAL, CUresult, (char *, int, int))                   \
    V(driver, cuGetProcAddress, 12000, CUresult, OPTIONAL,                                         \
      (const char *, void **, int, unsigned long long), OPTIONAL,                                  \
      (const char *, void **, int, unsigned long long, int *))                                     \
    V(driver, cuMemAllocHost, 3020, CUresult, OPTIONAL, (void **, unsigned), OPTIONAL,             \
      (void **, size_t))                                                                           \
    F(driver, cuMemFreeHost, HOOK, OPTIONAL, CUresult, (void *))                                   \
    F(driver, cuMemHostAlloc, HOOK, OPTIONAL, CUresult, (void **, size_t, unsigned))               \
    V(driver, cuMemHostGetDevicePointer, 3020, CUresult, OPTIONAL, (unsigned *, void *, unsigned), \
      OPTIONAL, (CUdeviceptr *, void *, unsigned))                                                 \
    F(driver, cuMemHostGetFlags, HOOK, OPTIONAL, CUresult, (unsigned *, void *))                   \
    V(driver, cuMemHostRegister, 6050, CUresult, OPTIONAL, (void *, size_t, unsigned), REQUIRED,   \
      (void *, size_t, unsigned))                                                                  \
    F(driver, cuMemHostUnregister, HOOK, REQUIRED, CUresult, (void *))                             \
    F(driver, cuPointerGetAttribute, HOOK, OPTIONAL, CUresult, (void *, int, CUdeviceptr))         \
    F(driver, cuPointerGetAttributes, HOOK, OPTIONAL, CUresult,                                    \
      (unsigned, int *, void **, CUdeviceptr))                                                     \
    F(driver, cuThreadExchangeStreamCaptureMode, CALL, OPTIONAL, CUresult, (int *))

#define DSP_FNS_runtime(F, V)                                                                      \
    F(runtime, cudaDeviceGetPCIBusId, CALL, OPTIONAL, cudaError_t, (char *, int, int))             \
    F(runtime, cudaDeviceSynchronize, CALL, REQUIRED, cudaError_t, (void))                         \
    F(runtime, cudaFreeHost, HOOK, OPTIONAL, cudaError_t, (void *))                                \
    F(runtime, cudaGetDevice, CALL, OPTIONAL, cudaError_t, (int *))                                \
    F(runtime, cudaGetDriverEntryPoint, HOOK, OPTIONAL, cudaError_t,                               \
      (const char *, void **, unsigned long long, void *))                                         \
    F(runtime, cudaGetDriverEntryPointByVersion, HOOK, OPTIONAL, cudaError_t,                      \
      (const char *, void **, unsigned, unsigned long long, void *))                               \
    F(runtime, cudaGetLastError, CALL, REQUIRED, cudaError_t, (void))                              \
    F(runtime, cudaHostAlloc, HOOK, OPTIONAL, cudaError_t, (void **, size_t, unsigned))            \
    F(runtime, cudaHostGetDevicePointer, HOOK, OPTIONAL, cudaError_t, (void **, void *, unsigned)) \
    F(runtime, cudaHostGetFlags, HOOK, OPTIONAL, cudaError_t, (unsigned *, void *))                \
    F(runtime, cudaHostRegister, HOOK, REQUIRED, cudaError_t, (void *, size_t, unsigned))          \
    F(runtime, cudaHostUnregister, HOOK, REQUIRED, cudaError_t, (void *))                          \
    F(runtime, cudaMallocHost, HOOK, OPTIONAL, cudaError_t, (void **, size_t))                     \
    F(runtime, cudaPointerGetAttributes, HOOK, OPTIONAL, cudaError_t,                              \
      (struct cudaPointerAttributes *, const void *))                                              \
    F(runtime, cudaSetDevice, CALL, OPTIONAL, cudaError_t, (int))                                  \
    /* CUDA 10.1+ */                                                                               \
    F(runtime, cudaThreadExchangeStreamCaptureMode, CALL, OPTIONAL, cudaError_t, (int *))

/* Each library: the file name prefix the resolver and the dlsym hook look
 * for, and the option whose "off" turns its layer off. */
#define DSP_LIB_cufile(X)  X("libcufile.so", CUFILE)
#define DSP_LIB_driver(X)  X("libcuda.so", CUDA)
#define DSP_LIB_runtime(X) X("libcudart.so", CUDA)

/* ---- what is generated ---- */

#define DSP_LIB_FILE(lib)        DSP_LIB_##lib(DSP_LIB_FILE_)
#define DSP_LIB_FILE_(file, o)   file
#define DSP_LIB_OPTION(lib)      DSP_LIB_##lib(DSP_LIB_OPTION_)
#define DSP_LIB_OPTION_(file, o) DSP_OPT_##o
#define DSP_LIB_OFF(lib)         DSP_LIB_##lib(DSP_LIB_OFF_)
#define DSP_LIB_OFF_(file, o)    DSP_##o##_OFF

#define DSP_NEED_REQUIRED 1
#define DSP_NEED_OPTIONAL 0
#define DSP_IF_HOOK(x)    x
#define DSP_IF_CALL(x)

/* struct dsp_real_<lib>: a pointer to each real function, named as it. */
#define DSP_REAL_STRUCT(lib)                                                                       \
    struct dsp_real_##lib {                                                                        \
        DSP_FNS_##lib(DSP_REAL_F_, DSP_REAL_V_)                                                    \
    }
#define DSP_REAL_F_(lib, name, use, need, ret, params) ret(*name) params;
#define DSP_REAL_V_(lib, name, since, ret, need, params, need2, params2)                           \
    ret(*name) params;                                                                             \
    ret(*name##_v2) params2;

/* The resolver's list, an initializer for a struct dsp_sym array, filling the
 * struct dsp_real_<lib> named dsp_real_<lib>. */
#define DSP_SYMS(lib)                                                                              \
    { DSP_FNS_##lib(DSP_SYM_F_, DSP_SYM_V_) DSP_SYM_END_ }
#define DSP_SYM_END_                                                                               \
    { NULL, NULL, 0 }
#define DSP_SYM_F_(lib, name, use, need, ret, params)                                              \
    {#name, (void **)&dsp_real_##lib.name, DSP_NEED_##need},
#define DSP_SYM_V_(lib, name, since, ret, need, params, need2, params2)                            \
    {#name, (void **)&dsp_real_##lib.name, DSP_NEED_##need},                                       \
        {#name "_v2", (void **)&dsp_real_##lib.name##_v2, DSP_NEED_##need2},

/* The designated initializers of the library's struct dsp_layer that the
 * table decides: its file, its list (named dsp_syms_<lib>), its option. */
#define DSP_LAYER_OF(library)                                                                      \
    .lib = DSP_LIB_FILE(library), .syms = dsp_syms_##library,                                      \
    .off_option = DSP_LIB_OPTION(library), .off_value = DSP_LIB_OFF(library)

/* The declarations of the library's hooks. */
#define DSP_HOOK_DECLS(lib) DSP_FNS_##lib(DSP_DECL_F_, DSP_DECL_V_)

#define DSP_DECL_F_(lib, name, use, need, ret, params) DSP_IF_##use(DSP_API ret name params;)
#define DSP_DECL_V_(lib, name, since, ret, need, params, need2, params2)                           \
    DSP_API ret name params;                                                                       \
    DSP_API ret name##_v2 params2;

/* DSP_HOOK_ENTRY(lib, name), defined by the includer, for each hook of one
 * library (DSP_HOOKS_OF) or of all (DSP_HOOKED), in strcmp order of name. */
#define DSP_HOOKS_OF(lib) DSP_FNS_##lib(DSP_HOOKED_F_, DSP_HOOKED_V_)
#define DSP_HOOKED        DSP_HOOKS_OF(cufile) DSP_HOOKS_OF(driver) DSP_HOOKS_OF(runtime)

#define DSP_HOOKED_F_(lib, name, use, need, ret, params) DSP_IF_##use(DSP_HOOK_ENTRY(lib, name))
#define DSP_HOOKED_V_(lib, name, since, ret, need, params, need2, params2)                         \
    DSP_HOOK_ENTRY(lib, name) DSP_HOOK_ENTRY(lib, name##_v2)

/* DSP_PROC_ENTRY(name, newer, since), defined by the includer, for each
 * driver hook by the base name cuGetProcAddress takes, in strcmp order:
 * newer is the entry point handed out from cudaVersion since (name itself
 * and 0 for a function with one). */
#define DSP_PROCS DSP_FNS_driver(DSP_PROC_F_, DSP_PROC_V_)

#define DSP_PROC_F_(lib, name, use, need, ret, params) DSP_IF_##use(DSP_PROC_ENTRY(name, name, 0))
#define DSP_PROC_V_(lib, name, since, ret, need, params, need2, params2)                           \
    DSP_PROC_ENTRY(name, name##_v2, since)

#endif
