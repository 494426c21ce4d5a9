/* The cuFile layer's benchmark, against the libcufile test double (compat
 * mode: POSIX I/O into its bounce buffer, then a copy):
 *   cuFileRead of a whole file in 16 MiB calls into memory the shim pinned,
 *   through the shim (read straight into the buffer) against the double
 *   reached directly (its fake_cufile_read_direct, a name the shim does not
 *   serve, so the shim is bypassed: it stages), in the same process, alternating, on tmpfs
 * (/dev/shm) and ext4
 *   (/tmp), with the application's fd buffered (page cache warm) or O_DIRECT;
 *   and into a "device" buffer the shim registers once against the staged
 *   read.
 * Run as `cufile_bench LIBDSPRELOAD [--quick] [--json FILE]`: it re-executes
 * itself under LD_PRELOAD. Prints one Markdown table of medians and ratios. */
#define DSP_CUFILE_PROTOTYPES
#include "cufile_types.h"
#include "schema.h"
#include "timing.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The driver's device and context calls: cuMemAlloc, as in the real driver,
 * wants the driver initialised and a context current in the calling thread. */
typedef struct CUctx_st *CUcontext;
CUresult cuDeviceGet(int *dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int dev);
CUresult cuCtxSetCurrent(CUcontext ctx);

#define MiB   ((size_t)1 << 20)
#define CHUNK (16 * MiB)

typedef ssize_t (*read_fn)(CUfileHandle_t, void *, size_t, off_t, off_t);

static size_t fsize;

static int make_file(const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/dsp_cufile_bench_XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    unlink(path);
    char *b = malloc(CHUNK);
    for (size_t i = 0; i < CHUNK; i++) b[i] = (char)(i * 31 + (i >> 12));
    for (size_t off = 0; off < fsize; off += CHUNK)
        if (pwrite(fd, b, CHUNK, (off_t)off) != (ssize_t)CHUNK) return -1;
    free(b);
    fsync(fd);
    return fd;
}

static CUfileHandle_t handle_of(int fd) {
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    return cuFileHandleRegister(&fh, &d).err == CU_FILE_SUCCESS ? fh : NULL;
}

/* Seconds to read the whole file in CHUNK calls; -1 on a short read. */
static double pass(read_fn rd, CUfileHandle_t fh, char *buf) {
    double t = now();
    for (size_t off = 0; off < fsize; off += CHUNK)
        if (rd(fh, buf, CHUNK, (off_t)off, 0) != (ssize_t)CHUNK) return -1;
    return now() - t;
}

/* bbuf: the baseline's buffer (a device buffer the shim registered would not
 * be staged by the double either). */
static int measure(const char *name, read_fn shim, read_fn base, CUfileHandle_t fh, char *buf,
                   char *bbuf, int reps) {
    double s[32], b[32];
    if (pass(shim, fh, buf) < 0 || pass(base, fh, bbuf) < 0) return -1; /* warm */
    for (int r = 0; r < reps; r++) {
        double ts = pass(shim, fh, buf), tb = pass(base, fh, bbuf);
        if (ts <= 0 || tb <= 0) return -1;
        s[r] = (double)fsize / ts / 1e9;
        b[r] = (double)fsize / tb / 1e9;
    }
    double ms = median(s, reps), mb = median(b, reps); /* sorted: [0] min */
    char id[64], what[128];
    size_t k = (size_t)snprintf(id, sizeof id, "cufile.");
    for (const char *c = name; *c && k + 2 < sizeof id; c++) /* runs of others: one '_' */
        if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))
            id[k++] = *c;
        else if (*c >= 'A' && *c <= 'Z')
            id[k++] = (char)(*c - 'A' + 'a');
        else if (id[k - 1] != '_' && id[k - 1] != '.')
            id[k++] = '_';
    while (id[k - 1] == '_') k--;
    id[k] = 0;
    snprintf(what, sizeof what, "cuFileRead %s", name);
    struct schema_fig *f = schema_figure(id, what, "GB/s", ms, s[0], s[reps - 1], reps, 1);
    schema_baseline(f, "the libcufile double without the shim (staged)", mb, b[0], b[reps - 1]);
    printf("| %s | %.2f GB/s (%.2f - %.2f) | %.2f GB/s (%.2f - %.2f) | %.2fx |\n", name, ms, s[0],
           s[reps - 1], mb, b[0], b[reps - 1], ms / mb);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    int quick;
    const char *json;
    if (schema_args(argc, argv, 2, "--json", "cufile_bench LIBDSPRELOAD [--quick] [--json FILE]",
                    &quick, &json) != 0)
        return 2;
    if (!getenv("DSPRELOAD_BENCH_SIDE")) {
        setenv("LD_PRELOAD", argv[1], 1);
        setenv("DSPRELOAD_BENCH_SIDE", "1", 1);
        execv("/proc/self/exe", argv);
        perror("execv");
        return 1;
    }
    void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "dsp_alloc");
    void *lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_NOLOAD);
    /* Not dlsym(lib, "cuFileRead"): the shim's dlsym hook answers that with
     * its own hook, as it does for KvikIO. */
    read_fn base = lib ? (read_fn)dlsym(lib, "fake_cufile_read_direct") : NULL;
    if (!alloc || !base || base == (read_fn)cuFileRead) {
        fprintf(stderr, "cufile_bench: the shim or the double is missing\n");
        return 1;
    }
    fsize = (quick ? 64 : 256) * MiB;
    int reps = quick ? 5 : 15;
    char *buf = alloc(CHUNK);
    CUdeviceptr dev = 0, dev2 = 0;
    int ordinal = 0;
    CUcontext ctx = NULL;
    if (!buf || cuFileDriverOpen().err || cuInit(0) || cuDeviceGet(&ordinal, 0) ||
        cuDevicePrimaryCtxRetain(&ctx, ordinal) || cuCtxSetCurrent(ctx) ||
        cuMemAlloc_v2(&dev, CHUNK) || cuMemAlloc_v2(&dev2, CHUNK))
        return 1;
    memset(buf, 1, CHUNK);
    memset((void *)(uintptr_t)dev, 1, CHUNK);
    memset((void *)(uintptr_t)dev2, 1, CHUNK);
    printf("| cuFileRead, %zu MiB file in 16 MiB calls (test double) | shim (min - max) | without "
           "(min - max) | ratio |\n"
           "|---|---|---|---|\n",
           fsize / MiB);
    int n = 0;
    const char *dirs[2] = {"/dev/shm", "/tmp"};
    const char *fs[2] = {"tmpfs", "ext4"};
    for (int d = 0; d < 2; d++) {
        int fd = make_file(dirs[d]);
        int dfd = -1;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (fd >= 0) dfd = open(path, O_RDONLY | O_DIRECT);
        CUfileHandle_t fh = fd >= 0 ? handle_of(fd) : NULL, dfh = dfd >= 0 ? handle_of(dfd) : NULL;
        if (!fh || !dfh) return 1;
        static char names[8][96];
        snprintf(names[n], sizeof names[n], "pinned host, %s, buffered fd (page cache)", fs[d]);
        if (measure(names[n], cuFileRead, base, fh, buf, buf, reps) == 0) n++;
        snprintf(names[n], sizeof names[n], "pinned host, %s, O_DIRECT fd", fs[d]);
        if (measure(names[n], cuFileRead, base, dfh, buf, buf, reps) == 0) n++;
        if (d == 0) {
            snprintf(names[n], sizeof names[n], "device buffer (registered once), %s", fs[d]);
            if (measure(names[n], cuFileRead, base, fh, (char *)(uintptr_t)dev,
                        (char *)(uintptr_t)dev2, reps) == 0)
                n++;
        }
        cuFileHandleDeregister(fh);
        cuFileHandleDeregister(dfh);
        close(fd);
        close(dfd);
    }
    if (json && schema_write(json, "cufile_bench", quick) != 0) return 1;
    return n == 5 ? 0 : 1;
}
