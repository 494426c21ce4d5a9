/* What O_DIRECT demands of an I/O on a given file descriptor, shared by the
 * libaio and cuFile wrappers. Each query is a system call (about 1.3 us on the
 * machines we measured, docs/io.md): callers ask only for I/O that is not
 * already aligned to DSP_DIO_MAX_ALIGN, and at most once per fd per call. */
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

/* O_DIRECT set on fd now (flags change with F_SETFL; fds are reused, so this
 * is never cached): 1, 0, or -errno. */
int dsp_dio_is_direct(int fd);

#endif
