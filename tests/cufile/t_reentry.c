/* Regression (cufile_reentry_from_driver_close): libcufile calls its own
 * exports through the PLT; its cuFileDriverClose deregisters what is still
 * registered with cuFileBufDeregister, which lands in the shim's hook while
 * the shim's close holds its lock. Without the re-entry guard that call
 * deadlocked (the test's timeout) or was answered by the shim instead of the
 * library. */
#include "cufile_test.h"

int main(void) {
    int fd;
    CUfileHandle_t fh = driver_and_file(2 * MiB, 8, &fd);
    char *mine = device(MiB), *apps = device(MiB);
    CHECK(cuFileBufRegister(apps, MiB, 0).err == CU_FILE_SUCCESS);
    CHECK(cuFileRead(fh, mine, MiB, 0, 0) == MiB && fakecufile_registered(mine) == MiB);
    CHECK(cuFileDriverClose_v2().err == CU_FILE_SUCCESS);
    CHECK(fakecufile_close_failures() == 0 && fakecufile_nregistered() == 0);
    /* Opened again: the shim's cache was emptied with the driver, and its
     * record of the application's registrations too. */
    OPEN_DRIVER();
    fh = handle_of(fd);
    int reg = fakecufile_count("cuFileBufRegister");
    CHECK(cuFileRead(fh, mine, MiB, MiB, 0) == MiB && same(mine, MiB, MiB, 8));
    CHECK(cuFileRead(fh, apps, MiB, 0, 0) == MiB && same(apps, MiB, 0, 8));
    CHECK(fakecufile_count("cuFileBufRegister") == reg + 2 && fakecufile_staged() == 0);
    CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS && fakecufile_close_failures() == 0);
    PASS();
}
