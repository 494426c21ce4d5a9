/* A KvikIO-style client (issue 15): libcufile.so.0 and libcuda.so.1 opened
 * with dlopen RTLD_LOCAL and every function looked up with dlsym on those
 * handles, which symbol interposition never sees (kvikio cpp/src/shim/).
 * The lookups give the shim's hooks: KvikIO's bounce buffers
 * (cuMemHostAlloc(PORTABLE), 20 cycles of 64 MiB) come from the pool, its
 * page-aligned ones (aligned_alloc + cuMemHostRegister) still reach the
 * driver, and a read into pinned host memory is served straight (nothing
 * staged by cuFile, the real cuFileRead not called). With "off"
 * (DSP_CUFILE=off): the cuFile lookups give the library's own functions and
 * cuFile does the work. */
#include "cufile_test.h"
#include "interposed.h"

#include <dlfcn.h>

static void *must(void *h, const char *name) {
    void *f = dlsym(h, name);
    CHECK(f, "dlsym(%s): %s", name, dlerror());
    return f;
}

int main(int argc, char **argv) {
    int off = argc > 1 && !strcmp(argv[1], "off");
    void *h = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    CHECK(h, "dlopen: %s", dlerror());
    CHECK(!dlsym(RTLD_DEFAULT, "fakecufile_count"), "loaded RTLD_LOCAL");
    CUfileError_t (*open_driver)(void) = (CUfileError_t(*)(void))must(h, "cuFileDriverOpen");
    CUfileError_t (*close_driver)(void) = (CUfileError_t(*)(void))must(h, "cuFileDriverClose");
    CUfileError_t (*handle_register)(CUfileHandle_t *, CUfileDescr_t *) =
        (CUfileError_t(*)(CUfileHandle_t *, CUfileDescr_t *))must(h, "cuFileHandleRegister");
    void (*handle_deregister)(CUfileHandle_t) =
        (void (*)(CUfileHandle_t))must(h, "cuFileHandleDeregister");
    ssize_t (*file_read)(CUfileHandle_t, void *, size_t, off_t, off_t) =
        (ssize_t(*)(CUfileHandle_t, void *, size_t, off_t, off_t))must(h, "cuFileRead");
    int (*count)(const char *) = (int (*)(const char *))must(h, "fakecufile_count");
    long long (*staged)(void) = (long long (*)(void))must(h, "fakecufile_staged");

    CHECK((file_read == (void *)dlsym(RTLD_DEFAULT, "cuFileRead")) == !off,
          "the shim's hook, or with off the library's own function");
    /* Every cuFile hook, from the table of interposed functions. */
#define DSP_HOOK_ENTRY(lib, name) #name,
    static const char *const names[] = {DSP_HOOKS_OF(cufile)};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        CHECK((dlsym(h, names[i]) == dlsym(RTLD_DEFAULT, names[i])) == !off, "%s", names[i]);
    if (!off) {
        /* The bounce buffers, through libcuda's handle. */
        void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        CHECK(cu, "dlopen libcuda: %s", dlerror());
        int (*cu_init)(unsigned) = (int (*)(unsigned))must(cu, "cuInit");
        int (*retain)(void **, int) = (int (*)(void **, int))must(cu, "cuDevicePrimaryCtxRetain");
        int (*set)(void *) = (int (*)(void *))must(cu, "cuCtxSetCurrent");
        int (*host_alloc)(void **, size_t, unsigned) =
            (int (*)(void **, size_t, unsigned))must(cu, "cuMemHostAlloc");
        int (*free_host)(void *) = (int (*)(void *))must(cu, "cuMemFreeHost");
        int (*host_register)(void *, size_t, unsigned) =
            (int (*)(void *, size_t, unsigned))must(cu, "cuMemHostRegister_v2");
        int (*host_unregister)(void *) = (int (*)(void *))must(cu, "cuMemHostUnregister");
        int (*cu_count)(const char *) = (int (*)(const char *))must(cu, "fakecu_count");
        void *ctx = NULL;
        CHECK(cu_init(0) == 0 && retain(&ctx, 0) == 0 && set(ctx) == 0);
        for (int i = 0; i < 20; i++) {
            void *b = NULL;
            CHECK(host_alloc(&b, 64 * MiB, 1 /* PORTABLE */) == 0 && is_pinned(b, 64 * MiB));
            ((char *)b)[i] = 1;
            CHECK(free_host(b) == 0);
        }
        CHECK(cu_count("cuMemHostAlloc") == 0, "the bounce buffers never reached the driver");
        void *aligned = aligned_alloc(4096, 4 * MiB);
        CHECK(aligned && host_register(aligned, 4 * MiB, 1) == 0);
        CHECK(cu_count("cuMemHostRegister_v2") == 2, "the program's own memory reached it: %d",
              cu_count("cuMemHostRegister_v2"));
        CHECK(host_unregister(aligned) == 0);
        free(aligned);
    }
    CHECK(open_driver().err == CU_FILE_SUCCESS);
    size_t n = 4 * MiB;
    int wfd = make_file("/tmp", n, 3);
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = wfd;
    CUfileHandle_t fh = NULL;
    CHECK(handle_register(&fh, &d).err == CU_FILE_SUCCESS && fh);
    char *buf = pinned(n);
    CHECK(file_read(fh, buf, n, 0, 0) == (ssize_t)n);
    CHECK(same(buf, n, 0, 3), "the data");
    if (off) {
        CHECK(count("cuFileRead") == 1 && stat_of("cufile_direct_host") == 0);
    } else {
        CHECK(count("cuFileRead") == 0, "the real cuFileRead was not called");
        CHECK(staged() == 0, "nothing staged by cuFile");
        CHECK(stat_of("cufile_direct_host") == 1 && stat_of("dlsym_hooked") >= 5);
    }
    handle_deregister(fh);
    CHECK(close_driver().err == CU_FILE_SUCCESS);
    close(wfd);
    PASS();
}
