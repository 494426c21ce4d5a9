/* Review finding: cuFileBufRegister or cuFileBufDeregister as the process's
 * first cuFile call (recent libcufile opens the driver itself) answered
 * "driver not initialized" for good: the real functions were looked up only
 * by other hooks. The driver is opened here behind the shim's back, on the
 * library's own handle, as such a libcufile would. */
#include "cufile_test.h"

int main(void) {
    void *h = dlopen("libcufile.so.0", RTLD_NOW | RTLD_NOLOAD);
    CHECK(h);
    CUfileError_t (*open_)(void) = (CUfileError_t(*)(void))dlsym(h, "cuFileDriverOpen");
    CHECK(open_ && open_().err == CU_FILE_SUCCESS);
    char *dev = device(MiB);
    CUfileError_t rc = cuFileBufRegister(dev, MiB, 0);
    CHECK(rc.err == CU_FILE_SUCCESS, "first call cuFileBufRegister: %d", rc.err);
    CHECK(fakecufile_registered(dev) == MiB);
    CHECK(cuFileBufRegister(dev, MiB, 0).err == CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK(cuFileBufDeregister(dev).err == CU_FILE_SUCCESS);
    CHECK(fakecufile_registered(dev) == 0);
    PASS();
}
