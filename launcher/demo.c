/* dspreload demo: runs the bundled workload (dspreload-demo) under the shim. */
#include "launcher.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int cmd_demo(int argc, char **argv, const char *lib) {
    if (argc > 0) return usage_error("demo: unexpected argument '%s'", argv[0]);
    char prog[PATH_MAX], self[PATH_MAX], cudart[PATH_MAX], cufile[PATH_MAX];
    snprintf(prog, sizeof prog, "%s/dspreload-demo", self_dir());
    snprintf(self, sizeof self, "%s/dspreload", self_dir());
    if (access(prog, X_OK) != 0) {
        fprintf(stderr, "dspreload: demo: %s is missing (build or install dspreload)\n", prog);
        return 1;
    }
    /* In the build tree, the libcudart and libcufile test doubles let the demo
     * show the CUDA and cuFile layers on a machine without CUDA. Installed,
     * there are none: the workload looks for the real libraries and says
     * "skipped" without them. A variable set, even empty (no library at all:
     * tests/launcher/demo.sh), is left as it is. */
    snprintf(cudart, sizeof cudart, "%s/tests/cuda/libcudart.so.13", self_dir());
    if (!getenv("DSPRELOAD_DEMO_CUDART") && access(cudart, R_OK) == 0)
        setenv("DSPRELOAD_DEMO_CUDART", cudart, 1);
    snprintf(cufile, sizeof cufile, "%s/tests/cufile/libcufile.so.0", self_dir());
    if (!getenv("DSPRELOAD_DEMO_CUFILE") && access(cufile, R_OK) == 0)
        setenv("DSPRELOAD_DEMO_CUFILE", cufile, 1);
    /* Malloc hints for the demo's large buffers only (docs/malloc-hints.md). */
    setenv("DSP_MALLOC_MIN", "16M", 0);
    if (lib)
        execl(self, self, "--stats", "--lib", lib, "--", prog, (char *)NULL);
    else
        execl(self, self, "--stats", "--", prog, (char *)NULL);
    perror("dspreload: demo");
    return 126;
}
