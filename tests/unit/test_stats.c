#include "../../launcher/json_number.h"
#include "../../src/stats.h"
#include "helpers.h"

#include "harness.h"
#include <dspreload.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    cr_assert_eq(dsp_stats_path(out, 8, "/tmp/long/%p", 123456), -1);
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
    cr_assert(strstr(err, "stats: pool 1 hits, 3 misses"), "%s", err);
}
