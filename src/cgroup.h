/* The process's memory cgroup: its limit and what it already uses. A pod or
 * container is usually far smaller than the host, and populating a block
 * past its limit gets the process OOM-killed (issue 12: dsp_alloc(1 GiB) in a
 * 512 MiB cgroup died with exit 137 where plain malloc worked). */
#ifndef DSP_CGROUP_H
#define DSP_CGROUP_H

#include <stddef.h>

struct dsp_cgroup {
    size_t limit;         /* the tightest level's limit, SIZE_MAX when no level has one */
    size_t usage;         /* that level's usage */
    size_t room;          /* limit - usage at the tightest level (SIZE_MAX: none) */
    int version;          /* 1 or 2; 0 when no memory cgroup was found */
    char file[256];       /* the file that set limit */
    char usage_file[256]; /* the file of usage */
};

/* Reads the memory cgroup described by proc_cgroup (the text of
 * /proc/self/cgroup) under the cgroup file systems mounted at root
 * (/sys/fs/cgroup): v2 memory.max and memory.high against memory.current,
 * v1 memory.limit_in_bytes against memory.usage_in_bytes, at every level from
 * the process's cgroup up to the root; the level with the least room wins.
 * Allocation-free. 0, or -ENOENT when no memory cgroup was found (out->room
 * is SIZE_MAX then). */
int dsp_cgroup_read(const char *root, const char *proc_cgroup, struct dsp_cgroup *out);

/* From the text of /proc/self/cgroup, the path of the line whose
 * controllers name `want` ("memory"; "" for the v2 line "0::"): 1 with
 * path set, else 0. */
int dsp_cgroup_path(const char *proc_cgroup, const char *want, char *path, size_t cap);

/* The same for this process, from /proc/self/cgroup and /sys/fs/cgroup: 0,
 * -ENOENT, or -errno when /proc/self/cgroup cannot be opened. With path, also
 * the cgroup's path (the memory controller's line, else the v2 line; "" when
 * neither), from the same reading. */
int dsp_cgroup_query(struct dsp_cgroup *out, char *path, size_t cap);

/* RAM, or the memory cgroup's room when that is smaller: the memory this
 * process's machine has, of which DSP_* shares (50%) and the auto budget are
 * taken (`dspreload doctor` and `dspreload env`; the library reads it with the
 * rest of the machine at its first pin, plan.h). */
size_t dsp_cgroup_ram(void);

/* For a new block of len bytes about to be populated, under the manager's
 * mutex: 1 (logged once) when the cgroup cannot hold it with a margin of
 * max(limit/16, 16 MiB) to spare, so the manager refuses with ENOMEM instead
 * of being OOM-killed, else 0. Every level is read at most once a second;
 * in between only the tightest level's limit and usage, and nothing where no
 * level has a limit. */
int dsp_cgroup_refuses(size_t len);
/* Under the manager's mutex: cg, read just now (with SIZE_MAX limit and room
 * when no memory cgroup was found), is dsp_cgroup_refuses's whole look, so
 * the first pin does not read every level a second time. */
void dsp_cgroup_seed(const struct dsp_cgroup *cg);

#endif
