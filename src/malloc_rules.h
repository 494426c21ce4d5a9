/* The pure logic of malloc hints (preload/malloc.c), apart so that every build,
 * sanitized ones included, can unit-test it: size and alignment rules, the
 * DSP_MALLOC_FROM names, and the per-call-site cache. */
#ifndef DSP_MALLOC_RULES_H
#define DSP_MALLOC_RULES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DSP_MRULE_NAMES     16
#define DSP_MRULE_NAME_LEN  64
#define DSP_MRULE_MAX_ALIGN ((size_t)1 << 30) /* larger alignments go to the real allocator */

/* glibc's posix_memalign rule: 1 when align is a power-of-two multiple of
 * sizeof(void *), else 0. */
static inline int dsp_mrule_posix_align_ok(size_t align) {
    return align && align % sizeof(void *) == 0 &&
           ((align / sizeof(void *)) & (align / sizeof(void *) - 1)) == 0;
}

/* The bytes to ask the manager for so that a block of size bytes at an
 * align-aligned address fits in it (blocks start on a page): 0 and *req set,
 * or, for a request not to hint, -EINVAL (alignment not a power of two or
 * over DSP_MRULE_MAX_ALIGN, or zero bytes) or -EOVERFLOW (overflow, or more
 * than the manager serves). */
int dsp_mrule_request(size_t size, size_t align, size_t *req);

/* Splits the comma-separated DSP_MALLOC_FROM into names (blanks trimmed,
 * empty items skipped, names too long or past DSP_MRULE_NAMES dropped and
 * counted in *dropped); returns how many were kept. */
int dsp_mrule_names(const char *list, char names[][DSP_MRULE_NAME_LEN], int max, int *dropped);

/* 1 when the file name of path (what follows the last '/') equals one of
 * names, or starts with it followed by a '.', else 0. */
int dsp_mrule_path_matches(const char *path, const char (*names)[DSP_MRULE_NAME_LEN], int n);

/* Call sites already resolved: a fixed open-addressing table, lock-free
 * (readers and writers use atomics only; a full window is simply not cached). */
#define DSP_SITES       4096
#define DSP_SITES_PROBE 16
struct dsp_sites {
    _Atomic uintptr_t slot[DSP_SITES]; /* (address << 1) | allowed, 0 empty */
};
/* 1 or 0 as cached, -ENOENT when unknown. */
int dsp_sites_get(struct dsp_sites *t, uintptr_t addr);
void dsp_sites_put(struct dsp_sites *t, uintptr_t addr, int allowed);
void dsp_sites_clear(struct dsp_sites *t);

#endif
