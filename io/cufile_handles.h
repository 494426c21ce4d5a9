/* The cuFile handles the application registered, as the hooks saw them: the
 * fd behind each, and what the shim's own host I/O on it keeps (a buffered
 * descriptor of the same file, the file's O_DIRECT alignment). A fixed table:
 * no allocation. Called under dsp_cufile_mu (io/cufile_layer.h), but for
 * dsp_cufile_handles_reset. */
#ifndef DSP_CUFILE_HANDLES_H
#define DSP_CUFILE_HANDLES_H

#include "cufile_types.h"
#include "dio.h"

#define DSP_CUFILE_NHANDLES 1024

struct dsp_cufile_handle {
    CUfileHandle_t h; /* NULL: free slot */
    int fd;           /* the application's */
    int bfd;          /* a buffered descriptor of the same file: -1 none yet, -2 refused */
    int busy;         /* host I/O of ours in progress */
    int dying;
    int align_ok;
    struct dsp_dio_align align;
};

/* The record of h, or NULL. */
struct dsp_cufile_handle *dsp_cufile_handle_find(CUfileHandle_t h);

/* Records h, registered by the application on fd, forgetting a stale record
 * of a reused handle first. A full table is logged once: I/O on h then goes
 * to cuFile unchanged. */
void dsp_cufile_handle_add(CUfileHandle_t h, int fd);

/* Waits until no host I/O of ours uses the handle (dropping the lock
 * meanwhile), then forgets it and closes the descriptor the shim opened. */
void dsp_cufile_handle_drop(struct dsp_cufile_handle *hd);

/* Every handle, as dsp_cufile_handle_drop: the driver's last close ended them. */
void dsp_cufile_handles_drop_all(void);

/* In a forked child: closes the descriptors the shim opened and forgets
 * every handle, waiting for nothing (no other thread survived the fork). */
void dsp_cufile_handles_reset(void);

#endif
