/* For t_rtld_local: a library linked against libcufile (and libcuda), loaded
 * RTLD_LOCAL as every Python extension is. */
#include "cufile_test.h"

int user_run(void) {
    if (cuFileDriverOpen().err != CU_FILE_SUCCESS) return 1;
    int fd = make_file("/dev/shm", 1 << 20, 13);
    CUfileHandle_t fh = handle_of(fd);
    char *h = pinned(1 << 20);
    if (cuFileRead(fh, h, 1 << 20, 0, 0) != 1 << 20 || !same(h, 1 << 20, 0, 13)) return 2;
    if (stat_of("cufile_direct_host") != 1 || fakecufile_staged() != 0) return 3;
    char *d = device(1 << 20); /* the driver's attributes come from a local libcuda */
    if (cuFileRead(fh, d, 1 << 19, 0, 1 << 19) != 1 << 19 || !same(d + (1 << 19), 1 << 19, 0, 13))
        return 4;
    if (fakecufile_registered(d) != 1 << 20 || stat_of("cufile_autoregistered") != 1) return 5;
    if (cuFileDriverClose().err != CU_FILE_SUCCESS || fakecufile_close_failures()) return 6;
    return 0;
}
