#include "malloc_rules.h"

#include "internal.h"

#include <errno.h>
#include <string.h>

int dsp_mrule_request(size_t size, size_t align, size_t *req) {
    if (align & (align - 1) || align > DSP_MRULE_MAX_ALIGN) return -EINVAL;
    size_t pad = align > DSP_PAGE ? align - DSP_PAGE : 0, r;
    if (__builtin_add_overflow(size, pad, &r) || r > DSP_USER_VA_END) return -EOVERFLOW;
    if (r == 0) return -EINVAL;
    *req = r;
    return 0;
}

int dsp_mrule_names(const char *list, char names[][DSP_MRULE_NAME_LEN], int max, int *dropped) {
    int n = 0;
    *dropped = 0;
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strcspn(p, ",");
        size_t end = len;
        while (end && (p[end - 1] == ' ' || p[end - 1] == '\t')) end--;
        if (end) {
            if (end < DSP_MRULE_NAME_LEN && n < max) {
                memcpy(names[n], p, end);
                names[n++][end] = 0;
            } else {
                (*dropped)++;
            }
        }
        p += len;
        if (*p == ',') p++;
    }
    return n;
}

int dsp_mrule_path_matches(const char *path, const char (*names)[DSP_MRULE_NAME_LEN], int n) {
    if (!path) return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (!strncmp(base, names[i], len) && (base[len] == 0 || base[len] == '.')) return 1;
    }
    return 0;
}

static size_t site_hash(uintptr_t addr) {
    uint64_t h = (uint64_t)addr * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 52) & (DSP_SITES - 1); /* 12 bits */
}

int dsp_sites_get(struct dsp_sites *t, uintptr_t addr) {
    size_t h = site_hash(addr);
    for (size_t i = 0; i < DSP_SITES_PROBE; i++) {
        uintptr_t v =
            atomic_load_explicit(&t->slot[(h + i) & (DSP_SITES - 1)], memory_order_relaxed);
        if (!v) return -ENOENT;
        if (v >> 1 == addr) return (int)(v & 1);
    }
    return -ENOENT;
}

void dsp_sites_put(struct dsp_sites *t, uintptr_t addr, int allowed) {
    uintptr_t want = addr << 1 | (allowed ? 1 : 0);
    size_t h = site_hash(addr);
    for (size_t i = 0; i < DSP_SITES_PROBE; i++) {
        _Atomic uintptr_t *s = &t->slot[(h + i) & (DSP_SITES - 1)];
        uintptr_t v = atomic_load_explicit(s, memory_order_relaxed);
        if (v >> 1 == addr) return; /* another thread got there first */
        if (!v && atomic_compare_exchange_strong_explicit(s, &v, want, memory_order_relaxed,
                                                          memory_order_relaxed))
            return;
        if (v >> 1 == addr) return;
    }
}

void dsp_sites_clear(struct dsp_sites *t) {
    for (size_t i = 0; i < DSP_SITES; i++)
        atomic_store_explicit(&t->slot[i], 0, memory_order_relaxed);
}
