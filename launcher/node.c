/* dspreload stats --node [--key KEY]: the node ledgers of this user, read
 * live (src/ledger.h): one row per process, the totals against the cap. And
 * the read-only view doctor shows a line of. */
#include "config.h"
#include "fmt.h"
#include "launcher.h"
#include "ledger.h"
#include "sys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read-only and never following a link: a ledger is only shown when it is a
 * regular file of ours of the right size and format, naming a segment of
 * ours whose counters make sense, whatever sits at the name. */
int node_view_open(const char *path, struct node_view *v, const char **why) {
    static struct dsp_ledger_map empty; /* the view of a ledger without a segment */
    v->fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    v->map = NULL;
    v->idle = 0;
    if (v->fd < 0) return *why = strerror(errno), -1;
    struct stat st;
    struct dsp_ledger_file f;
    const char *bad = NULL;
    if (fstat(v->fd, &st) != 0 || !S_ISREG(st.st_mode))
        bad = "is not a regular file";
    else if (st.st_uid != geteuid())
        bad = "belongs to another user";
    else {
        int rc = dsp_ledger_read_file(v->fd, &f, (unsigned)geteuid(), v->why, &bad);
        if (rc != 0 && rc != -EINVAL && rc != -EPROTO && rc != -ENODATA) bad = strerror(-rc);
    }
    if (!bad) {
        v->map = dsp_ledger_attach(&f, (unsigned)geteuid(), 1);
        if (!v->map && !dsp_ledger_in_use(v->fd)) {
            /* No segment: it went with the last process that used it. */
            memcpy(empty.head.h.key, f.key, sizeof f.key);
            v->map = &empty;
            v->idle = 1;
            return 0;
        }
        if (!v->map)
            bad = "is in use by processes whose shared memory this one cannot reach (another IPC "
                  "namespace?)";
    }
    if (!bad && dsp_ledger_check(v->map, (unsigned)geteuid(), dsp_sys_ram(), &bad) == 0) return 0;
    node_view_close(v);
    *why = bad;
    return -1;
}

void node_view_close(struct node_view *v) {
    if (v->map && !v->idle) shmdt((const void *)v->map);
    if (v->fd >= 0) close(v->fd);
    v->map = NULL;
    v->fd = -1;
}

void node_view_sum(const struct node_view *v, struct node_sum *s) {
    memset(s, 0, sizeof *s);
    const struct dsp_ledger_map *m = v->map;
    uint32_t n = atomic_load(&m->head.h.hwm);
    for (uint32_t i = 0; i < n && i < DSP_LEDGER_SLOTS; i++) {
        const struct dsp_ledger_slot *sl = &m->slot[i];
        if (!atomic_load(&sl->state)) continue;
        int alive = dsp_ledger_slot_alive(v->fd, (int)i);
        if (alive == 0) {
            s->gone++;
            s->gone_bytes += atomic_load(&sl->reserved);
            continue;
        }
        s->live++;
        s->pinned += atomic_load(&sl->reserved);
        s->pooled += atomic_load(&sl->pooled);
        s->refused += atomic_load(&sl->refused);
    }
}

static void fmt_log(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dsp_vfmt_log(out, cap, fmt, ap);
    va_end(ap);
}

/* The key of a live mapping, for a terminal: copied first (another process
 * of this user may be writing it), cut at the header's size whatever it
 * holds, and its control characters escaped as in log lines (fmt.c). */
const char *node_view_key(const struct node_view *v, char *out, size_t cap) {
    char k[DSP_LEDGER_KEY_MAX];
    memcpy(k, (const char *)v->map->head.h.key, sizeof k);
    k[sizeof k - 1] = 0;
    return node_key_text(k, out, cap);
}

const char *node_key_text(const char *key, char *out, size_t cap) {
    fmt_log(out, cap, "%s", key);
    return out;
}

static void print_rank(int r) {
    if (r < 0)
        printf(" %6s", "-");
    else
        printf(" %6d", r);
}

static int show(const char *path) {
    struct node_view v;
    const char *why;
    if (node_view_open(path, &v, &why) != 0) {
        fprintf(stderr, "dspreload: stats --node: %s %s; not shown\n", path, why);
        return 1;
    }
    const struct dsp_ledger_map *m = v.map;
    struct node_sum sum;
    node_view_sum(&v, &sum);
    char a[32], b[32], c[32], k[4 * DSP_LEDGER_KEY_MAX];
    uint64_t cap_bytes = atomic_load(&m->head.h.cap);
    const char *cap = v.idle ? "none yet" : dsp_fmt_bytes(c, sizeof c, cap_bytes);
    /* What the pinned total is held to: the total's state. The slots are read
     * one by one while their owners reserve first and take back what passes
     * the cap (ledger.h), so a total read mid-way can be over it: said so. */
    char held[64] = "no cap yet";
    if (!v.idle)
        snprintf(held, sizeof held, "%s the cap of %s", sum.pinned > cap_bytes ? "over" : "under",
                 cap);
    if (v.idle)
        printf("ledger %s (%s): no process uses it (its shared memory went with the last one); "
               "the next to pin sets the cap\n",
               path, node_view_key(&v, k, sizeof k));
    else
        printf("ledger %s (%s): cap %s, %u %s, %s pinned\n", path, node_view_key(&v, k, sizeof k),
               cap, sum.live, sum.live == 1 ? "process" : "processes",
               dsp_fmt_bytes(b, sizeof b, sum.pinned));
    printf("%-10s %6s %6s %12s %12s %8s %s\n", "pid", "rank", "local", "pinned", "pooled",
           "refused", "state");
    uint32_t n = atomic_load(&m->head.h.hwm);
    for (uint32_t i = 0; i < n && i < DSP_LEDGER_SLOTS; i++) {
        const struct dsp_ledger_slot *sl = &m->slot[i];
        if (!atomic_load(&sl->state)) continue;
        int alive = dsp_ledger_slot_alive(v.fd, (int)i);
        printf("%-10d", sl->pid);
        print_rank(sl->rank);
        print_rank(sl->local_rank);
        printf(" %12s %12s %8llu %s\n", dsp_fmt_bytes(a, sizeof a, atomic_load(&sl->reserved)),
               dsp_fmt_bytes(b, sizeof b, atomic_load(&sl->pooled)),
               (unsigned long long)atomic_load(&sl->refused),
               alive == 0 ? "gone (reclaimed within a second, or at the next refusal)" : "live");
    }
    printf("%-10s %6s %6s %12s %12s %8llu %s\n", "total", "", "",
           dsp_fmt_bytes(a, sizeof a, sum.pinned), dsp_fmt_bytes(b, sizeof b, sum.pooled),
           (unsigned long long)sum.refused, held);
    node_view_close(&v);
    return 0;
}

int cmd_stats_node(int argc, char **argv) {
    const char *key = getenv("DSP_NODE_KEY");
    if (argc == 2 && !strcmp(argv[0], "--key"))
        key = argv[1];
    else if (argc)
        return usage_error("stats --node takes only --key KEY");
    if (key && strlen(key) >= DSP_NODE_KEY_MAX) {
        /* Processes ignore such a key (config.c) and use the default one:
         * never a ledger of a key cut short. */
        fprintf(stderr,
                "dspreload: stats --node: the key is longer than DSP_NODE_KEY's maximum of %u "
                "bytes; processes ignore such a DSP_NODE_KEY (they use the default key)\n",
                (unsigned)DSP_NODE_KEY_MAX - 1);
        return 2;
    }
    if (key && *key) {
        char k[DSP_LEDGER_KEY_MAX], path[160];
        snprintf(k, sizeof k, "key:%s", key);
        dsp_ledger_path(path, sizeof path, "/dev/shm", (unsigned)geteuid(), k);
        if (access(path, F_OK) != 0) {
            printf("no ledger for key %s (%s): no process of it has pinned yet\n", key, path);
            return 0;
        }
        return show(path);
    }
    char prefix[32];
    snprintf(prefix, sizeof prefix, "dspreload-%u-", (unsigned)geteuid());
    DIR *d = opendir("/dev/shm");
    if (!d) {
        printf("no /dev/shm: no node ledger on this machine\n");
        return 0;
    }
    int shown = 0, bad = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        char path[300];
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        if (shown++) printf("\n");
        bad |= show(path);
    }
    closedir(d);
    if (!shown) printf("no node ledger of uid %u in /dev/shm\n", (unsigned)geteuid());
    return bad;
}
