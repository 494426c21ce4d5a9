#include "json_number.h"
#include "stats.h"
#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

Test(stats, json_is_valid_and_has_the_required_keys) {
    char *p = dsp_alloc(512 << 10);
    dsp_free(p);
    p = dsp_alloc(512 << 10);
    char buf[8192];
    int n = dsp_stats_json(buf, sizeof buf);
    cr_assert_eq(n, (int)strlen(buf));
    cr_assert(json_valid(buf), "%s", buf);
    const char *keys[] = {"pinned_bytes", "pinned_bytes_peak", "blocks_live", "pool_hits",
                          "pool_misses",  "pin_failures",      "fallbacks"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_assert_geq(dsp_json_number(buf, keys[i]), 0, "key %s missing in %s", keys[i], buf);
    cr_assert_eq(dsp_json_number(buf, "blocks_live"), 1);
    cr_assert_eq(dsp_json_number(buf, "pool_hits"), 1);
    cr_assert_eq(dsp_json_number(buf, "pool_misses"), 1);
    cr_assert_eq(dsp_json_number(buf, "pinned_bytes"), 512 << 10);
    cr_assert_eq(dsp_json_number(buf, "pid"), getpid());
}

Test(stats, snprintf_semantics) {
    char full[8192], small[16];
    int n = dsp_stats_json(full, sizeof full);
    memset(small, 'x', sizeof small);
    cr_assert_eq(dsp_stats_json(small, sizeof small), n);
    cr_assert_eq(small[15], 0);
    cr_assert_eq(strncmp(small, full, 15), 0);
    cr_assert_eq(dsp_stats_json(NULL, 0), n);
}

Test(stats, peak_tracks_the_high_water_mark) {
    char *a = dsp_alloc(1 << 20), *b = dsp_alloc(2 << 20);
    dsp_free(a);
    dsp_free(b);
    dsp_trim();
    cr_assert_eq(stat_of("pinned_bytes"), 0);
    cr_assert_eq(stat_of("pinned_bytes_peak"), 3 << 20);
}

Test(stats, path_pattern_expands_pid) {
    char out[64];
    cr_assert_eq(dsp_stats_path(out, sizeof out, "/tmp/s.%p.json", 42), 0);
    cr_assert_str_eq(out, "/tmp/s.42.json");
    cr_assert_eq(dsp_stats_path(out, sizeof out, "%p-%p%", 7), 0);
    cr_assert_str_eq(out, "7-7%");
    cr_assert_eq(dsp_stats_path(out, 8, "/tmp/long/%p", 123456), -ENAMETOOLONG);
}

/* At exit, through the shared library's destructor: run the helper program. */
static int run_prog(const char *stats_file, const char *stats, char *err, size_t cap,
                    pid_t *child) {
    const char *prog = getenv("DSPRELOAD_TEST_STATS_PROG");
    cr_assert_not_null(prog, "meson sets DSPRELOAD_TEST_STATS_PROG");
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        if (stats_file) setenv("DSP_STATS_FILE", stats_file, 1);
        if (stats) setenv("DSP_STATS", stats, 1);
        execl(prog, prog, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n < cap - 1 && (r = read(fds[0], err + n, cap - 1 - n)) > 0) n += (size_t)r;
    err[n] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    *child = pid;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(stats, file_written_at_exit_with_pid_in_name) {
    char err[4096], path[128], want[128];
    pid_t pid;
    snprintf(path, sizeof path, "/tmp/dsp-test-%d.%%p.json", getpid());
    cr_assert_eq(run_prog(path, NULL, err, sizeof err, &pid), 0, "%s", err);
    snprintf(want, sizeof want, "/tmp/dsp-test-%d.%d.json", getpid(), pid);
    FILE *f = fopen(want, "r");
    cr_assert_not_null(f, "%s not written", want);
    char json[8192] = {0};
    size_t n = fread(json, 1, sizeof json - 1, f);
    fclose(f);
    unlink(want);
    cr_assert_gt(n, 0);
    cr_assert(json_valid(json), "%s", json);
    cr_assert_eq(dsp_json_number(json, "pid"), pid);
    cr_assert_eq(dsp_json_number(json, "blocks_live"), 2);
    cr_assert_eq(dsp_json_number(json, "pool_hits"), 1);
    cr_assert_eq(err[0], 0, "nothing on stderr unless asked: %s", err);
}

Test(stats, summary_on_stderr_when_asked) {
    char err[4096];
    pid_t pid;
    cr_assert_eq(run_prog(NULL, "1", err, sizeof err, &pid), 0);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "dspreload[%d]: stats: pinned ", pid);
    cr_assert(strstr(err, prefix), "%s", err);
    cr_assert(strstr(err, "stats: pool 1 hit, 3 misses"), "%s", err);
}

/* --- the stats file cannot be steered (issue 14) --------------------------- */

static char *tmpdir(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/dsp-stats-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static void cleanup(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static size_t read_all(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return n;
}

/* Nothing but the expected names in dir: no temporary file left behind. */
static int entries(const char *dir) {
    char cmd[128], out[64];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    cr_assert_not_null(fgets(out, sizeof out, p));
    pclose(p);
    return atoi(out);
}

Test(stats, stats_file_does_not_follow_a_symlink) {
    char *dir = tmpdir(), victim[128], link[128], err[4096], got[64];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/s.json", dir);
    FILE *f = fopen(victim, "w");
    fputs("secret", f);
    fclose(f);
    cr_assert_eq(symlink(victim, link), 0);
    pid_t pid;
    cr_assert_eq(run_prog(link, NULL, err, sizeof err, &pid), 0);
    read_all(victim, got, sizeof got);
    cr_assert_str_eq(got, "secret", "the link's target was written");
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
    cr_assert(strstr(err, "is a symbolic link, not a regular file; left alone"), "%s", err);
    cr_assert_eq(entries(dir), 2);
    cleanup(dir);
}

Test(stats, stats_file_does_not_block_on_a_fifo) {
    char *dir = tmpdir(), fifo[128], err[4096];
    snprintf(fifo, sizeof fifo, "%s/s.json", dir);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    pid_t pid; /* a hang here is the bug: the test's timeout fails it */
    cr_assert_eq(run_prog(fifo, NULL, err, sizeof err, &pid), 0);
    cr_assert(strstr(err, "is a FIFO, not a regular file; left alone"), "%s", err);
    cleanup(dir);
}

/* Another user's file: tests/security/stats_file.sh, as that user. */

Test(stats, stats_file_replaces_its_own_file_whole_with_mode_0600) {
    char *dir = tmpdir(), path[128], err[4096], got[16384];
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w"); /* longer than the object: no stale tail may stay */
    for (int i = 0; i < 2000; i++) fputs("stale ", f);
    fclose(f);
    cr_assert_eq(chmod(path, 0644), 0);
    pid_t pid;
    cr_assert_eq(run_prog(path, NULL, err, sizeof err, &pid), 0, "%s", err);
    read_all(path, got, sizeof got);
    cr_assert(json_valid(got), "%s", got);
    cr_assert_null(strstr(got, "stale"));
    cr_assert_eq(dsp_json_number(got, "pid"), pid);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
    cr_assert_eq(entries(dir), 1, "a temporary file was left behind");
    cleanup(dir);
}

static void mode_0640(void) {
    setenv("DSP_STATS_FILE_MODE", "0640", 1);
}
Test(stats, stats_file_mode_is_the_users_choice_whatever_the_umask, .init = mode_0640) {
    char *dir = tmpdir(), path[128], err[4096];
    snprintf(path, sizeof path, "%s/s.json", dir);
    mode_t old = umask(077);
    pid_t pid;
    cr_assert_eq(run_prog(path, NULL, err, sizeof err, &pid), 0, "%s", err);
    umask(old);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
    cleanup(dir);
}

Test(stats, stats_file_does_not_truncate_stdout) {
    char err[4096];
    pid_t pid;
    cr_assert_eq(run_prog("/dev/stderr", NULL, err, sizeof err, &pid), 0);
    cr_assert(strstr(err, "/dev/stderr is a symbolic link"), "%s", err);
    cr_assert_null(strstr(err, "\"pid\""), "%s", err);
}

Test(stats, stats_file_fd_appends_to_a_descriptor) {
    char err[4096];
    pid_t pid;
    cr_assert_eq(run_prog("fd:2", NULL, err, sizeof err, &pid), 0);
    cr_assert(json_valid(err), "%s", err);
    cr_assert_eq(dsp_json_number(err, "pid"), pid);
    cr_assert_eq(run_prog("fd:9", NULL, err, sizeof err, &pid), 0);
    cr_assert(strstr(err, "descriptor 9 is not open"), "%s", err);
}
