/* Regression (issue 14): the shim held its lock across the real
 * cuFileBufRegister, cuFileBufDeregister and cuFileDriverClose. A library
 * that calls back into the shim from another thread and joins it (the double
 * does, armed with fakecufile_call_back) deadlocked: the other thread's hook
 * waited for that lock. The same-thread re-entry guard cannot help there.
 * alarm() turns a deadlock into a failure. */
#include "cufile_test.h"

int main(void) {
    alarm(30);
    CUfileHandle_t fh = driver_and_file(2 * MiB, 9, NULL);
    char *mine = device(MiB), *apps = device(MiB);
    fakecufile_call_back(1);
    /* The shim registers mine (cuFileBufRegister calls back). */
    CHECK(cuFileRead(fh, mine, MiB, 0, 0) == MiB && same(mine, MiB, 0, 9));
    CHECK(fakecufile_registered(mine) == MiB && fakecufile_called_back() == 1);
    /* The application's own register and deregister. */
    CHECK(cuFileBufRegister(apps, MiB, 0).err == CU_FILE_SUCCESS);
    CHECK(cuFileRead(fh, apps, MiB, MiB, 0) == MiB && same(apps, MiB, MiB, 9));
    CHECK(cuFileBufDeregister(apps).err == CU_FILE_SUCCESS && fakecufile_called_back() == 3);
    /* The application registers what the shim registered: the shim's is
     * released first (cuFileBufDeregister calls back), then registered. */
    CHECK(cuFileBufRegister(mine, MiB, 0).err == CU_FILE_SUCCESS);
    CHECK(fakecufile_called_back() == 5 && fakecufile_register_failures() == 0);
    CHECK(cuFileBufDeregister(mine).err == CU_FILE_SUCCESS);
    CHECK(cuFileRead(fh, mine, MiB, MiB, 0) == MiB && fakecufile_registered(mine) == MiB,
          "registered by the shim again");
    /* Close: the shim releases its own, the library closes (both call back). */
    int before = fakecufile_called_back();
    CHECK(cuFileDriverClose_v2().err == CU_FILE_SUCCESS);
    CHECK(fakecufile_called_back() == before + 2, "%d", fakecufile_called_back() - before);
    CHECK(fakecufile_nregistered() == 0 && fakecufile_close_failures() == 0);
    CHECK(fakecufile_register_failures() == 0);
    PASS();
}
