/* Fixed-size objects carved from mmap'ed chunks: the core's metadata never
 * touches malloc (which the shim interposes). Not thread-safe: the owner of a
 * slab serialises its calls. Objects are never returned to the kernel. */
#ifndef DSP_SLAB_H
#define DSP_SLAB_H

#include <stddef.h>

struct dsp_slab {
    size_t size;     /* object size, rounded to 16 */
    void *free_list; /* freed objects */
    char *cur, *end; /* unused tail of the newest chunk */
    size_t chunk;    /* bytes mapped at a time; 0: 1 MiB */
};

#define DSP_SLAB_INIT(objsize)                                                                     \
    { ((objsize) + 15) & ~(size_t)15, 0, 0, 0, 0 }
/* Smaller chunks for a slab that rarely grows: every mapped byte counts
 * against a program's mlockall(MCL_CURRENT) under RLIMIT_MEMLOCK
 * (regression: preload/mlockall_does_not_count_the_reservation, which an 8 MiB
 * limit failed when the page map took two more 1 MiB chunks). */
#define DSP_SLAB_INIT_CHUNK(objsize, chunkbytes)                                                   \
    { ((objsize) + 15) & ~(size_t)15, 0, 0, 0, (chunkbytes) }

void *dsp_slab_alloc(struct dsp_slab *s); /* zeroed, or NULL when mmap fails */
void dsp_slab_free(struct dsp_slab *s, void *obj);

#endif
