/* The budget: DSP_MAX_PINNED and the bytes it has pinned and locked
 * (budget.c). */
#ifndef DSP_BUDGET_H
#define DSP_BUDGET_H

#include <stddef.h>
#include <stdint.h>

struct dsp_manager;

void dsp_budget_configure(struct dsp_manager *m);
/* Under mu: 1 when len more pinned bytes would fit the cap once `released`
 * are given back, else 0. */
int dsp_budget_fits_after_release(struct dsp_manager *m, size_t len, size_t released);
/* The bytes the general pool must give back for len more to fit (0 when
 * they fit, or when even the whole pool would not be enough); lock: they
 * will be mlock'ed. */
size_t dsp_budget_excess(struct dsp_manager *m, size_t len, int lock);
/* 0, or -ENOMEM when len does not fit (the caller made room from the pool
 * first: dsp_pool_make_room); lock: the bytes will be mlock'ed. A refusal is logged and counted
 * (REFUSE_LOG), counted only (REFUSE_COUNT: the caller logs its own line) or neither
 * (REFUSE_SILENT: the caller retries). Regression: hinted allocations refused
 * under an 8 MiB RLIMIT_MEMLOCK showed as "0 budget refusals" (issue 14). */
enum { DSP_REFUSE_LOG, DSP_REFUSE_COUNT, DSP_REFUSE_SILENT };
int dsp_budget_reserve(struct dsp_manager *m, size_t len, int lock, int refuse);
void dsp_budget_release(struct dsp_manager *m, size_t len, int locked);
void dsp_budget_unlock(struct dsp_manager *m,
                       size_t len); /* reserved as locked, ended up unlocked */

#endif
