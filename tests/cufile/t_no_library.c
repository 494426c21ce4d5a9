/* A process without libcufile that probes for cuFile by dlsym(RTLD_DEFAULT)
 * finds the shim's hooks: they must say the driver is not there, not crash. */
#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"
#include "cuda_test.h"

int main(void) {
    CUfileError_t (*open_)(void) = (CUfileError_t(*)(void))shim("cuFileDriverOpen");
    CHECK(open_().err == CU_FILE_DRIVER_NOT_INITIALIZED);
    ssize_t (*read_)(CUfileHandle_t, void *, size_t, off_t, off_t) =
        (ssize_t(*)(CUfileHandle_t, void *, size_t, off_t, off_t))shim("cuFileRead");
    char buf[16];
    CHECK(read_(NULL, buf, sizeof buf, 0, 0) == -CU_FILE_DRIVER_NOT_INITIALIZED);
    void (*dereg)(CUfileHandle_t) = (void (*)(CUfileHandle_t))shim("cuFileHandleDeregister");
    dereg(NULL);
    PASS();
}
