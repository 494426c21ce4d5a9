/* Review finding: cuFileDriverClose by one user of the process, while another
 * still had the driver open (cuFile counts opens), made the shim forget every
 * handle and application registration: pinned reads were staged again. They
 * now end with the last close only. */
#include "cufile_test.h"

int main(void) {
    OPEN_DRIVER();
    OPEN_DRIVER(); /* a second user */
    int fd = make_file("/dev/shm", 2 * MiB, 5);
    CUfileHandle_t fh = handle_of(fd);
    char *h = pinned(MiB);
    char *app = device(MiB);
    CHECK(cuFileBufRegister(app, MiB, 0).err == CU_FILE_SUCCESS);
    CHECK(cuFileRead(fh, h, MiB, 0, 0) == MiB && same(h, MiB, 0, 5));
    long long staged = fakecufile_staged();
    CHECK(stat_of("cufile_direct_host") == 1);
    CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS); /* one user leaves */
    CHECK(cuFileRead(fh, h, MiB, MiB, 0) == MiB && same(h, MiB, MiB, 5));
    CHECK(stat_of("cufile_direct_host") == 2, "still read directly");
    CHECK(fakecufile_staged() == staged, "not staged");
    /* The application's registration is still its own. */
    CHECK(cuFileBufRegister(app, MiB, 0).err == CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK(cuFileBufDeregister(app).err == CU_FILE_SUCCESS);
    CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS); /* the last one */
    CHECK(cuFileRead(fh, h, MiB, 0, 0) < 0, "the handle ended with the driver");
    PASS();
}
