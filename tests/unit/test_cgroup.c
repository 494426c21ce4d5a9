/* The memory cgroup parser (src/cgroup.c) on fake /sys/fs/cgroup trees: the
 * auto budget was 80% of host RAM whatever the container allowed, and
 * dsp_alloc(1 GiB) in a 512 MiB cgroup got the process OOM-killed (issue 12,
 * "Containers"). The real cgroup runs in tests/cgroup/limit.sh. */
#include "cgroup.h"
#include "sys.h"
#include "helpers.h"

#include "harness.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static char root[64];

static void remove_root(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
}

static void make_root(void) {
    strcpy(root, "/tmp/dsp-cgroup-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    atexit(remove_root);
}

/* mkdir -p root/rel */
static void dir(const char *rel) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') *p = 0, mkdir(path, 0755), *p = '/';
    mkdir(path, 0755);
}

static void put(const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void put_size(const char *rel, size_t v) {
    char num[32];
    snprintf(num, sizeof num, "%zu\n", v);
    put(rel, num);
}

static void v2_tree(void) {
    make_root();
    put("cgroup.controllers", "cpuset cpu io memory pids\n");
    dir("kubepods/pod1/ctr");
    put("kubepods/memory.max", "max\n");
    put_size("kubepods/memory.current", 900 * MiB);
    put_size("kubepods/pod1/memory.max", 1024 * MiB);
    put_size("kubepods/pod1/memory.current", 200 * MiB);
    put("kubepods/pod1/ctr/memory.max", "max\n");
    put_size("kubepods/pod1/ctr/memory.current", 150 * MiB);
}

Test(cgroup, v2_the_tightest_level_above_the_process_wins, .init = v2_tree) {
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, "0::/kubepods/pod1/ctr\n", &cg), 0);
    cr_assert_eq(cg.version, 2);
    cr_assert_eq(cg.limit, 1024 * MiB, "the pod's limit, one level up: %zu", cg.limit);
    cr_assert_eq(cg.usage, 200 * MiB);
    cr_assert_eq(cg.room, 824 * MiB);
    cr_assert(strstr(cg.file, "kubepods/pod1/memory.max"), "%s", cg.file);
}

Test(cgroup, v2_memory_high_below_max_is_the_limit, .init = v2_tree) {
    put_size("kubepods/pod1/ctr/memory.high", 512 * MiB);
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, "0::/kubepods/pod1/ctr\n", &cg), 0);
    cr_assert_eq(cg.limit, 512 * MiB);
    cr_assert_eq(cg.room, 362 * MiB);
    cr_assert(strstr(cg.file, "ctr/memory.high"), "%s", cg.file);
}

Test(cgroup, v2_no_limit_anywhere_means_none, .init = v2_tree) {
    put("kubepods/pod1/memory.max", "max\n");
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, "0::/kubepods/pod1/ctr\n", &cg), 0, "found, unlimited");
    cr_assert_eq(cg.limit, SIZE_MAX);
    cr_assert_eq(cg.room, SIZE_MAX);
}

Test(cgroup, v2_usage_past_the_limit_leaves_no_room, .init = v2_tree) {
    put_size("kubepods/pod1/memory.current", 1100 * MiB);
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, "0::/kubepods/pod1/ctr\n", &cg), 0);
    cr_assert_eq(cg.room, 0);
}

/* A container whose cgroup namespace was not unshared sees a path that does
 * not exist under its own mount: the mounted root is its cgroup. */
Test(cgroup, v2_container_root_when_the_path_is_not_mounted, .init = v2_tree) {
    put_size("memory.max", 256 * MiB);
    put_size("memory.current", 16 * MiB);
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, "0::/system.slice/docker-abc.scope\n", &cg), 0);
    cr_assert_eq(cg.limit, 256 * MiB);
    cr_assert_eq(cg.room, 240 * MiB);
}

static void v1_tree(void) {
    make_root();
    dir("memory/job/step");
    put("memory/memory.limit_in_bytes", "9223372036854771712\n");
    put_size("memory/memory.usage_in_bytes", 8000 * MiB);
    put("memory/job/memory.limit_in_bytes", "9223372036854771712\n");
    put_size("memory/job/memory.usage_in_bytes", 300 * MiB);
    put_size("memory/job/step/memory.limit_in_bytes", 512 * MiB);
    put_size("memory/job/step/memory.usage_in_bytes", 12 * MiB);
}

#define V1_SELF "12:pids:/job/step\n11:cpu,cpuacct:/job\n4:memory:/job/step\n1:name=systemd:/\n"

Test(cgroup, v1_limit_in_bytes_and_the_huge_unlimited_value, .init = v1_tree) {
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, V1_SELF, &cg), 0);
    cr_assert_eq(cg.version, 1);
    cr_assert_eq(cg.limit, 512 * MiB, "%zu", cg.limit);
    cr_assert_eq(cg.room, 500 * MiB);
    cr_assert(strstr(cg.file, "job/step/memory.limit_in_bytes"), "%s", cg.file);
    put("memory/job/step/memory.limit_in_bytes", "9223372036854771712\n");
    cr_assert_eq(dsp_cgroup_read(root, V1_SELF, &cg), 0);
    cr_assert_eq(cg.limit, SIZE_MAX, "v1's 'unlimited' is no limit: %zu", cg.limit);
}

Test(cgroup, v1_memory_among_other_controllers_on_its_line, .init = v1_tree) {
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, "7:memory,hugetlb:/job/step\n", &cg), 0);
    cr_assert_eq(cg.limit, 512 * MiB);
}

Test(cgroup, missing_files_and_garbage_are_no_limit, .init = v1_tree) {
    put("memory/job/step/memory.limit_in_bytes", "garbage\n");
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, V1_SELF, &cg), 0);
    cr_assert_eq(cg.limit, SIZE_MAX);
    cr_assert_eq(dsp_cgroup_read(root, "1:name=systemd:/\n", &cg), -ENOENT, "no memory controller");
    cr_assert_eq(cg.room, SIZE_MAX);
    cr_assert_eq(dsp_cgroup_read("/nonexistent", "0::/\n", &cg), -ENOENT);
}

/* Hybrid: v1 memory and a v2 unified hierarchy without the memory controller. */
Test(cgroup, hybrid_takes_v1_memory_when_unified_has_none, .init = v1_tree) {
    dir("unified/job");
    put("unified/cgroup.controllers", "pids\n");
    struct dsp_cgroup cg;
    cr_assert_eq(dsp_cgroup_read(root, "0::/job\n" V1_SELF, &cg), 0);
    cr_assert_eq(cg.version, 1);
    cr_assert_eq(cg.limit, 512 * MiB);
}

/* The process's own cgroup, whatever this machine has: the parser must not
 * crash or invent a limit bigger than the usage it reports. */
Test(cgroup, this_process) {
    struct dsp_cgroup cg;
    if (dsp_cgroup_query(&cg, NULL, 0) == 0 && cg.limit != SIZE_MAX)
        cr_assert_eq(cg.room, cg.limit > cg.usage ? cg.limit - cg.usage : 0);
    else
        cr_assert_eq(cg.room, SIZE_MAX);
}

/* The readers under the parser: a file that cannot be opened is -errno, a
 * number file that is missing or garbage is 0. */
Test(cgroup, a_missing_file_reads_as_enoent) {
    char buf[16];
    size_t v = 7;
    cr_assert_eq(dsp_sys_read("/nonexistent/memory.max", buf, sizeof buf), -ENOENT);
    cr_assert_eq(dsp_sys_read_size("/nonexistent/memory.max", &v), 0);
    cr_assert_eq(v, 7, "untouched");
}
