/* The table of cuFile handles the application registered
 * (io/cufile_handles.h), under dsp_cufile_mu. */
#include "cufile_handles.h"
#include "cufile_layer.h"
#include "log.h"

#include <unistd.h>

static DSP_LARGE_BSS struct dsp_cufile_handle handles[DSP_CUFILE_NHANDLES];
static int handles_used; /* slots fill from the low end: none in use at or past this */

struct dsp_cufile_handle *dsp_cufile_handle_find(CUfileHandle_t h) {
    for (int i = 0; h && i < handles_used; i++)
        if (handles[i].h == h) return &handles[i];
    return NULL;
}

void dsp_cufile_handle_drop(struct dsp_cufile_handle *hd) {
    hd->dying = 1;
    while (hd->busy) pthread_cond_wait(&dsp_cufile_idle, &dsp_cufile_mu);
    if (hd->bfd >= 0) close(hd->bfd);
    *hd = (struct dsp_cufile_handle){0};
    pthread_cond_broadcast(&dsp_cufile_idle);
}

void dsp_cufile_handle_add(CUfileHandle_t h, int fd) {
    struct dsp_cufile_handle *hd =
        dsp_cufile_handle_find(h); /* a stale record of a reused handle */
    if (hd && !hd->dying) dsp_cufile_handle_drop(hd);
    hd = NULL;
    for (int i = 0; i < DSP_CUFILE_NHANDLES && !hd; i++)
        if (!handles[i].h) hd = &handles[i];
    if (hd) {
        *hd = (struct dsp_cufile_handle){.h = h, .fd = fd, .bfd = -1};
        if (hd - handles >= handles_used) handles_used = (int)(hd - handles) + 1;
    } else
        dsp_once(DSP_LOG_WARN,
                 "more than %d cuFile handles: I/O on the others goes to cuFile unchanged",
                 DSP_CUFILE_NHANDLES);
}

void dsp_cufile_handles_drop_all(void) {
    for (int i = 0; i < DSP_CUFILE_NHANDLES; i++)
        if (handles[i].h && !handles[i].dying) dsp_cufile_handle_drop(&handles[i]);
}

void dsp_cufile_handles_reset(void) {
    for (int i = 0; i < DSP_CUFILE_NHANDLES; i++)
        if (handles[i].h && handles[i].bfd >= 0) close(handles[i].bfd);
    for (int i = 0; i < DSP_CUFILE_NHANDLES; i++) handles[i] = (struct dsp_cufile_handle){0};
    handles_used = 0;
}
