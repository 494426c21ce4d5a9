/* The cuFile layer's GPU check (tests/gpu/run.sh runs it with and without the
 * shim): with the machine's libcufile (compat mode when nvidia-fs is absent), a
 * 1 GiB file (by default) read by cuFileRead in 64 MiB calls into pinned host memory
 * (cudaMallocHost: served by the shim when it is preloaded) and into a device
 * buffer (cudaMalloc), each verified byte for byte; prints the best of three
 * passes of each in GB/s. Usage: cufile_check FILE [MIB] (FILE created if
 * missing; MIB, default 1024, a multiple of 64: the rehearsal reads less). */
#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cudaMalloc(void **p, size_t n);
int cudaMallocHost(void **p, size_t n);
int cudaFree(void *p);
int cudaFreeHost(void *p);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind); /* 2: device to host */

#define CHUNK ((size_t)64 << 20)

static size_t total = (size_t)1 << 30; /* bytes read, in CHUNK pieces */

static unsigned char pat(size_t i) {
    return (unsigned char)((i * 2654435761u) >> 13);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int verify(const unsigned char *b, const char *what) {
    for (size_t i = 0; i < total; i++)
        if (b[i] != pat(i)) {
            printf("FAIL %s: byte %zu is %u, expected %u\n", what, i, b[i], pat(i));
            return 1;
        }
    return 0;
}

static double best_read(CUfileHandle_t fh, void *buf) {
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t = now();
        for (size_t off = 0; off < total; off += CHUNK) {
            ssize_t r = cuFileRead(fh, buf, CHUNK, (off_t)off, (off_t)off);
            if (r != (ssize_t)CHUNK) {
                printf("FAIL cuFileRead at %zu: %zd\n", off, r);
                return -1;
            }
        }
        t = now() - t;
        if (t < best) best = t;
    }
    return (double)total / best / 1e9;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* to a file: a crash keeps what was printed */
    if (argc < 2) {
        printf("FAIL usage: cufile_check FILE [MIB]\n");
        return 2;
    }
    if (argc > 2) total = (size_t)strtoul(argv[2], NULL, 10) << 20;
    if (!total || total % CHUNK) {
        printf("FAIL MIB must be a positive multiple of 64\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0 || (size_t)st.st_size != total) {
        int w = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        unsigned char *b = malloc(CHUNK);
        for (size_t off = 0; off < total; off += CHUNK) {
            for (size_t i = 0; i < CHUNK; i++) b[i] = pat(off + i);
            if (pwrite(w, b, CHUNK, (off_t)off) != (ssize_t)CHUNK) return 1;
        }
        fsync(w);
        close(w);
        free(b);
    }
    void *host = NULL, *dev = NULL;
    if (cudaMallocHost(&host, total) || cudaMalloc(&dev, total)) {
        printf("FAIL cudaMallocHost/cudaMalloc\n");
        return 1;
    }
    CUfileError_t e = cuFileDriverOpen();
    if (e.err) printf("note cuFileDriverOpen: %d (cuda %d)\n", e.err, e.cu_err);
    int fd = open(argv[1], O_RDONLY | O_DIRECT);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    e = cuFileHandleRegister(&fh, &d);
    if (fd < 0 || e.err) {
        printf("FAIL cuFileHandleRegister: %d (cuda %d)\n", e.err, e.cu_err);
        return 1;
    }
    memset(host, 0, total);
    double h = best_read(fh, host);
    if (h < 0 || verify(host, "host")) return 1;
    double g = best_read(fh, dev);
    memset(host, 0, total);
    if (g < 0 || cudaMemcpy(host, dev, total, 2) || verify(host, "device")) return 1;
    printf("cufile_host_GBps %.3f GB/s\n", h);
    printf("cufile_device_GBps %.3f GB/s\n", g);
    cuFileHandleDeregister(fh);
    cuFileDriverClose();
    close(fd);
    cudaFree(dev);
    cudaFreeHost(host);
    return 0;
}
