/* The statistics read out: one JSON object (dsp_stats_json, the stats file),
 * the DSP_STATS summary and the DSP_STATS_FILE object at exit. Above the node
 * ledger, whose figures it refreshes first; the counters are stats.c's. */
#include "config.h"
#include "errname.h"
#include "fmt.h"
#include "internal.h"
#include "log.h"
#include "node.h"
#include "numa.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* renameat */
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const stat_key[DSP_ST_COUNT] = {
#define DSP_STAT(key, kind, help) #key,
#include "stats_keys.h"
#undef DSP_STAT
};

int dsp_stats_format_json(char *buf, size_t cap) {
    dsp_node_publish(); /* the node's figures as they are now */
    size_t n = (size_t)dsp_fmt(buf, cap, "{\"version\":\"%s\",\"pid\":%d", DSP_VERSION_STRING,
                               (int)getpid());
    if (dsp_node_rank() >= 0) { /* which rank of a job this is (node.c, rank_vars) */
        size_t room = n < cap ? cap - n : 0;
        n += (size_t)dsp_fmt(room ? buf + n : NULL, room, ",\"rank\":%d", dsp_node_rank());
    }
    for (int i = 0; i < DSP_ST_COUNT; i++) {
        size_t room = n < cap ? cap - n : 0;
        n += (size_t)dsp_fmt(room ? buf + n : NULL, room, ",\"%s\":%llu", stat_key[i],
                             (unsigned long long)dsp_stat_get((enum dsp_stat_id)i));
    }
    for (int node = 0; node < DSP_NUMA_NODES; node++) { /* flat, as every key (numa.h) */
        struct dsp_numa_node_stats ns;
        if (!dsp_numa_node_stats(node, &ns)) continue;
        size_t room = n < cap ? cap - n : 0;
        n += (size_t)dsp_fmt(room ? buf + n : NULL, room,
                             ",\"numa_node%d_pinned_bytes\":%llu,\"numa_node%d_pooled_bytes\":%llu,"
                             "\"numa_node%d_fallbacks\":%llu",
                             node, (unsigned long long)ns.pinned, node,
                             (unsigned long long)ns.pooled, node, (unsigned long long)ns.fallbacks);
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
            if (n + 1 >= cap) return -ENAMETOOLONG;
            out[n++] = *s;
        }
    }
    if (!cap) return -ENAMETOOLONG;
    out[n] = 0;
    return 0;
}

/* "1 block", "2 blocks": the summary is read by people (issue 31). */
static const char *per(unsigned long long n, const char *one, const char *many) {
    return n == 1 ? one : many;
}

static void print_summary(void) {
    char a[32], b[32], c[32], d[32], e[32];
    dsp_node_publish();
#define G(k)            (unsigned long long)dsp_stat_get(DSP_ST_##k)
#define N(k, one, many) G(k), per(G(k), one, many)
    dsp_say("stats: pinned %s now, %s at peak, budget %s; %llu %s live (%s)",
            dsp_fmt_bytes(a, sizeof a, G(pinned_bytes)),
            dsp_fmt_bytes(b, sizeof b, G(pinned_bytes_peak)),
            dsp_fmt_bytes(c, sizeof c, G(budget_bytes)), N(blocks_live, "block", "blocks"),
            dsp_fmt_bytes(d, sizeof d, G(live_bytes)));
    dsp_say("stats: pool %llu %s, %llu %s, %s cached, %llu released; newly pinned %s",
            N(pool_hits, "hit", "hits"), N(pool_misses, "miss", "misses"),
            dsp_fmt_bytes(a, sizeof a, G(pool_cached_bytes)), G(pool_releases),
            dsp_fmt_bytes(e, sizeof e, G(pinned_new_bytes)));
    dsp_say("stats: %llu %s, %llu %s, %llu %s to the real function",
            N(pin_failures, "pin failure", "pin failures"),
            N(budget_refusals, "budget refusal", "budget refusals"),
            N(fallbacks, "fallback", "fallbacks"));
    if (G(node_cap_bytes))
        dsp_say("stats: node ledger: %s of %s pinned by %llu %s; %llu %s by the node cap, %llu "
                "%s; %s reclaimed from dead processes; pool given back %llu %s on request",
                dsp_fmt_bytes(a, sizeof a, G(node_pinned_bytes)),
                dsp_fmt_bytes(b, sizeof b, G(node_cap_bytes)),
                N(node_users, "process", "processes"), N(node_refusals, "refusal", "refusals"),
                N(node_waits, "wait", "waits"), dsp_fmt_bytes(c, sizeof c, G(node_reclaimed_bytes)),
                N(node_yields, "time", "times"));
    for (int node = 0; node < DSP_NUMA_NODES; node++) {
        struct dsp_numa_node_stats ns;
        if (dsp_numa_node_stats(node, &ns))
            dsp_say("stats: NUMA node %d: %s pinned, %s pooled, %llu %s elsewhere", node,
                    dsp_fmt_bytes(a, sizeof a, ns.pinned), dsp_fmt_bytes(b, sizeof b, ns.pooled),
                    (unsigned long long)ns.fallbacks, per(ns.fallbacks, "block", "blocks"));
    }
    if (G(aio_iocbs))
        dsp_say("stats: libaio %llu %s: %llu direct pinned, %llu direct unpinned, %llu "
                "bounced (%s), %llu passed through",
                N(aio_iocbs, "iocb", "iocbs"), G(aio_direct_pinned), G(aio_direct_unpinned),
                G(aio_bounced), dsp_fmt_bytes(a, sizeof a, G(aio_bounce_bytes)),
                G(aio_passthrough));
    if (G(cufile_direct_host) || G(cufile_autoregistered) || G(cufile_passthrough))
        dsp_say("stats: cuFile %llu %s into pinned memory done directly (%s), %llu %s "
                "registered, %llu %s passed through",
                N(cufile_direct_host, "read or write", "reads and writes"),
                dsp_fmt_bytes(a, sizeof a, G(cufile_direct_bytes)),
                N(cufile_autoregistered, "device allocation", "device allocations"),
                N(cufile_passthrough, "call", "calls"));
    if (G(malloc_hinted) || G(malloc_hint_rejected))
        dsp_say("stats: malloc hints: %llu %s pinned (%s live now), %llu left to the "
                "real allocator",
                N(malloc_hinted, "allocation", "allocations"),
                dsp_fmt_bytes(a, sizeof a, G(malloc_hinted_bytes)), G(malloc_hint_rejected));
#undef N
#undef G
}

/* "fd:N": the user asks explicitly for an open descriptor (a pipe, the
 * program's own stderr): the object is appended there, nothing truncated.
 * N, or -EINVAL when the value is a path. */
static int stats_fd(const char *v) {
    if (strncmp(v, "fd:", 3) != 0 || !v[3]) return -EINVAL;
    int n = 0;
    for (const char *p = v + 3; *p; p++) {
        if (*p < '0' || *p > '9' || n > 100000) return -EINVAL;
        n = n * 10 + (*p - '0');
    }
    return n;
}

static const char *kind_of(mode_t m) {
    return S_ISLNK(m)                 ? "symbolic link"
           : S_ISFIFO(m)              ? "FIFO"
           : S_ISDIR(m)               ? "directory"
           : S_ISCHR(m) || S_ISBLK(m) ? "device"
           : S_ISSOCK(m)              ? "socket"
                                      : "special file";
}

/* The stats file is often written by root into a directory others share
 * (/tmp/dsp.%p.json), so nothing planted at the path can steer it (issue 14:
 * a symlink there made root overwrite a 0600 file; a FIFO hung the exit; a
 * file of another user was truncated). Only the directory is looked up by
 * name; then a temporary file is created in it exclusively (O_EXCL never
 * follows a symlink, never opens a FIFO), written, and renamed over the name,
 * which replaces a directory entry and writes into no existing file. A name
 * that holds anything but a regular file of ours is left alone. 0, or -errno
 * (logged): -EISDIR for a name of a directory, -EEXIST for a name left alone. */
static int write_path(const char *path, const char *json, size_t n, unsigned mode) {
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char dir[4200];
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    if (!*name) {
        dsp_warn("DSP_STATS_FILE=%s names a directory, not a file; stats not written", path);
        return -EISDIR;
    }
    if (!slash)
        dir[0] = '.', dir[1] = 0;
    else if (dlen == 0)
        dir[0] = '/', dir[1] = 0;
    else
        memcpy(dir, path, dlen), dir[dlen] = 0;
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        int e = errno;
        dsp_warn("DSP_STATS_FILE: cannot open the directory %s (%s); stats not written", dir,
                 dsp_errname(e));
        return -e;
    }
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (!S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
        if (S_ISREG(st.st_mode))
            dsp_warn("DSP_STATS_FILE: %s belongs to uid %u, not to this process (uid %u); left "
                     "alone, stats not written",
                     path, (unsigned)st.st_uid, (unsigned)geteuid());
        else
            dsp_warn("DSP_STATS_FILE: %s is a %s, not a regular file; left alone, stats not "
                     "written (name the file itself, or fd:N for an open descriptor)",
                     path, kind_of(st.st_mode));
        close(dfd);
        return -EEXIST;
    }
    static _Atomic unsigned serial;
    char tmp[96];
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 8; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        dsp_fmt(tmp, sizeof tmp, ".dspreload-stats.%d.%u.%lx.tmp", (int)getpid(),
                atomic_fetch_add(&serial, 1), (unsigned long)ts.tv_nsec);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        dsp_warn("DSP_STATS_FILE: cannot create a file in %s (%s); stats not written", dir,
                 dsp_errname(e));
        close(dfd);
        return -e;
    }
    /* The mode the user chose, whatever the umask (0600 by default). */
    int err = fchmod(fd, mode) != 0 ? errno : 0;
    for (size_t done = 0; !err && done < n;) {
        ssize_t w = write(fd, json + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            err = w < 0 ? errno : EIO;
        else
            done += (size_t)w;
    }
    if (close(fd) != 0 && !err) err = errno;
    if (!err && renameat(dfd, tmp, dfd, name) != 0) err = errno;
    if (err) {
        unlinkat(dfd, tmp, 0);
        dsp_warn("DSP_STATS_FILE: cannot write %s (%s); stats not written", path, dsp_errname(err));
    }
    close(dfd);
    return -err;
}

static void write_file(const char *pattern) {
    char path[4200], json[8192];
    int n = dsp_stats_format_json(json, sizeof json - 1);
    if (n > (int)sizeof json - 2) n = (int)sizeof json - 2;
    json[n++] = '\n';
    int saved = errno;
    int fd = stats_fd(pattern);
    if (fd >= 0) {
        if (fcntl(fd, F_GETFD) < 0)
            dsp_warn("DSP_STATS_FILE=%s: descriptor %d is not open; stats not written", pattern,
                     fd);
        else
            dsp_write_all(fd, json, (size_t)n);
    } else if (dsp_stats_path(path, sizeof path, pattern, (int)getpid()) != 0) {
        dsp_warn("DSP_STATS_FILE=%s is too long once %%p is expanded; stats not written", pattern);
    } else {
        write_path(path, json, (size_t)n, (unsigned)dsp_opt(DSP_OPT_STATS_FILE_MODE));
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

/* The options first: active() reads every thread's counters, pages a
 * process that asked for no statistics never touches otherwise (issue 29). */
DSP_STARTUP_TEXT int dsp_stats_due_at_exit(void) {
    return (dsp_opt(DSP_OPT_STATS) || dsp_opt_str(DSP_OPT_STATS_FILE)[0]) && active();
}

DSP_STARTUP_TEXT void dsp_stats_at_exit(void) {
    if (!dsp_stats_due_at_exit()) return;
    if (dsp_opt(DSP_OPT_STATS)) print_summary();
    if (dsp_opt_str(DSP_OPT_STATS_FILE)[0]) write_file(dsp_opt_str(DSP_OPT_STATS_FILE));
}
