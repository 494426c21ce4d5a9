/* What the dspreload command's subcommands share with it: the usage error, the
 * launcher's directory, the library it preloads and whether LD_PRELOAD can
 * carry that library's path. main.c and the subcommands call these; these call
 * neither. */
#include "launcher.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DSP_LIBDIR_FROM_BINDIR
#define DSP_LIBDIR_FROM_BINDIR "../lib"
#endif

int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("dspreload: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n" USAGE "(dspreload --help for more)\n", stderr);
    return 2;
}

const char *self_dir(void) {
    static char dir[PATH_MAX];
    if (!dir[0]) {
        ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
        if (n <= 0) return ".";
        dir[n] = 0;
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
    }
    return dir;
}

const char *find_library(void) {
    static char found[PATH_MAX];
    const char *rel[] = {"libdspreload.so", DSP_LIBDIR_FROM_BINDIR "/libdspreload.so"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        char cand[PATH_MAX * 2];
        snprintf(cand, sizeof cand, "%s/%s", self_dir(), rel[i]);
        if (realpath(cand, found) && access(found, R_OK) == 0) return found;
    }
    return NULL;
}

int preload_unsafe(const char *lib) {
    return strpbrk(lib, LD_PRELOAD_SEPARATORS) != NULL;
}

const char *preload_unsafe_why(const char *lib) {
    static char why[PATH_MAX * 2 + 256];
    snprintf(why, sizeof why,
             "the library path '%s' has a space or colon, which LD_PRELOAD takes as separators: "
             "it would not be loaded. Install dspreload under a path without them, or give "
             "--lib a path without them (a symlink to the library will do)",
             lib);
    return why;
}
