#include "stats.h"

#include "config.h"
#include "fmt.h"
#include "log.h"

#include <dspreload.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

_Atomic uint64_t dsp_stat[DSP_ST_COUNT];

static const char *const stat_key[DSP_ST_COUNT] = {
#define DSP_STAT(key, kind, help) #key,
#include "stats_keys.h"
#undef DSP_STAT
};

void dsp_stat_max(enum dsp_stat_id id, uint64_t v) {
    uint64_t cur = atomic_load_explicit(&dsp_stat[id], memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(
                          &dsp_stat[id], &cur, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void dsp_stats_reset(void) {
    for (int i = 0; i < DSP_ST_COUNT; i++)
        atomic_store_explicit(&dsp_stat[i], 0, memory_order_relaxed);
}

int dsp_stats_format_json(char *buf, size_t cap) {
    size_t n =
        (size_t)dsp_fmt(buf, cap, "{\"version\":\"%s\",\"pid\":%d", dsp_version(), (int)getpid());
    for (int i = 0; i < DSP_ST_COUNT; i++) {
        size_t room = n < cap ? cap - n : 0;
        n += (size_t)dsp_fmt(room ? buf + n : NULL, room, ",\"%s\":%llu", stat_key[i],
                             (unsigned long long)dsp_stat_get((enum dsp_stat_id)i));
    }
    size_t room = n < cap ? cap - n : 0;
    n += (size_t)dsp_fmt(room ? buf + n : NULL, room, "}");
    return (int)n;
}

int dsp_stats_path(char *out, size_t cap, const char *pattern, int pid) {
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        char piece[24];
        const char *s = piece;
        if (p[0] == '%' && p[1] == 'p') {
            dsp_fmt(piece, sizeof piece, "%d", pid);
            p++;
        } else {
            piece[0] = *p, piece[1] = 0;
        }
        for (; *s; s++) {
            if (n + 1 >= cap) return -1;
            out[n++] = *s;
        }
    }
    if (!cap) return -1;
    out[n] = 0;
    return 0;
}

static void print_summary(void) {
    char a[32], b[32], c[32], d[32], e[32];
#define G(k) (unsigned long long)dsp_stat_get(DSP_ST_##k)
    dsp_say("stats: pinned %s now, %s at peak, budget %s; %llu blocks live (%s)",
            dsp_fmt_bytes(a, sizeof a, G(pinned_bytes)),
            dsp_fmt_bytes(b, sizeof b, G(pinned_bytes_peak)),
            dsp_fmt_bytes(c, sizeof c, G(budget_bytes)), G(blocks_live),
            dsp_fmt_bytes(d, sizeof d, G(live_bytes)));
    dsp_say("stats: pool %llu hits, %llu misses, %s cached, %llu released; newly pinned %s",
            G(pool_hits), G(pool_misses), dsp_fmt_bytes(a, sizeof a, G(pool_cached_bytes)),
            G(pool_releases), dsp_fmt_bytes(e, sizeof e, G(pinned_new_bytes)));
    dsp_say("stats: %llu pin failures, %llu budget refusals, %llu fallbacks to the real function",
            G(pin_failures), G(budget_refusals), G(fallbacks));
    if (G(aio_iocbs))
        dsp_say("stats: libaio %llu iocbs: %llu direct pinned, %llu direct unpinned, %llu "
                "bounced (%s), %llu passed through",
                G(aio_iocbs), G(aio_direct_pinned), G(aio_direct_unpinned), G(aio_bounced),
                dsp_fmt_bytes(a, sizeof a, G(aio_bounce_bytes)), G(aio_passthrough));
    if (G(cufile_direct_host) || G(cufile_autoregistered) || G(cufile_passthrough))
        dsp_say("stats: cuFile %llu reads/writes into pinned memory done directly (%s), %llu "
                "device allocations registered, %llu calls passed through",
                G(cufile_direct_host), dsp_fmt_bytes(a, sizeof a, G(cufile_direct_bytes)),
                G(cufile_autoregistered), G(cufile_passthrough));
    if (G(malloc_hinted) || G(malloc_hint_rejected))
        dsp_say("stats: malloc hints: %llu allocations pinned (%s live now), %llu left to the "
                "real allocator",
                G(malloc_hinted), dsp_fmt_bytes(a, sizeof a, G(malloc_hinted_bytes)),
                G(malloc_hint_rejected));
#undef G
}

static void write_file(const char *pattern) {
    char path[4200], json[8192];
    if (dsp_stats_path(path, sizeof path, pattern, (int)getpid()) != 0) {
        dsp_warn("DSP_STATS_FILE=%s is too long once %%p is expanded; stats not written", pattern);
        return;
    }
    int n = dsp_stats_format_json(json, sizeof json - 1);
    if (n > (int)sizeof json - 2) n = (int)sizeof json - 2;
    json[n++] = '\n';
    int saved = errno;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        dsp_warn("DSP_STATS_FILE: cannot write %s (errno %d); stats not written", path, errno);
    } else {
        dsp_write_all(fd, json, (size_t)n);
        close(fd);
    }
    errno = saved;
}

/* Whether this process used the shim at all. Under a launcher every process
 * of a job gets the library, and most (shells, pyenv shims, compilers,
 * data-loader helpers) never pin anything: they report nothing. */
static int active(void) {
    static const enum dsp_stat_id any[] = {DSP_ST_pool_hits,
                                           DSP_ST_pool_misses,
                                           DSP_ST_pin_failures,
                                           DSP_ST_budget_refusals,
                                           DSP_ST_fallbacks,
                                           DSP_ST_cuda_host_alloc_passthrough,
                                           DSP_ST_cuda_register_external,
                                           DSP_ST_cuda_registrations,
                                           DSP_ST_cufile_direct_host,
                                           DSP_ST_cufile_autoregistered,
                                           DSP_ST_cufile_passthrough,
                                           DSP_ST_malloc_hint_rejected,
                                           DSP_ST_blocks_live,
                                           DSP_ST_aio_iocbs};
    for (size_t i = 0; i < sizeof any / sizeof *any; i++)
        if (dsp_stat_get(any[i])) return 1;
    return 0;
}

void dsp_stats_at_exit(void) {
    if (!active()) return;
    if (dsp_opt(DSP_OPT_STATS)) print_summary();
    if (dsp_cfg.stats_file[0]) write_file(dsp_cfg.stats_file);
}
