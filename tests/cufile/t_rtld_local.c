/* A library loaded RTLD_LOCAL after start-up calls cuFile: the hooks
 * interpose, and must find the real functions (and libcuda's pointer
 * attributes) in libraries dlsym(RTLD_NEXT) cannot see. A probe before
 * libcufile is loaded must not settle the layer as pass-through. This
 * program links neither library itself. */
#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"

#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2 || !dlsym(RTLD_DEFAULT, "dsp_version")) {
        fprintf(stderr, "FAIL: run under LD_PRELOAD with the module's path\n");
        return 1;
    }
    if (dlsym(RTLD_DEFAULT, "fakecufile_staged")) {
        fprintf(stderr, "FAIL: libcufile is in the global scope; the test needs it local\n");
        return 1;
    }
    CUfileError_t (*probe)(void) = (CUfileError_t(*)(void))dlsym(RTLD_DEFAULT, "cuFileDriverOpen");
    if (!probe || probe().err != CU_FILE_DRIVER_NOT_INITIALIZED) {
        fprintf(stderr, "FAIL: the probe before libcufile\n");
        return 1;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: %s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "user_run");
    int rc = run ? run() : 99;
    if (rc) {
        fprintf(stderr, "FAIL: user_run step %d\n", rc);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
