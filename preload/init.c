/* Library constructor and destructor: only in libdspreload.so (unit tests link
 * the core without them, so each test starts from a clean manager). */
#include "manager.h"
#include "stats.h"
#include "sys.h"

void dsp_malloc_init(void);   /* malloc.c */
void dsp_sigcalls_init(void); /* sigcalls.c */
void dsp_fdcalls_init(void);  /* fdcalls.c */

__attribute__((constructor)) static void dsp_preload_init(void) {
    dsp_sys_in_constructor(1); /* the pid is known (sys.h) */
    dsp_sigcalls_init();
    dsp_fdcalls_init();
    dsp_ensure_init();
    dsp_malloc_init();
    dsp_sys_in_constructor(0);
}

/* The loader's DT_FINI (meson.build: -Wl,-fini): crti.o's _fini does nothing
 * (destructors run from .fini_array, dsp_preload_fini below among them) and
 * lies on the last page of the library's code, a page fault at every exit
 * (issue 29); this one lies with the constructor's code (DSP_STARTUP_TEXT). */
void dsp_loader_fini(void);
DSP_STARTUP_TEXT void dsp_loader_fini(void) {}

__attribute__((destructor)) static void dsp_preload_fini(void) {
    if (atomic_load_explicit(&dsp_init_state, memory_order_acquire) != 2) return;
    /* The budget is planned at the first pin: a process that used the shim
     * without pinning (fallbacks, libaio passed through) plans it now, for
     * the summary's figure. */
    if (dsp_stats_due_at_exit() && !dsp_reentered()) dsp_plan();
    dsp_stats_at_exit();
}
