/* For t_rtld_local: a library linked against libcudart, loaded RTLD_LOCAL. */
#include "cuda_test.h"

int user_run(void) {
    void *p = NULL;
    if (cudaHostAlloc(&p, 5 << 20, 0) != cudaSuccess) return 1;
    if (calls("cudaHostAlloc") != 0) return 2;    /* served by the shim */
    if (calls("cudaHostRegister") != 1) return 3; /* through the real, local libcudart */
    if (!is_pinned(p, 5 << 20)) return 4;
    if (host_type(p) != 1) return 5;
    if (cudaFreeHost(p) != cudaSuccess || calls("cudaFreeHost") != 0) return 6;
    void *wc = NULL; /* pass-through reaches the local library too */
    if (cudaHostAlloc(&wc, 4096, cudaHostAllocWriteCombined) != cudaSuccess ||
        calls("cudaHostAlloc") != 1)
        return 7;
    return 0;
}
