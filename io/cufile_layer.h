/* What the cuFile layer's files share (docs/io.md, "cuFile (GPUDirect
 * Storage)"): the real library's functions, the re-entry guard around calls
 * into it, and the one lock over their tables. io/cufile_layer.c defines
 * them, so that the hooks (io/cufile.c) and the tables call it and each other
 * one way only: the tables themselves are io/cufile_handles.c (the
 * application's handles) and io/cufile_reg.c (device-buffer registrations),
 * the I/O done without cuFile io/cufile_host.c. */
#ifndef DSP_CUFILE_LAYER_H
#define DSP_CUFILE_LAYER_H

#include "cufile_types.h"

#include "fork.h"
#include "interposed.h"
#include "internal.h"
#include "symbols.h"

#include <pthread.h>
#include <sys/types.h>

/* The real functions (NULL until found) and the resolver's list of them
 * (preload/interposed.h), for the layer's struct dsp_layer in io/cufile.c. */
extern DSP_REAL_STRUCT(cufile) dsp_real_cufile;
extern const struct dsp_sym dsp_syms_cufile[];

/* Inside a call to the real library: its calls to its own exports land in the
 * hooks through the PLT and must go straight back (regression:
 * cufile_reentry_from_driver_close, which deadlocked on dsp_cufile_mu). */
extern DSP_TLS int dsp_cufile_inside;

/* The real function fn, with the guard set. */
#define DSP_CUFILE_CALL(fn, ...)                                                                   \
    ({                                                                                             \
        dsp_cufile_inside++;                                                                       \
        __typeof__(dsp_real_cufile.fn(__VA_ARGS__)) r_ =                                           \
            DSP_REAL(dsp_real_cufile.fn)(__VA_ARGS__);                                             \
        dsp_cufile_inside--;                                                                       \
        r_;                                                                                        \
    })

/* One lock for the layer's tables, never held across a call into libcufile
 * (docs/design.md, "Locks"): a library that calls back into the shim from
 * another thread and joins it would deadlock (regression:
 * cufile_calls_back_from_another_thread). A registration being made or
 * released is an entry marked pending or dying meanwhile, which no other
 * thread uses or registers over; reads and writes hold a use count. Waiters
 * for a use count to end, or for a pending or dying entry, wait on
 * dsp_cufile_idle. */
#define DSP_FORK_CUFILE DSP_FORK_LEAF_2 /* a leaf (src/fork.h) */
#define dsp_cufile_mu                                                                              \
    (dsp_fork_locks.slot[DSP_FORK_CUFILE]) /* fork.c takes it at fork (fork.h)                     \
                                            */
extern pthread_cond_t dsp_cufile_idle;

/* Ends one use (a handle's host I/O, a registration's real read or write):
 * the last one wakes those waiting to drop it. */
static inline void dsp_cufile_release(int *count) {
    pthread_mutex_lock(&dsp_cufile_mu);
    if (--*count == 0) pthread_cond_broadcast(&dsp_cufile_idle);
    pthread_mutex_unlock(&dsp_cufile_mu);
}

/* The real cuFileBufRegister and cuFileBufDeregister, for the shim's own
 * registrations: called without dsp_cufile_mu, through the re-entry guard
 * (its calls to its own exports pass straight through). Only while the layer
 * serves, when both are known. */
CUfileError_t dsp_cufile_real_buf_register(const void *base, size_t len, int flags);
CUfileError_t dsp_cufile_real_buf_deregister(const void *base);

#endif
