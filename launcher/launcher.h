/* The dspreload command: shared between its subcommands. The calls go one way:
 * main.c calls the subcommands (doctor.c, stats.c, demo.c, and reference.c for
 * env); stats.c and doctor.c call node.c; main.c and the subcommands call
 * common.c, which calls none of them. */
#ifndef DSP_LAUNCHER_H
#define DSP_LAUNCHER_H

#include <stddef.h>

#define USAGE                                                                                      \
    "usage: dspreload [options] [VAR=value ...] [--] COMMAND [ARGS...]\n"                          \
    "       dspreload [options] [VAR=value ...] doctor [PATH ...] | demo\n"                        \
    "       dspreload env [--markdown|--stats-markdown]\n"                                         \
    "       dspreload stats FILE ... | stats --node [--key KEY]\n"

/* launcher/common.c */

/* Prints "dspreload: <message>" and the usage line to stderr; returns 2. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The library to preload: absolute path beside the launcher (build tree) or in
 * the installed libdir; NULL if not found. */
const char *find_library(void);

/* The directory of the running launcher. */
const char *self_dir(void);

/* ld.so splits LD_PRELOAD at these: a path with one cannot be preloaded. */
#define LD_PRELOAD_SEPARATORS " :"

/* Whether lib's path has a separator; and the sentence that says so. */
int preload_unsafe(const char *lib);
const char *preload_unsafe_why(const char *lib);

/* The subcommands (launcher/doctor.c, stats.c, demo.c), on the arguments after
 * their name. lib: the library --lib named (absolute), or NULL for
 * find_library(); stats reads no library. */
int cmd_doctor(int argc, char **argv, const char *lib);
int cmd_stats(int argc, char **argv, const char *lib);
int cmd_demo(int argc, char **argv, const char *lib);
/* stats --node [--key KEY] (launcher/node.c). */
int cmd_stats_node(int argc, char **argv);

/* A node ledger attached read-only, checked (launcher/node.c). idle: its
 * file names no segment any more (its last user exited): map is an empty
 * one, with the file's key. */
struct dsp_ledger_map;
struct node_view {
    int fd;
    const struct dsp_ledger_map *map;
    int idle;
    char why[160];
};
struct node_sum {
    unsigned live, gone;
    unsigned long long pinned, pooled, refused, gone_bytes;
};
int node_view_open(const char *path, struct node_view *v, const char **why);
void node_view_close(struct node_view *v);
void node_view_sum(const struct node_view *v, struct node_sum *s);
/* The mapping's key, bounded and escaped, into out (4 * DSP_LEDGER_KEY_MAX
 * bytes hold any). */
const char *node_view_key(const struct node_view *v, char *out, size_t cap);
/* A key (DSP_NODE_KEY's, or a cgroup path) for a terminal: its control
 * characters escaped as in log lines, into out (4 times its length holds it). */
const char *node_key_text(const char *key, char *out, size_t cap);

/* The reference of every DSP_* variable on fd: plain, or the Markdown of
 * docs/configuration.md (launcher/reference.c). */
void print_reference(int fd, int markdown);
/* docs/statistics.md: every statistic, from src/stats_keys.h. */
void print_stats_reference(int fd);

#endif
