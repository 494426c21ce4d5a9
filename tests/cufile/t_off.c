/* DSP_CUFILE=off: every call reaches cuFile untouched. */
#include "cufile_test.h"

int main(void) {
    CUfileHandle_t fh = driver_and_file(2 * MiB, 6, NULL);
    char *h = pinned(MiB), *dev = device(MiB);
    CHECK(cuFileRead(fh, h, MiB, 0, 0) == MiB && same(h, MiB, 0, 6));
    CHECK(cuFileRead(fh, dev, MiB, MiB, 0) == MiB && same(dev, MiB, MiB, 6));
    CHECK(fakecufile_staged() == 2 * MiB && fakecufile_count("cuFileRead") == 2);
    CHECK(fakecufile_count("cuFileBufRegister") == 0);
    CHECK(stat_of("cufile_direct_host") == 0 && stat_of("cufile_autoregistered") == 0 &&
          stat_of("cufile_passthrough") == 0);
    PASS();
}
