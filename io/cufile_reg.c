/* The cuFile registrations (io/cufile_reg.h): the device allocations the shim
 * registered with the real cuFileBufRegister, each once, in a cache bounded
 * by DSP_CUFILE_REGISTER_MAX (least recently used released first), so the
 * real library reads into them without staging; and the record of the ranges
 * the application registered itself, over which the shim registers nothing.
 * Which memory is device memory is asked the way cuFile asks it: libcuda's
 * pointer attributes. */
#include "cufile_reg.h"
#include "config.h"
#include "log.h"
#include "stats.h"
#include "symbols.h"
#include "cufile_layer.h"

#include <stdatomic.h>

/* libcuda's, to tell device memory from host memory and find its allocation. */
static CUresult (*real_attrs)(unsigned, int *, void **, CUdeviceptr);
static _Atomic size_t register_max; /* DSP_CUFILE_REGISTER_MAX, set at resolution */

/* Device allocations the shim registered (or failed to: `failed`, so the
 * registration is not retried on every call). */
#define NENTRIES 512
struct dsp_cufile_reg {
    uintptr_t base; /* 0: free slot */
    size_t len;
    unsigned long long id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID: a freed and reused range differs */
    uint64_t used;         /* LRU clock */
    int inflight;          /* real reads and writes using the registration now */
    int dying, failed;
    int pending;       /* the shim's cuFileBufRegister of it is in progress, outside the lock */
    uint64_t close_at; /* close_gen when that registration started */
};
static DSP_LARGE_BSS struct dsp_cufile_reg entries[NENTRIES];
static size_t registered_bytes; /* pending registrations included: they hold their room */
static uint64_t lru_clock;
static int closing;        /* cuFileDriverClose calls in progress: no new registration */
static uint64_t close_gen; /* successful closes so far */

/* Ranges the application registered itself (exact bases, as cuFile wants). */
#define NAPP 1024
static DSP_LARGE_BSS struct {
    uintptr_t base;
    size_t len;
} app[NAPP];
static int napp, app_overflow;

void dsp_cufile_reg_start(void) {
    atomic_store_explicit(&register_max, (size_t)dsp_opt(DSP_OPT_CUFILE_REGISTER_MAX),
                          memory_order_relaxed);
}

void dsp_cufile_resolve_attrs(void) {
    if (!__atomic_load_n(&real_attrs, __ATOMIC_ACQUIRE))
        __atomic_store_n(
            &real_attrs,
            (__typeof__(real_attrs))dsp_sym_next("cuPointerGetAttributes", "libcuda.so"),
            __ATOMIC_RELEASE);
}

static int overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen) {
    return a < b + blen && b < a + alen;
}

static int app_overlap(uintptr_t base, size_t len) {
    for (int i = 0; i < napp; i++)
        if (overlaps(app[i].base, app[i].len, base, len)) return 1;
    return 0;
}

/* Under dsp_cufile_mu, which it drops around the real cuFileBufDeregister:
 * waits until no call uses the registration, then releases it. The entry
 * stays, dying, until the library has answered; the table may have changed
 * meanwhile, so the caller looks at it again. */
static void entry_drop(struct dsp_cufile_reg *e) {
    e->dying = 1;
    while (e->inflight) pthread_cond_wait(&dsp_cufile_idle, &dsp_cufile_mu);
    if (!e->failed) {
        uintptr_t base = e->base;
        pthread_mutex_unlock(&dsp_cufile_mu);
        CUfileError_t rc = dsp_cufile_real_buf_deregister((const void *)base);
        pthread_mutex_lock(&dsp_cufile_mu);
        if (rc.err != CU_FILE_SUCCESS)
            dsp_debug("cuFileBufDeregister of a registration of the shim's: error %d", rc.err);
        registered_bytes -= e->len;
    }
    *e = (struct dsp_cufile_reg){0};
    pthread_cond_broadcast(&dsp_cufile_idle); /* for those waiting on a dying entry */
}

/* Under dsp_cufile_mu: the least recently used idle registration, or NULL. */
static struct dsp_cufile_reg *lru_victim(void) {
    struct dsp_cufile_reg *v = NULL;
    for (int i = 0; i < NENTRIES; i++) {
        struct dsp_cufile_reg *e = &entries[i];
        if (e->base && !e->dying && !e->pending && !e->inflight && (!v || e->used < v->used)) v = e;
    }
    return v;
}

struct devbuf {
    uintptr_t start;
    size_t len;
    unsigned long long id;
};

/* The device allocation holding [p, p+size), asked the way cuFile itself asks
 * (the driver's pointer attributes): 1 and *d filled, else 0. */
static int device_buffer(uintptr_t p, size_t size, struct devbuf *d) {
    CUresult (*fn)(unsigned, int *, void **, CUdeviceptr) =
        __atomic_load_n(&real_attrs, __ATOMIC_ACQUIRE);
    if (!fn) return 0;
    int at[5] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                 CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned type = 0;
    CUdeviceptr start = 0;
    size_t len = 0;
    unsigned long long id = 0;
    uint64_t managed = 0; /* a bool in the driver: any width reads right when zeroed */
    void *data[5] = {&type, &start, &len, &id, &managed};
    if (fn(5, at, data, (CUdeviceptr)p) != CUDA_SUCCESS) return 0;
    if (type != CU_MEMORYTYPE_DEVICE || managed || !len || p < start || p - start > len ||
        size > len - (p - start))
        return 0;
    *d = (struct devbuf){(uintptr_t)start, len, id};
    return 1;
}

struct dsp_cufile_reg *dsp_cufile_reg_acquire(uintptr_t p, size_t size, uintptr_t *base) {
    struct devbuf d;
    size_t max = atomic_load_explicit(&register_max, memory_order_relaxed);
    if (!max || !device_buffer(p, size, &d) || d.len > max) return NULL;
    pthread_mutex_lock(&dsp_cufile_mu);
    struct dsp_cufile_reg *got = NULL;
again:
    /* The application's own, or a close under way: nothing registered now. */
    if (closing || app_overflow || app_overlap(d.start, d.len)) goto out;
    for (int i = 0; i < NENTRIES; i++) {
        struct dsp_cufile_reg *e = &entries[i];
        if (!e->base || !overlaps(e->base, e->len ? e->len : 1, d.start, d.len)) continue;
        /* Being registered or released by another thread, which is inside
         * the library: this call passes through rather than wait on it. */
        if (e->dying || e->pending) goto out;
        if (e->base == d.start && e->id == d.id && (e->len == d.len || e->failed)) {
            if (e->failed) goto out;
            got = e;
            goto use;
        }
        /* The range was freed and allocated again (a new buffer id), or
         * belongs to another allocation now: that registration is stale. */
        entry_drop(e);
        goto again;
    }
    /* Room: the least recently used idle registrations go first (each drop
     * lets others in, so the table is read again after it). */
    struct dsp_cufile_reg *slot = NULL;
    if (registered_bytes + d.len > max) {
        struct dsp_cufile_reg *v = lru_victim();
        if (!v) goto out; /* everything is in use: this call passes through */
        entry_drop(v);
        goto again;
    }
    for (int i = 0; i < NENTRIES && !slot; i++)
        if (!entries[i].base) slot = &entries[i];
    if (!slot) {
        struct dsp_cufile_reg *v = lru_victim();
        if (!v) goto out;
        entry_drop(v);
        goto again;
    }
    *slot = (struct dsp_cufile_reg){.base = d.start,
                                    .len = d.len,
                                    .id = d.id,
                                    .used = ++lru_clock,
                                    .pending = 1,
                                    .close_at = close_gen};
    registered_bytes += d.len;
    pthread_mutex_unlock(&dsp_cufile_mu);
    CUfileError_t rc = dsp_cufile_real_buf_register((const void *)d.start, d.len, 0);
    pthread_mutex_lock(&dsp_cufile_mu);
    slot->pending = 0;
    pthread_cond_broadcast(&dsp_cufile_idle); /* for an application registration waiting on it */
    if (rc.err != CU_FILE_SUCCESS) registered_bytes -= d.len;
    if (rc.err == CU_FILE_DRIVER_NOT_INITIALIZED || rc.err == CU_FILE_DRIVER_CLOSING) {
        /* Not the allocation's fault: try again at the next call. */
        *slot = (struct dsp_cufile_reg){0};
        goto out;
    }
    if (rc.err != CU_FILE_SUCCESS) {
        slot->len = 0;
        slot->failed = 1;
        dsp_once(DSP_LOG_WARN,
                 "cuFileBufRegister of a device allocation of %zu bytes failed (error %d, "
                 "CUDA %d); calls into it go to cuFile unchanged",
                 d.len, rc.err, rc.cu_err);
        goto out;
    }
    if (slot->close_at != close_gen) {
        /* The driver was closed meanwhile: whether that ended this
         * registration is not known, so it is released, not kept. */
        entry_drop(slot);
        goto out;
    }
    dsp_stat_add(DSP_ST_cufile_autoregistered, 1);
    got = slot;
use:
    got->used = ++lru_clock;
    got->inflight++;
    *base = got->base;
out:
    pthread_mutex_unlock(&dsp_cufile_mu);
    return got;
}

void dsp_cufile_reg_release(struct dsp_cufile_reg *r) {
    dsp_cufile_release(&r->inflight);
}

int dsp_cufile_reg_has(uintptr_t base) {
    for (int i = 0; i < NENTRIES; i++)
        if (entries[i].base == base && !entries[i].failed && !entries[i].dying) return 1;
    return 0;
}

void dsp_cufile_reg_retry_failed(void) {
    for (int i = 0; i < NENTRIES; i++)
        if (entries[i].base && entries[i].failed && !entries[i].inflight) entries[i].base = 0;
}

void dsp_cufile_reg_close_begin(void) {
    closing++;
again:
    for (int i = 0; i < NENTRIES; i++)
        if (entries[i].base && !entries[i].dying && !entries[i].pending) {
            entry_drop(&entries[i]);
            goto again;
        }
}

void dsp_cufile_reg_close_end(int ok) {
    closing--;
    if (ok) close_gen++;
}

int dsp_cufile_app_may_own(uintptr_t base, size_t len) {
    return app_overflow || app_overlap(base, len);
}

int dsp_cufile_app_register(uintptr_t base, size_t len) {
    int recorded = napp < NAPP;
    if (recorded) {
        app[napp].base = base;
        app[napp].len = len;
        napp++;
    } else if (!app_overflow) {
        app_overflow = 1; /* unknown registrations: register nothing more */
        dsp_once(DSP_LOG_WARN,
                 "more than %d buffers registered by the application: the shim "
                 "registers no more device memory of its own",
                 NAPP);
    }
again:
    for (int i = 0; i < NENTRIES; i++) {
        struct dsp_cufile_reg *e = &entries[i];
        if (!e->base || !overlaps(e->base, e->len ? e->len : 1, base, len)) continue;
        /* Being registered or released by another thread: the application's
         * call must come after it, as it would without the shim. */
        if (e->dying || e->pending)
            pthread_cond_wait(&dsp_cufile_idle, &dsp_cufile_mu);
        else
            entry_drop(e);
        goto again;
    }
    return recorded;
}

int dsp_cufile_app_has(uintptr_t base) {
    for (int i = 0; i < napp; i++)
        if (app[i].base == base) return 1;
    return 0;
}

void dsp_cufile_app_forget(uintptr_t base) {
    for (int i = 0; i < napp; i++)
        if (app[i].base == base) {
            app[i] = app[--napp];
            return;
        }
}

void dsp_cufile_app_forget_all(void) {
    napp = 0;
    app_overflow = 0;
}

void dsp_cufile_reg_reset(void) {
    for (int i = 0; i < NENTRIES; i++) entries[i] = (struct dsp_cufile_reg){0};
    registered_bytes = 0;
    closing = 0;
    napp = 0;
}
