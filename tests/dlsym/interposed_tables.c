/* The tables preload/interposed.h generates that are searched with bsearch:
 * the dlsym hook's (preload/dlsym.c, every hook) and the cuGetProcAddress
 * table (preload/cuda_driver.c, the driver's hooks by base name). Expanded
 * here by the same generators, in the same order, each must be in strictly
 * increasing strcmp order: a row out of place would make bsearch miss hooks
 * (JAX and KvikIO would silently get the library's own functions).
 *
 * With the argument "names": prints every hook's name, one a line, for
 * tests/preload/exports.sh to compare with the library's exports. */
#include "interposed.h"

#include <stdio.h>
#include <string.h>

#define DSP_HOOK_ENTRY(lib, name) #name,
static const char *const hooked[] = {DSP_HOOKED};
#define DSP_PROC_ENTRY(name, newer, since) #name,
static const char *const procs[] = {DSP_PROCS};

static int sorted(const char *what, const char *const *names, size_t n) {
    int ok = 1;
    for (size_t i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) >= 0) {
            fprintf(stderr, "%s: %s comes before %s (preload/interposed.h)\n", what, names[i - 1],
                    names[i]);
            ok = 0;
        }
    return ok;
}

int main(int argc, char **argv) {
    size_t nhooked = sizeof hooked / sizeof *hooked, nprocs = sizeof procs / sizeof *procs;
    if (argc > 1 && !strcmp(argv[1], "names")) {
        for (size_t i = 0; i < nhooked; i++) puts(hooked[i]);
        return 0;
    }
    int ok = sorted("the dlsym hook's table", hooked, nhooked) &
             sorted("the cuGetProcAddress table", procs, nprocs);
    if (ok) printf("%zu hooks and %zu cuGetProcAddress names in order\n", nhooked, nprocs);
    return !ok;
}
