/* dspreload: one process-wide manager of page-locked (pinned) host memory.
 *
 * Preload libdspreload.so to have CUDA, malloc and I/O calls served by it, or
 * link against it and call this API directly. Every function is thread-safe and
 * may be called before the library's constructor has run.
 */
#ifndef DSPRELOAD_H
#define DSPRELOAD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DSP_VERSION_MAJOR 0
#define DSP_VERSION_MINOR 1
#define DSP_VERSION_PATCH 0

/* Pinned, page-aligned memory of at least `size` bytes. The block covers `size`
 * rounded up to the page size, and that whole range is reported pinned by
 * dsp_is_pinned(), also where transparent huge pages back it. Memory is zeroed on
 * first use and may hold old data when it comes from the pool.
 * Returns NULL with errno set on failure: EINVAL for size 0, ENOMEM when the
 * budget (DSP_MAX_PINNED) is reached, mlock is refused or the size is too large,
 * or when called from a signal handler that interrupted the library on this
 * thread. Not async-signal-safe. */
void *dsp_alloc(size_t size);

/* Frees a block from dsp_alloc() by its exact base. Returns 0, or -1 with errno
 * EINVAL when `ptr` is not the base of a live block (NULL, interior pointer,
 * double free, foreign pointer); such calls change nothing. From a signal handler
 * that interrupted the library on this thread the free is deferred to the
 * library's next unlock (unchecked: 0, or -1 with EAGAIN when the deferral area
 * is full and the block leaks). */
int dsp_free(void *ptr);

/* 1 when the whole [ptr, ptr+len) lies inside one pinned range (a live block or
 * a range another layer registered as pinned), else 0. len 0 asks about ptr.
 * Async-signal-safe: in a handler that interrupted this thread's own update of
 * the registry the answer is 0. */
int dsp_is_pinned(const void *ptr, size_t len);

/* Releases every cached (pooled) block back to the kernel, the libaio bounce
 * buffers kept for reuse included. Returns the bytes released. */
size_t dsp_trim(void);

/* The statistics as one JSON object, snprintf-style: writes at most cap bytes
 * including the terminating NUL and returns the length the whole object needs
 * (excluding the NUL). */
int dsp_stats_json(char *buf, size_t cap);

/* "MAJOR.MINOR.PATCH" of the loaded library. */
const char *dsp_version(void);

#ifdef __cplusplus
}
#endif
#endif
