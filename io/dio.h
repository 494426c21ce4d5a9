/* What O_DIRECT demands of an I/O on a given file descriptor, shared by the
 * libaio and cuFile wrappers. Each query is a system call (docs/io.md,
 * "I/O: libaio and cuFile"): callers ask only for I/O that is not
 * already aligned to DSP_DIO_MAX_ALIGN; the libaio hooks keep the answers
 * across calls (dsp_dio_cached). */
#ifndef DSP_DIO_H
#define DSP_DIO_H

#include <stdint.h>

/* An I/O whose buffer, length and file offset are multiples of this meets
 * every alignment rule of the filesystems and devices we know (4 KiB logical
 * blocks at most): it needs no query. */
#define DSP_DIO_MAX_ALIGN 4096u

/* Used when neither the filesystem (statx STATX_DIOALIGN) nor the device
 * (BLKSSZGET) says: tmpfs, older kernels. Large enough for any device, so
 * bouncing with it is always safe, only sometimes unneeded. */
#define DSP_DIO_FALLBACK_ALIGN 4096u

struct dsp_dio_align {
    uint32_t mem; /* buffer address and length (per segment), power of two */
    uint32_t off; /* file offset and length, power of two */
};

/* The alignment O_DIRECT needs on fd's file: 0, or -errno (EBADF...). */
int dsp_dio_align(int fd, struct dsp_dio_align *out);

/* O_DIRECT set on fd now: 1, 0, or -errno. */
int dsp_dio_is_direct(int fd);

/* The fd cache of the libaio hooks (issue 29: an fcntl and a statx per
 * io_submit of misaligned I/O). dsp_dio_cached answers as dsp_dio_is_direct
 * and, when O_DIRECT is on, dsp_dio_align (*a filled; an fd whose alignment
 * cannot be read answers 0): 1, 0, or -errno; from the cache when it holds
 * fd, else with the two queries, kept for next time.
 *
 * An answer is kept for fds below DSP_DIO_CACHE_FDS and tagged with a
 * process-wide generation; dsp_dio_forget bumps it, forgetting every answer.
 * The hooks of preload/fdcalls.c call it after every call that can make an
 * fd number name another open file or change a file's flags (close,
 * close_range, closefrom, fclose, dup, dup2, dup3, fcntl F_SETFL and F_DUPFD,
 * open, openat, creat, socket, accept, pipe...), and the fork child
 * handler. Only while dsp_dio_cache_on (set by io/aio.c when those hooks are
 * the ones the program reaches); otherwise every call queries. A forget is
 * one relaxed load until the cache keeps its first answer, which makes one
 * membarrier for it (io/dio.c). */
#define DSP_DIO_CACHE_FDS 4096
extern int dsp_dio_cache_on;
int dsp_dio_cached(int fd, struct dsp_dio_align *a);
/* The cache's answer for fd without asking: 1 O_DIRECT, 0 buffered, -1 not
 * held (no system call, no store: usable inside a guarded region). */
int dsp_dio_peek(int fd);
void dsp_dio_forget(void);

#endif
