/* The cuFile layer's own host I/O: reads and writes into pinned host memory
 * done with pread/pwrite, without cuFile's staging (io/cufile_host.c). */
#ifndef DSP_CUFILE_HOST_H
#define DSP_CUFILE_HOST_H

#include "cufile_handles.h"

#include <sys/types.h>

/* Reads or writes [p, p+size) at off on hd's file, hd held busy by the caller
 * (no lock held). Returns what cuFileRead or cuFileWrite would (bytes; -1
 * with errno), or -2 when nothing was done and the call must go to the real
 * library. */
ssize_t dsp_cufile_host_io(struct dsp_cufile_handle *hd, int wr, char *p, size_t size, off_t off);

#endif
