/* Who registered which buffers with cuFile: the device allocations the shim
 * registered itself (a cache bounded by DSP_CUFILE_REGISTER_MAX, least
 * recently used released first), and the ranges the application registered,
 * which the shim leaves to cuFile (docs/io.md, "Device buffers: registered
 * once"). Fixed tables: no allocation. Unless said otherwise, called under
 * dsp_cufile_mu (io/cufile_layer.h); those that register or release drop it
 * around the real call. */
#ifndef DSP_CUFILE_REG_H
#define DSP_CUFILE_REG_H

#include <stddef.h>
#include <stdint.h>

/* At the layer's start (no lock): reads DSP_CUFILE_REGISTER_MAX. */
void dsp_cufile_reg_start(void);

/* No lock: looks libcuda's cuPointerGetAttributes up again until found
 * (libcuda may be loaded after libcufile). */
void dsp_cufile_resolve_attrs(void);

/* ---- the shim's registrations ---- */

struct dsp_cufile_reg;

/* Takes the lock itself. The registration to use for a call into
 * [p, p+size): one of ours covering its whole device allocation (registered
 * now if need be), its use count taken, *base its start; or NULL to pass the
 * call through unchanged. */
struct dsp_cufile_reg *dsp_cufile_reg_acquire(uintptr_t p, size_t size, uintptr_t *base);

/* Takes the lock itself: ends the use dsp_cufile_reg_acquire took. */
void dsp_cufile_reg_release(struct dsp_cufile_reg *r);

/* The shim holds, or is making, a registration at exactly base (not one
 * that failed or is being released). */
int dsp_cufile_reg_has(uintptr_t base);

/* The driver opened: registrations that failed before may work now. */
void dsp_cufile_reg_retry_failed(void);

/* A cuFileDriverClose starts: no new registration of the shim's until
 * dsp_cufile_reg_close_end, and every one made is released (after the calls
 * using it end); one being made is left to the thread making it. */
void dsp_cufile_reg_close_begin(void);
/* ... and has answered (ok: it closed the driver). A registration being made
 * across a successful close is released once made, not kept. */
void dsp_cufile_reg_close_end(int ok);

/* ---- the application's registrations ---- */

/* Any of [base, base+len) may be registered by the application (or the
 * record overflowed, so nothing is known). */
int dsp_cufile_app_may_own(uintptr_t base, size_t len);

/* The application registers [base, base+len): records it (1; 0 when the
 * table is full, which stops the shim registering for good), then releases
 * every registration of the shim's that overlaps it, waiting for those being
 * made or released. */
int dsp_cufile_app_register(uintptr_t base, size_t len);

/* The application registered base (its exact base). */
int dsp_cufile_app_has(uintptr_t base);

/* Removes one record of the application's registration at base. */
void dsp_cufile_app_forget(uintptr_t base);

/* The driver's last close ended them all. */
void dsp_cufile_app_forget_all(void);

/* In a forked child (no lock): forgets every registration, waiting for
 * nothing. */
void dsp_cufile_reg_reset(void);

#endif
