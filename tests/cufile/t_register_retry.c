/* Review finding: an automatic registration that failed because the driver
 * was not open yet was remembered as failed for good, so the allocation was
 * staged by cuFile even after cuFileDriverOpen. Such failures are now not
 * remembered, and cuFileDriverOpen forgets the others. */
#include "cufile_test.h"

int main(void) {
    int fd = make_file("/dev/shm", 4 * MiB, 3);
    char *dev = device(2 * MiB);
    /* Before the driver is open: cuFile's own answer. */
    CUfileHandle_t none = NULL;
    ssize_t r = cuFileRead(none, dev, MiB, 0, 0);
    CHECK(r < 0, "read before open: %zd", r);
    OPEN_DRIVER();
    CUfileHandle_t fh = handle_of(fd);
    long long staged = fakecufile_staged();
    CHECK(cuFileRead(fh, dev, MiB, 0, 0) == MiB && same(dev, MiB, 0, 3));
    CHECK(stat_of("cufile_autoregistered") == 1, "registered after the driver opened");
    CHECK(fakecufile_registered(dev) == 2 * MiB);
    CHECK(fakecufile_staged() == staged, "not staged");
    PASS();
}
