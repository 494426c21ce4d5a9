/* The memory cgroup (cgroup.h). Everything here runs inside malloc, so it
 * reads files with open/read/close into stack buffers and formats paths with
 * dsp_fmt: nothing allocates. */
#include "cgroup.h"

#include "fmt.h"
#include "log.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NONE SIZE_MAX
/* cgroup v1 writes "no limit" as the largest page-aligned long (9223372036854771712). */
#define V1_UNLIMITED ((size_t)1 << 62)

/* A number file in dir: 1 and *v (NONE for "max"), or 0 when missing or garbage. */
static int read_size(const char *dir, const char *name, size_t *v) {
    char path[512];
    if (dsp_fmt(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 0;
    return dsp_sys_read_size(path, v);
}

static int is_dir(const char *path) {
    int fd = dsp_sys_open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return 0;
    dsp_sys_close(fd);
    return 1;
}

/* One level: its limit and usage by the version's files. */
static void level(const char *dir, int version, struct dsp_cgroup *out) {
    size_t lim = NONE, usage = 0, v;
    const char *from = NULL;
    if (version == 2) {
        if (read_size(dir, "memory.max", &v) && v < lim) lim = v, from = "memory.max";
        if (read_size(dir, "memory.high", &v) && v < lim) lim = v, from = "memory.high";
        if (!read_size(dir, "memory.current", &usage)) usage = 0;
    } else {
        if (read_size(dir, "memory.limit_in_bytes", &v) && v < V1_UNLIMITED && v < lim)
            lim = v, from = "memory.limit_in_bytes";
        if (!read_size(dir, "memory.usage_in_bytes", &usage)) usage = 0;
    }
    if (lim == NONE) return;
    size_t room = lim > usage ? lim - usage : 0;
    if (room >= out->room) return;
    out->room = room;
    out->limit = lim;
    out->usage = usage;
    dsp_fmt(out->file, sizeof out->file, "%s/%s", dir, from);
    dsp_fmt(out->usage_file, sizeof out->usage_file, "%s/%s", dir,
            version == 2 ? "memory.current" : "memory.usage_in_bytes");
}

/* Every level from dir up to top (both included). */
static void walk(char *dir, size_t top_len, int version, struct dsp_cgroup *out) {
    for (;;) {
        level(dir, version, out);
        size_t n = strlen(dir);
        if (n <= top_len) return;
        while (n > top_len && dir[n - 1] != '/') n--;
        if (n > top_len) n--; /* the slash */
        dir[n] = 0;
    }
}

int dsp_cgroup_path(const char *text, const char *want, char *path, size_t cap) {
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            size_t clen = (size_t)(c2 - c1 - 1), wlen = strlen(want);
            int match = 0;
            if (!wlen) {
                match = clen == 0 && c1 == line + 1 && line[0] == '0';
            } else {
                for (const char *t = c1 + 1; t < c2;) { /* comma-separated controllers */
                    const char *comma = memchr(t, ',', (size_t)(c2 - t));
                    size_t tl = comma ? (size_t)(comma - t) : (size_t)(c2 - t);
                    if (tl == wlen && !memcmp(t, want, wlen)) match = 1;
                    t += tl + 1;
                }
            }
            size_t plen = len - (size_t)(c2 + 1 - line);
            if (match && plen < cap) {
                memcpy(path, c2 + 1, plen);
                path[plen] = 0;
                return 1;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* The process's directory under a hierarchy mounted at top; in a container
 * whose cgroup namespace was not unshared the path may not exist there, and
 * the mounted root is the container's own cgroup. */
static int dir_for(const char *top, const char *path, char *dir, size_t cap) {
    if (!is_dir(top)) return 0;
    if (dsp_fmt(dir, cap, "%s%s", top, strcmp(path, "/") ? path : "") < (int)cap && is_dir(dir))
        return 1;
    dsp_fmt(dir, cap, "%s", top);
    return 1;
}

int dsp_cgroup_read(const char *root, const char *proc_cgroup, struct dsp_cgroup *out) {
    memset(out, 0, sizeof *out);
    out->limit = out->room = NONE;
    char path[512], top[512], dir[1024];
    int found = 0;
    if (dsp_cgroup_path(proc_cgroup, "memory", path, sizeof path)) {
        dsp_fmt(top, sizeof top, "%s/memory", root);
        if (dir_for(top, path, dir, sizeof dir)) {
            struct dsp_cgroup v1 = *out;
            walk(dir, strlen(top), 1, &v1);
            v1.version = 1;
            *out = v1;
            found = 1;
        }
    }
    if (dsp_cgroup_path(proc_cgroup, "", path, sizeof path)) {
        /* Pure v2 at root, or the unified hierarchy of a hybrid setup. */
        const char *tops[] = {"", "/unified"};
        for (int i = 0; i < 2; i++) {
            dsp_fmt(top, sizeof top, "%s%s", root, tops[i]);
            char probe[600];
            dsp_fmt(probe, sizeof probe, "%s/cgroup.controllers", top);
            char ctl[256];
            if (dsp_sys_read(probe, ctl, sizeof ctl) <= 0 || !strstr(ctl, "memory")) continue;
            if (!dir_for(top, path, dir, sizeof dir)) continue;
            struct dsp_cgroup v2 = *out;
            walk(dir, strlen(top), 2, &v2);
            if (v2.room < out->room || !found) {
                *out = v2;
                out->version = 2;
            }
            found = 1;
            break;
        }
    }
    return found ? 0 : -ENOENT;
}

int dsp_cgroup_query(struct dsp_cgroup *out, char *path, size_t cap) {
    char text[4096];
    long n = dsp_sys_read("/proc/self/cgroup", text, sizeof text);
    if (path && (n <= 0 || (!dsp_cgroup_path(text, "memory", path, cap) &&
                            !dsp_cgroup_path(text, "", path, cap))))
        path[0] = 0;
    if (n <= 0) {
        memset(out, 0, sizeof *out);
        out->limit = out->room = NONE;
        return n < 0 ? (int)n : -ENOENT;
    }
    return dsp_cgroup_read("/sys/fs/cgroup", text, out);
}

size_t dsp_cgroup_ram(void) {
    size_t ram = dsp_sys_ram();
    struct dsp_cgroup cg;
    return dsp_cgroup_query(&cg, NULL, 0) == 0 && cg.room < ram ? cg.room : ram;
}

/* The last whole look (every level), and when it was: between whole looks,
 * at most a second apart, only the tightest level's two files are read again
 * (a whole look opened some 14 files a new block in a nested cgroup).
 * Under the manager's mutex, like every caller. */
static struct dsp_cgroup last;
static long looked_s = -1;

void dsp_cgroup_seed(const struct dsp_cgroup *cg) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    last = *cg;
    looked_s = (long)now.tv_sec;
}

int dsp_cgroup_refuses(size_t len) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    struct dsp_cgroup cg = last;
    if (looked_s < 0 || now.tv_sec - looked_s >= 1 ||
        (cg.limit != NONE &&
         !(dsp_sys_read_size(cg.file, &cg.limit) && dsp_sys_read_size(cg.usage_file, &cg.usage)))) {
        dsp_cgroup_query(&cg, NULL, 0); /* due, or the process moved: every level */
        last = cg;
        looked_s = (long)now.tv_sec;
    } else if (cg.limit != NONE) {
        cg.room = cg.limit > cg.usage ? cg.limit - cg.usage : 0;
    }
    if (cg.limit == NONE) return 0;
    size_t margin = cg.limit / 16 > 16 * ((size_t)1 << 20) ? cg.limit / 16 : 16 * ((size_t)1 << 20);
    if (cg.room > margin && len <= cg.room - margin) return 0;
    char a[32], b[32], c[32];
    dsp_once(DSP_LOG_WARN,
             "pinning %s refused: the memory cgroup allows %s (%s) and uses %s; populating "
             "it could get the process OOM-killed; the caller falls back",
             dsp_fmt_bytes(a, sizeof a, len), dsp_fmt_bytes(b, sizeof b, cg.limit), cg.file,
             dsp_fmt_bytes(c, sizeof c, cg.usage));
    errno = ENOMEM;
    return 1;
}
