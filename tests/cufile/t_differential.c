/* The shim's own I/O answers exactly as cuFile: for a grid of sizes, file
 * offsets and buffer offsets around end of file (short reads, reads past it),
 * a read into pinned memory (done by the shim) and into ordinary memory (done
 * by the double) return the same count and bytes; writes too, and errors
 * (EBADF on a read-only fd, writes to an O_WRONLY fd read back) match. */
#include "cufile_test.h"

#define KiB 1024u

static void compare(CUfileHandle_t fh, int wr, char *pin, char *plain, size_t n, off_t off,
                    off_t boff, const char *what) {
    memset(pin, 0x5a, 64 * KiB + 8192);
    memset(plain, 0x5a, 64 * KiB + 8192);
    long long direct0 = stat_of("cufile_direct_host");
    errno = 0;
    ssize_t a = wr ? cuFileWrite(fh, pin, n, off, boff) : cuFileRead(fh, pin, n, off, boff);
    int ea = errno;
    errno = 0;
    ssize_t b = wr ? cuFileWrite(fh, plain, n, off, boff) : cuFileRead(fh, plain, n, off, boff);
    int eb = errno;
    CHECK(a == b, "%s n=%zu off=%lld boff=%lld: shim %zd, cuFile %zd", what, n, (long long)off,
          (long long)boff, a, b);
    if (a < 0) CHECK(ea == eb, "%s: errno %d vs %d", what, ea, eb);
    CHECK(!memcmp(pin, plain, 64 * KiB + 8192), "%s n=%zu off=%lld: bytes differ", what, n,
          (long long)off);
    (void)direct0;
}

int main(void) {
    OPEN_DRIVER();
    const char *dirs[] = {"/dev/shm", "/tmp"};
    char *pin = pinned(64 * KiB + 8192);
    char *plain = malloc(64 * KiB + 8192);
    for (int d = 0; d < 2; d++) {
        for (int direct = 0; direct < 2; direct++) {
            size_t fsize = 40 * KiB + 300; /* end of file not on a block boundary */
            int wfd = make_file(dirs[d], fsize, 7);
            int fd = reopen(wfd, O_RDONLY | (direct ? O_DIRECT : 0));
            CUfileHandle_t fh = handle_of(fd);
            const size_t sizes[] = {1, 511, 4096, 8192 + 5, 40 * KiB + 300, 64 * KiB};
            const off_t offs[] = {0,
                                  1,
                                  512,
                                  4096,
                                  36 * KiB,
                                  40 * KiB,
                                  40 * KiB + 299,
                                  40 * KiB + 300,
                                  40 * KiB + 301,
                                  1 << 20};
            const off_t boffs[] = {0, 1, 512, 4096 + 3};
            long long direct0 = stat_of("cufile_direct_host");
            int calls_ = 0;
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
                for (size_t j = 0; j < sizeof offs / sizeof *offs; j++)
                    for (size_t k = 0; k < sizeof boffs / sizeof *boffs; k++) {
                        if (sizes[i] + (size_t)boffs[k] > 64 * KiB + 8192) continue;
                        compare(fh, 0, pin, plain, sizes[i], offs[j], boffs[k], dirs[d]);
                        calls_++;
                    }
            CHECK(stat_of("cufile_direct_host") == direct0 + calls_,
                  "every pinned read was the shim's");
            /* Writing through a read-only fd: cuFile's answer (-1, EBADF). */
            compare(fh, 1, pin, plain, 4096, 0, 0, "write to O_RDONLY");
            cuFileHandleDeregister(fh);
            close(fd);
            /* A write-only fd: writes land, reads fail alike. */
            fd = reopen(wfd, O_WRONLY | (direct ? O_DIRECT : 0));
            fh = handle_of(fd);
            compare(fh, 0, pin, plain, 4096, 0, 0, "read from O_WRONLY");
            for (size_t i = 0; i < 8192; i++) pin[i] = (char)i;
            CHECK(cuFileWrite(fh, pin, 8000, 100, 7) == 8000);
            char back[8000];
            CHECK(pread(wfd, back, 8000, 100) == 8000 && !memcmp(back, pin + 7, 8000));
            CHECK(cuFileWrite(fh, pin, 8000, (off_t)fsize + 5000, 0) == 8000, "extends the file");
            struct stat st;
            CHECK(fstat(wfd, &st) == 0 && st.st_size == (off_t)fsize + 13000);
            cuFileHandleDeregister(fh);
            close(fd);
            close(wfd);
        }
    }
    CHECK(fakecufile_staged() > 0, "the ordinary buffers went through cuFile");
    free(plain);
    PASS();
}
