/* Device buffers are registered once, whole, by the shim: the double reads
 * into them without staging; the cache keeps DSP_CUFILE_REGISTER_MAX (20M
 * here), releasing the least recently used first; an allocation larger than
 * that is left alone; a freed and reallocated range is registered anew. */
#include "cufile_test.h"

static void read_into(CUfileHandle_t fh, char *dev, size_t n, off_t off, off_t boff) {
    ssize_t r = cuFileRead(fh, dev, n, off, boff);
    CHECK(r == (ssize_t)n, "read %zd", r);
    CHECK(same(dev + boff, n, (size_t)off, 3));
}

int main(void) {
    int fd;
    CUfileHandle_t fh = driver_and_file(16 * MiB, 3, &fd);
    char *a = device(8 * MiB), *b = device(8 * MiB), *c = device(8 * MiB);
    /* A read into the middle of an allocation registers all of it. */
    read_into(fh, a + 4096, MiB, 12345, 100);
    CHECK(fakecufile_registered(a) == 8 * MiB, "whole allocation registered");
    CHECK(fakecufile_staged() == 0 && fakecufile_direct() == MiB, "read without staging");
    CHECK(stat_of("cufile_autoregistered") == 1);
    read_into(fh, a, 2 * MiB, 0, 5 * MiB);
    CHECK(fakecufile_count("cuFileBufRegister") == 1, "registered once");
    /* Writes from device memory use it too. */
    CHECK(cuFileWrite(fh, a, MiB, 15 * MiB, 5 * MiB) == MiB && fakecufile_staged() == 0);
    char *back = malloc(MiB);
    CHECK(pread(fd, back, MiB, 15 * MiB) == MiB && same(back, MiB, 0, 3));
    free(back);
    /* 20M hold two 8M allocations: the least recently used goes first. */
    read_into(fh, b, MiB, 0, 0);
    read_into(fh, a, MiB, 0, 0); /* a is now the most recent */
    read_into(fh, c, MiB, 0, 0);
    CHECK(fakecufile_registered(b) == 0, "b, least recently used, released");
    CHECK(fakecufile_registered(a) == 8 * MiB && fakecufile_registered(c) == 8 * MiB);
    CHECK(fakecufile_count("cuFileBufDeregister") == 1);
    CHECK(fakecufile_staged() == 0);
    /* Larger than the cache: passed through unchanged, staged by cuFile. */
    char *big = device(32 * MiB);
    read_into(fh, big, MiB, 0, 0);
    CHECK(fakecufile_registered(big) == 0 && fakecufile_staged() == MiB);
    long long pass = stat_of("cufile_passthrough");
    CHECK(pass >= 1);
    /* Freed and allocated again at the same address (a new buffer id): the
     * stale registration is released and the new allocation registered. */
    CHECK(cuMemFree_v2((CUdeviceptr)(uintptr_t)c) == CUDA_SUCCESS);
    char *c2 = device(8 * MiB);
    CHECK(c2 == c, "the double reuses the range");
    int dereg = fakecufile_count("cuFileBufDeregister");
    int reg = fakecufile_count("cuFileBufRegister");
    read_into(fh, c2, MiB, MiB, 0);
    CHECK(fakecufile_count("cuFileBufDeregister") == dereg + 1, "stale one released");
    CHECK(fakecufile_count("cuFileBufRegister") == reg + 1 && fakecufile_registered(c2) == 8 * MiB);
    CHECK(fakecufile_register_failures() == 0, "never registered twice");
    /* A read running past its allocation is cuFile's to refuse. */
    CHECK(cuFileRead(fh, a, 2 * MiB, 0, 7 * MiB) == -CU_FILE_INVALID_VALUE);
    CHECK(cuFileRead(fh, big, 2 * MiB, 0, 31 * MiB) == -CU_FILE_INVALID_VALUE);
    CHECK(fakecufile_count("cuFileBufRegister") == reg + 1);
    cuFileHandleDeregister(fh);
    CHECK(cuFileDriverClose_v2().err == CU_FILE_SUCCESS);
    CHECK(fakecufile_nregistered() == 0 && fakecufile_close_failures() == 0);
    PASS();
}
