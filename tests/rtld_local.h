/* For the t_rtld_local programs of tests/cuda and tests/cufile: a module
 * (argv[1]) loaded RTLD_LOCAL after start-up, as every Python extension is,
 * calls a library the program itself does not link; the shim's hooks
 * interpose, and must find the real functions in a library dlsym(RTLD_NEXT)
 * cannot see. */
#ifndef DSP_TESTS_RTLD_LOCAL_H
#define DSP_TESTS_RTLD_LOCAL_H

#include <dlfcn.h>
#include <stdio.h>

/* 0 where the program runs under LD_PRELOAD=libdspreload.so with the module's
 * path, and the double's symbol local_only is not in the global scope (what
 * the test needs); else 1, with the FAIL line printed. */
static inline int rtld_local_ready(int argc, const char *local_only, const char *library) {
    if (argc < 2 || !dlsym(RTLD_DEFAULT, "dsp_version")) {
        fprintf(stderr, "FAIL: run under LD_PRELOAD with the module's path\n");
        return 1;
    }
    if (dlsym(RTLD_DEFAULT, local_only)) {
        fprintf(stderr, "FAIL: %s is in the global scope; the test needs it local\n", library);
        return 1;
    }
    return 0;
}

/* Loads the module RTLD_LOCAL and runs its user_run: 0 with PASS printed, or
 * 1 with the FAIL line (the step user_run failed at). */
static inline int rtld_local_run(const char *module) {
    void *h = dlopen(module, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: %s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "user_run");
    int rc = run ? run() : 99;
    if (rc) {
        fprintf(stderr, "FAIL: user_run step %d\n", rc);
        return 1;
    }
    printf("PASS\n");
    return 0;
}

#endif
