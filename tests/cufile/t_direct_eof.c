/* Regression (cufile_direct_eof_keeps_bytes): an O_DIRECT read that runs past
 * end of file zero-fills the buffer beyond the bytes it returns. The shim's
 * direct read into pinned memory returned the right count but had cleared the
 * caller's bytes after it, which cuFile never touches. */
#include "cufile_test.h"

int main(void) {
    OPEN_DRIVER();
    const char *dirs[] = {"/tmp", "/dev/shm"};
    char *buf = pinned(1 << 20);
    for (int d = 0; d < 2; d++) {
        int wfd = make_file(dirs[d], 65536 + 300, 9);
        int fd = reopen(wfd, O_RDONLY | O_DIRECT);
        CUfileHandle_t fh = handle_of(fd);
        const off_t offs[] = {65536, 61440, 0};
        for (int i = 0; i < 3; i++) {
            memset(buf, 0x77, 1 << 20);
            size_t want = (size_t)(65536 + 300 - offs[i]);
            ssize_t r = cuFileRead(fh, buf, 1 << 19, offs[i], 4096);
            CHECK(r == (ssize_t)want, "%s off %lld: %zd", dirs[d], (long long)offs[i], r);
            CHECK(same(buf + 4096, want, (size_t)offs[i], 9));
            for (size_t j = 4096 + want; j < (1 << 20); j++)
                CHECK(buf[j] == 0x77, "%s off %lld: byte %zu past the data changed", dirs[d],
                      (long long)offs[i], j - 4096);
            CHECK(buf[4095] == 0x77);
        }
        CHECK(cuFileRead(fh, buf, 4096, 1 << 20, 0) == 0, "past end of file: 0");
        cuFileHandleDeregister(fh);
        close(fd);
        close(wfd);
    }
    CHECK(fakecufile_staged() == 0 && stat_of("cufile_direct_host") == 8);
    PASS();
}
