/* A library loaded RTLD_LOCAL after start-up calls cuFile: the hooks
 * interpose, and must find the real functions (and libcuda's pointer
 * attributes) in libraries dlsym(RTLD_NEXT) cannot see. A probe before
 * libcufile is loaded must not settle the layer as pass-through. This
 * program links neither library itself. */
#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"
#include "rtld_local.h"

int main(int argc, char **argv) {
    if (rtld_local_ready(argc, "fakecufile_staged", "libcufile")) return 1;
    CUfileError_t (*probe)(void) = (CUfileError_t(*)(void))dlsym(RTLD_DEFAULT, "cuFileDriverOpen");
    if (!probe || probe().err != CU_FILE_DRIVER_NOT_INITIALIZED) {
        fprintf(stderr, "FAIL: the probe before libcufile\n");
        return 1;
    }
    return rtld_local_run(argv[1]);
}
