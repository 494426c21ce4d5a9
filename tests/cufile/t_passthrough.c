/* What the shim does not serve reaches cuFile unchanged, with cuFile's
 * answers: ordinary host memory (staged), invalid arguments, unknown
 * handles, a closed driver. */
#include "cufile_test.h"

int main(void) {
    /* Before cuFileDriverOpen: the library's own error. */
    char *h = pinned(MiB);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    int fd = make_file("/dev/shm", 2 * MiB, 4);
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    CHECK(cuFileHandleRegister(&fh, &d).err == CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK(cuFileBufRegister(h, MiB, 0).err == CU_FILE_DRIVER_NOT_INITIALIZED);
    OPEN_DRIVER();
    fh = handle_of(fd);
    CUfileHandle_t again = NULL;
    CHECK(cuFileHandleRegister(&again, &d).err == CU_FILE_HANDLE_ALREADY_REGISTERED);
    d.type = 7;
    CHECK(cuFileHandleRegister(&again, &d).err == CU_FILE_INVALID_FILE_TYPE);
    /* Ordinary memory: staged by cuFile. */
    char *m = malloc(MiB);
    CHECK(cuFileRead(fh, m, MiB, 0, 0) == MiB && same(m, MiB, 0, 4));
    CHECK(fakecufile_staged() == MiB && stat_of("cufile_passthrough") == 1);
    free(m);
    /* Invalid arguments into pinned memory: cuFile's errors. */
    CHECK(cuFileRead(fh, NULL, MiB, 0, 0) == -CU_FILE_INVALID_VALUE);
    CHECK(cuFileRead(fh, h, MiB, -1, 0) == -CU_FILE_INVALID_VALUE);
    CHECK(cuFileRead(fh, h, 4096, 0, -4096) == -CU_FILE_INVALID_VALUE);
    CHECK(cuFileRead(fh, h, 0, 0, 0) == 0);
    /* A handle cuFile does not know. */
    int bogus;
    CHECK(cuFileRead((CUfileHandle_t)&bogus, h, 4096, 0, 0) == -CU_FILE_HANDLE_NOT_REGISTERED);
    /* Pinned, but not wholly: [h + 512K, +1M) runs past the block. */
    long long staged = fakecufile_staged(), direct = stat_of("cufile_direct_host");
    CHECK(cuFileRead(fh, h, MiB, 0, 0) == MiB && stat_of("cufile_direct_host") == direct + 1);
    /* A closed fd under a registered handle: cuFile's answer (-1, EBADF). */
    int fd2 = make_file("/dev/shm", MiB, 4);
    CUfileHandle_t fh2 = handle_of(fd2);
    close(fd2);
    errno = 0;
    CHECK(cuFileRead(fh2, h, 4096, 0, 0) == -1 && errno == EBADF);
    CHECK(stat_of("cufile_direct_host") == direct + 1 && fakecufile_staged() == staged,
          "nothing staged, nothing done by the shim");
    cuFileHandleDeregister(fh2);
    /* After the driver is closed: handles are gone, cuFile says so. */
    CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS);
    CHECK(cuFileRead(fh, h, 4096, 0, 0) == -CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK(cuFileDriverClose().err == CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK(stat_of("cufile_direct_host") == direct + 1);
    PASS();
}
