/* cuFile (GPUDirect Storage) hooks. docs/io.md explains each decision.
 *
 * - cuFileRead/cuFileWrite into host memory the manager holds as pinned (a
 *   block, or a range registered with cudaHostRegister) are done by the shim
 *   with pread/pwrite on the handle's file, straight into the caller's buffer
 *   (io/cufile_host.c): cuFile would stage them through its own bounce
 *   buffers.
 * - A device buffer that is not registered gets its whole allocation
 *   registered with the real cuFileBufRegister once, kept in a cache bounded
 *   by DSP_CUFILE_REGISTER_MAX (least recently used released first), so the
 *   real library reads into it without staging (io/cufile_reg.c).
 * - Everything else, and everything that fails here, goes to the real library
 *   with the caller's arguments. Calls libcufile makes to its own exports (it
 *   calls some through the PLT) pass straight through.
 *
 * This file holds the hooks, the layer's resolver and its fork handlers; the
 * real functions, the re-entry guard and the condition the layer's lock waits
 * on are io/cufile_layer.c, the handles the application registered
 * io/cufile_handles.c.
 *
 * The shim links no cuFile library: real functions are found at the first call
 * (src/symbols.c), including in a libcufile loaded RTLD_LOCAL. */
#include "config.h"
#include "fork.h"
#include "internal.h"
#include "log.h"
#include "registry.h"
#include "stats.h"
#include "symbols.h"
#include "cufile_types.h"
#include "cufile_layer.h"
#include "cufile_handles.h"
#include "cufile_reg.h"
#include "cufile_host.h"
#include "interposed.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>

DSP_HOOK_DECLS(cufile)

/* The opens the hooks saw: cuFile's open count where the library has no
 * cuFileUseCount. */
static long hooked_opens;

static struct dsp_layer layer; /* below */
static void fork_child(void) {
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    dsp_cufile_idle = fresh_cond;
    /* CUDA and cuFile do not survive fork: the child passes every call
     * through, and closes the descriptors the shim opened. */
    dsp_cufile_handles_reset();
    dsp_cufile_reg_reset();
    if (atomic_load(&layer.mode) == DSP_LAYER_SERVING) dsp_layer_pass(&layer);
}

static int start(void) {
    dsp_cufile_reg_start();
    return 1;
}

/* The one resolver (src/symbols.h): serving, or passing through for good
 * (DSP_CUFILE=off, or a forked child). */
static struct dsp_layer layer = {
    DSP_LAYER_OF(cufile),
    .fork_slot = DSP_FORK_CUFILE,
    .fork_child = fork_child,
    .start = start,
};

/* Every hook starts here: 1 to do the layer's work, 0 to pass the call
 * through (re-entered from the real library, DSP_CUFILE=off, forked child). */
static inline int serving(void) {
    if (dsp_cufile_inside) return 0;
    int m = atomic_load_explicit(&layer.mode, memory_order_acquire);
    if (DSP_LIKELY(m == DSP_LAYER_SERVING)) return 1;
    if (m != DSP_LAYER_UNRESOLVED) return 0;
    dsp_cufile_resolve_attrs();
    return dsp_layer_resolve(&layer) == DSP_LAYER_SERVING;
}

/* A process with no libcufile loaded that calls a hook (a probe through
 * dlsym(RTLD_DEFAULT)) is told the driver is not there. */
static int missing(const char *name) {
    dsp_once(DSP_LOG_ERROR,
             "%s called but no libcufile with it is loaded; returning "
             "CU_FILE_DRIVER_NOT_INITIALIZED",
             name);
    return 0;
}
#define HAVE(fn) (DSP_REAL(dsp_real_cufile.fn) || missing(#fn))
#define NOT_INIT ((CUfileError_t){CU_FILE_DRIVER_NOT_INITIALIZED, 0})
#define CALL     DSP_CUFILE_CALL

/* cuFileRead and cuFileWrite. */
static ssize_t io(CUfileHandle_t fh, int wr, void *base, size_t size, off_t file_off,
                  off_t buf_off) {
    if (!serving()) goto pass;
    if (!base || !size || file_off < 0 || buf_off < 0 || size > (size_t)SSIZE_MAX ||
        (uintptr_t)base + (uintptr_t)buf_off < (uintptr_t)base ||
        (uintptr_t)base + (uintptr_t)buf_off + size < (uintptr_t)base + (uintptr_t)buf_off)
        goto pass; /* cuFile's own answer */
    uintptr_t p = (uintptr_t)base + (uintptr_t)buf_off;
    if (dsp_reg_contains(p, size)) {
        pthread_mutex_lock(&dsp_cufile_mu);
        struct dsp_cufile_handle *hd = dsp_cufile_handle_find(fh);
        int mine = hd && !hd->dying && !dsp_cufile_app_may_own((uintptr_t)base, 1) &&
                   !dsp_cufile_app_may_own(p, size);
        if (mine) hd->busy++;
        pthread_mutex_unlock(&dsp_cufile_mu);
        if (!mine) goto pass;
        ssize_t r = dsp_cufile_host_io(hd, wr, (char *)p, size, file_off);
        int saved = errno;
        dsp_cufile_release(&hd->busy);
        errno = saved;
        if (r != -2) {
            dsp_stat_add(DSP_ST_cufile_direct_host, 1);
            if (r > 0) dsp_stat_add(DSP_ST_cufile_direct_bytes, (uint64_t)r);
            return r;
        }
        dsp_stat_add(DSP_ST_fallbacks, 1);
        goto pass;
    }
    uintptr_t alloc_start;
    struct dsp_cufile_reg *e = dsp_cufile_reg_acquire(p, size, &alloc_start);
    if (e) {
        /* cuFile finds a registration by its exact base: the call names the
         * allocation's start, with the same destination bytes. */
        off_t rebased = (off_t)(p - alloc_start);
        ssize_t r = wr ? CALL(cuFileWrite, fh, (const void *)alloc_start, size, file_off, rebased)
                       : CALL(cuFileRead, fh, (void *)alloc_start, size, file_off, rebased);
        int saved = errno;
        dsp_cufile_reg_release(e);
        errno = saved;
        return r;
    }
pass:
    if (!dsp_cufile_inside &&
        atomic_load_explicit(&layer.mode, memory_order_relaxed) == DSP_LAYER_SERVING)
        dsp_stat_add(DSP_ST_cufile_passthrough, 1);
    if (!(wr ? HAVE(cuFileWrite) : HAVE(cuFileRead))) return -CU_FILE_DRIVER_NOT_INITIALIZED;
    return wr ? CALL(cuFileWrite, fh, base, size, file_off, buf_off)
              : CALL(cuFileRead, fh, base, size, file_off, buf_off);
}

DSP_API ssize_t cuFileRead(CUfileHandle_t fh, void *base, size_t size, off_t file_off,
                           off_t buf_off) {
    return io(fh, 0, base, size, file_off, buf_off);
}

DSP_API ssize_t cuFileWrite(CUfileHandle_t fh, const void *base, size_t size, off_t file_off,
                            off_t buf_off) {
    return io(fh, 1, (void *)base, size, file_off, buf_off);
}

/* ---- the rest of the API: bookkeeping around the real calls ---- */

DSP_API CUfileError_t cuFileDriverOpen(void) {
    int on = serving();
    if (on) dsp_cufile_resolve_attrs(); /* libcuda may have been loaded since */
    if (!HAVE(cuFileDriverOpen)) return NOT_INIT;
    CUfileError_t rc = CALL(cuFileDriverOpen);
    if (on && rc.err == CU_FILE_SUCCESS) {
        /* Registrations that failed before may work with the driver open. */
        pthread_mutex_lock(&dsp_cufile_mu);
        hooked_opens++;
        dsp_cufile_reg_retry_failed();
        pthread_mutex_unlock(&dsp_cufile_mu);
    }
    return rc;
}

/* Closing the driver ends every registration and handle: the shim releases its
 * own registrations first, and forgets the application's. No lock is held
 * across the real close (the library deregisters what it still knows through
 * its own exports, which the re-entry guard passes through);
 * dsp_cufile_reg_close_begin keeps new registrations of the shim's from
 * starting meanwhile, and one that started before is released when it ends
 * (io/cufile_reg.c: `closing`, `close_gen`). */
static CUfileError_t driver_close(int v2) {
    int on = serving();
    if (!(v2 ? HAVE(cuFileDriverClose_v2) : HAVE(cuFileDriverClose))) return NOT_INIT;
    if (!on) return v2 ? CALL(cuFileDriverClose_v2) : CALL(cuFileDriverClose);
    pthread_mutex_lock(&dsp_cufile_mu);
    dsp_cufile_reg_close_begin();
    pthread_mutex_unlock(&dsp_cufile_mu);
    CUfileError_t rc = v2 ? CALL(cuFileDriverClose_v2) : CALL(cuFileDriverClose);
    /* cuFile counts opens: handles and the application's registrations end
     * only with the last close (review: one user's close made another's
     * pinned reads staged again). */
    long still_open = -1;
    if (DSP_REAL(dsp_real_cufile.cuFileUseCount)) still_open = CALL(cuFileUseCount);
    pthread_mutex_lock(&dsp_cufile_mu);
    dsp_cufile_reg_close_end(rc.err == CU_FILE_SUCCESS);
    if (rc.err == CU_FILE_SUCCESS && hooked_opens > 0) hooked_opens--;
    if (!DSP_REAL(dsp_real_cufile.cuFileUseCount)) still_open = hooked_opens;
    if (rc.err == CU_FILE_SUCCESS && still_open <= 0) {
        dsp_cufile_handles_drop_all();
        dsp_cufile_app_forget_all();
    }
    pthread_mutex_unlock(&dsp_cufile_mu);
    return rc;
}

DSP_API CUfileError_t cuFileDriverClose(void) {
    return driver_close(0);
}

DSP_API CUfileError_t cuFileDriverClose_v2(void) {
    return driver_close(1);
}

DSP_API CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr) {
    int on = serving();
    if (on) dsp_cufile_resolve_attrs();
    if (!HAVE(cuFileHandleRegister)) return NOT_INIT;
    CUfileError_t rc = CALL(cuFileHandleRegister, fh, descr);
    if (!on || rc.err != CU_FILE_SUCCESS || !fh || !*fh || !descr ||
        descr->type != CU_FILE_HANDLE_TYPE_OPAQUE_FD)
        return rc;
    pthread_mutex_lock(&dsp_cufile_mu);
    dsp_cufile_handle_add(*fh, descr->handle.fd);
    pthread_mutex_unlock(&dsp_cufile_mu);
    return rc;
}

DSP_API void cuFileHandleDeregister(CUfileHandle_t fh) {
    if (serving()) {
        pthread_mutex_lock(&dsp_cufile_mu);
        struct dsp_cufile_handle *hd = dsp_cufile_handle_find(fh);
        if (hd && !hd->dying) dsp_cufile_handle_drop(hd);
        pthread_mutex_unlock(&dsp_cufile_mu);
    }
    if (!HAVE(cuFileHandleDeregister)) return;
    dsp_cufile_inside++;
    DSP_REAL(dsp_real_cufile.cuFileHandleDeregister)(fh);
    dsp_cufile_inside--;
}

/* The application registers a buffer: any registration of the shim's that
 * overlaps it is released first, so the application gets exactly the answer it
 * would get without the shim, and owns the registration from then on. The
 * range is recorded as the application's before the real call (made without
 * dsp_cufile_mu), so the shim registers nothing over it meanwhile; forgotten
 * again if the call fails. A full table sets app_overflow (io/cufile_reg.c)
 * for good, even if the call then fails: the shim registers nothing more,
 * which is never wrong. */
DSP_API CUfileError_t cuFileBufRegister(const void *base, size_t len, int flags) {
    /* serving() first: it resolves the real functions, and this may be the
     * process's first cuFile call (recent libcufile opens the driver itself). */
    int on = serving();
    if (!HAVE(cuFileBufRegister)) return NOT_INIT;
    if (!on || !base || !len) return CALL(cuFileBufRegister, base, len, flags);
    pthread_mutex_lock(&dsp_cufile_mu);
    int recorded = dsp_cufile_app_register((uintptr_t)base, len);
    pthread_mutex_unlock(&dsp_cufile_mu);
    CUfileError_t rc = CALL(cuFileBufRegister, base, len, flags);
    if (rc.err != CU_FILE_SUCCESS && recorded) {
        pthread_mutex_lock(&dsp_cufile_mu);
        dsp_cufile_app_forget((uintptr_t)base);
        pthread_mutex_unlock(&dsp_cufile_mu);
    }
    return rc;
}

/* Deregistering: the application's own registrations go to the library; a base
 * only the shim registered gets the answer the application would get without
 * the shim (not registered), and the shim's registration stays. The record of
 * the application's stays until the library has answered (no lock held across
 * the call), so the shim registers nothing over it meanwhile. */
DSP_API CUfileError_t cuFileBufDeregister(const void *base) {
    int on = serving(); /* resolves: this may be the first cuFile call */
    if (!HAVE(cuFileBufDeregister)) return NOT_INIT;
    if (!on || !base) return CALL(cuFileBufDeregister, base);
    pthread_mutex_lock(&dsp_cufile_mu);
    int apps = dsp_cufile_app_has((uintptr_t)base);
    int shims_only = !apps && dsp_cufile_reg_has((uintptr_t)base);
    pthread_mutex_unlock(&dsp_cufile_mu);
    if (shims_only) return (CUfileError_t){CU_FILE_MEMORY_NOT_REGISTERED, 0};
    CUfileError_t rc = CALL(cuFileBufDeregister, base);
    if (rc.err == CU_FILE_SUCCESS && apps) {
        pthread_mutex_lock(&dsp_cufile_mu);
        dsp_cufile_app_forget((uintptr_t)base);
        pthread_mutex_unlock(&dsp_cufile_mu);
    }
    return rc;
}
