/* Pinned host memory is read and written by the shim, straight into the
 * buffer: the double's staging count stays zero, data are exact, on tmpfs and
 * ext4, with and without O_DIRECT on the application's fd, aligned or not. */
#include "cufile_test.h"

#include <sys/stat.h>

static void run(const char *dir, int direct_flag) {
    size_t fsize = 8 * MiB + 777;
    int wfd = make_file(dir, fsize, 1);
    int fd = reopen(wfd, O_RDWR | direct_flag);
    CUfileHandle_t fh = handle_of(fd);
    char *buf = pinned(9 * MiB);
    long long staged0 = fakecufile_staged(), direct0 = stat_of("cufile_direct_host");
    int reads0 = fakecufile_count("cuFileRead");
    /* (size, file offset, buffer offset): aligned; congruent misalignment
     * (head, middle, tail); incongruent (all buffered); tiny. */
    const size_t cases[][3] = {{4 * MiB, 0, 0},        {MiB + 37, 100, 100}, {MiB, 5, 3},
                               {3 * MiB + 1, 4095, 1}, {1, 8 * MiB, 0},      {511, 513, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = cases[i][0], off = cases[i][1], boff = cases[i][2];
        memset(buf, 0, 9 * MiB);
        ssize_t r = cuFileRead(fh, buf, n, (off_t)off, (off_t)boff);
        CHECK(r == (ssize_t)n, "%s direct=%d case %zu: read %zd", dir, !!direct_flag, i, r);
        CHECK(same(buf + boff, n, off, 1), "%s case %zu: data", dir, i);
        CHECK(buf[boff ? boff - 1 : n] == 0, "%s case %zu: wrote outside the range", dir, i);
    }
    CHECK(fakecufile_staged() == staged0, "nothing staged by cuFile");
    CHECK(fakecufile_count("cuFileRead") == reads0, "the real cuFileRead was not called");
    CHECK(stat_of("cufile_direct_host") == direct0 + 6);
    if (direct_flag) {
        int d = 0;
        CHECK(fds_on_file(fd, &d) == 3 && d == 1,
              "one buffered fd of the shim's for misaligned pieces");
    }
    /* Writes: a pattern of seed 2 at a misaligned offset, read back by pread. */
    for (size_t i = 0; i < 3 * MiB + 3; i++) buf[i] = (char)pat(i + 4093, 2);
    ssize_t w = cuFileWrite(fh, buf, 3 * MiB, 4096 + 1000, 3);
    CHECK(w == 3 * MiB, "write %zd", w);
    char *check = malloc(3 * MiB);
    CHECK(pread(wfd, check, 3 * MiB, 4096 + 1000) == 3 * MiB);
    for (size_t i = 0; i < 3 * MiB; i++) CHECK(check[i] == buf[3 + i], "write byte %zu", i);
    CHECK(pread(wfd, check, 1000, 4096) == 1000 && same(check, 1000, 4096, 1), "before kept");
    free(check);
    CHECK(fakecufile_staged() == staged0 && fakecufile_count("cuFileWrite") == 0);
    cuFileHandleDeregister(fh);
    CHECK(fds_on_file(fd, NULL) == 2, "the shim's fd is closed with the handle");
    ((int (*)(void *))shim("dsp_free"))(buf);
    close(fd);
    close(wfd);
}

int main(void) {
    OPEN_DRIVER();
    run("/dev/shm", 0);
    run("/dev/shm", O_DIRECT);
    run("/tmp", 0);
    run("/tmp", O_DIRECT);
    CHECK(stat_of("cufile_direct_bytes") > 4 * 24 * MiB / 2);
    CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS);
    PASS();
}
