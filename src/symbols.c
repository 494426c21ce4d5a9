#include "symbols.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

struct search {
    const char *prefix;
    char path[4096];
    void *self_base; /* our own object, to skip */
};

static int match(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct search *s = arg;
    const char *path = info->dlpi_name;
    if (!path || !*path || (void *)info->dlpi_addr == s->self_base) return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, s->prefix, strlen(s->prefix)) != 0) return 0;
    size_t n = strlen(path);
    if (n >= sizeof s->path) return 0;
    memcpy(s->path, path, n + 1);
    return 1; /* the first one loaded */
}

static void *lookup(void *h, const char *name, const char *version) {
    return version ? dlvsym(h, name, version) : dlsym(h, name);
}

void *dsp_sym_next_v(const char *name, const char *version, const char *lib_prefix) {
    void *fn = lookup(RTLD_NEXT, name, version);
    if (fn || !lib_prefix) return fn;
    struct search s = {lib_prefix, {0}, NULL};
    Dl_info self;
    if (dladdr((void *)dsp_sym_next, &self)) s.self_base = self.dli_fbase;
    /* dlopen must not run inside the callback (the loader lock is held). */
    if (!dl_iterate_phdr(match, &s)) return NULL;
    void *h = dlopen(s.path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    fn = lookup(h, name, version);
    dlclose(h); /* drops only the reference RTLD_NOLOAD took */
    return fn;
}

void *dsp_sym_next(const char *name, const char *lib_prefix) {
    return dsp_sym_next_v(name, NULL, lib_prefix);
}
