#include "config.h"
#include "log.h"
#include "helpers.h"

#include "harness.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define RAM ((size_t)16 << 30)

static long long parse(enum dsp_opt_id id, const char *text) {
    long long v = -12345;
    if (dsp_config_parse(id, text, RAM, &v) != 0) return -999;
    return v;
}

Test(config, sizes_take_binary_suffixes) {
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "4096"), 4096);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "64K"), 64 << 10);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "512m"), 512ll << 20);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "64G"), 64ll << 30);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "64GiB"), 64ll << 30);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "2TB"), 2ll << 40);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "1.5G"), 3ll << 29);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "0"), 0);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "4096B"), 4096);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "4096b"), 4096);
}

Test(config, percentages_are_shares_of_ram) {
    cr_assert_eq(parse(DSP_OPT_MAX_PINNED, "50%"), (long long)RAM / 2);
    cr_assert_eq(parse(DSP_OPT_MAX_PINNED, "100%"), (long long)RAM);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "12.5%"), (long long)RAM / 8);
    cr_assert_eq(parse(DSP_OPT_MAX_PINNED, "101%"), -999);
    cr_assert_eq(parse(DSP_OPT_ARENA_SIZE, "50%"), -999, "ARENA_SIZE takes no percentage");
}

Test(config, auto_only_where_the_default_is_auto) {
    cr_assert_eq(parse(DSP_OPT_MAX_PINNED, "auto"), (long long)DSP_SIZE_AUTO);
    cr_assert_eq(parse(DSP_OPT_MAX_PINNED, "AUTO"), (long long)DSP_SIZE_AUTO);
    cr_assert_eq(parse(DSP_OPT_POOL_MAX, "auto"), -999);
}

Test(config, malformed_and_overflowing_sizes_are_rejected) {
    const char *bad[] = {"",          "G",   "12Q",  "1.5B",  "12BB",
                         "4GB2",      "1.5", "-1",   "1..5G", "99999999999999999999",
                         "16777216T", "3 G", "0x10", "5%%"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(parse(DSP_OPT_POOL_MAX, bad[i]), -999, "'%s' should be rejected", bad[i]);
}

Test(config, enums_bools_and_ints) {
    cr_assert_eq(parse(DSP_OPT_LOG, "debug"), DSP_LOG_DEBUG);
    cr_assert_eq(parse(DSP_OPT_LOG, "ERROR"), DSP_LOG_ERROR);
    cr_assert_eq(parse(DSP_OPT_LOG, "verbose"), -999);
    cr_assert_eq(parse(DSP_OPT_HUGEPAGES, "never"), DSP_HUGEPAGES_NEVER);
    cr_assert_eq(parse(DSP_OPT_STATS, "yes"), 1);
    cr_assert_eq(parse(DSP_OPT_STATS, "off"), 0);
    cr_assert_eq(parse(DSP_OPT_STATS, "2"), -999);
    cr_assert_eq(parse(DSP_OPT_PREFAULT_THREADS, "8"), 8);
    cr_assert_eq(parse(DSP_OPT_PREFAULT_THREADS, "65"), -999);
}

Test(config, every_default_parses) {
    for (int i = 0; i < DSP_OPT_COUNT; i++) {
        long long v;
        cr_assert_eq(dsp_config_parse((enum dsp_opt_id)i, dsp_opt_desc[i].def, RAM, &v), 0,
                     "%s default '%s'", dsp_opt_desc[i].name, dsp_opt_desc[i].def);
    }
}

Test(config, bad_value_names_variable_and_forms_and_keeps_default) {
    log_capture_start();
    char *env[] = {"DSP_POOL_MAX=lots", "DSP_LOG=debug", NULL};
    dsp_config_load(env, RAM);
    const char *out = log_capture_collect();
    cr_assert(strstr(out, "DSP_POOL_MAX=lots is not valid (accepted: bytes (4G) or a share of RAM "
                          "(10%)); using the default 10%"),
              "got: %s", out);
    cr_assert_eq(dsp_opt(DSP_OPT_POOL_MAX), (long long)(RAM / 10));
    cr_assert_eq(dsp_opt(DSP_OPT_LOG), DSP_LOG_DEBUG);
}

/* Start-up reads no memory size (issue 29): shares, given or default, are
 * taken once the first pin has read the machine, exactly as if the memory
 * had been known at load; sizes in bytes stay as they were. */
Test(config, shares_are_taken_of_the_memory_set_at_the_first_pin) {
    char *env[] = {"DSP_MAX_PINNED=33.3%", "DSP_MALLOC_MAX=4G", NULL};
    dsp_config_load(env, 0);
    cr_assert_eq(dsp_opt(DSP_OPT_POOL_MAX), 0);
    cr_assert_eq(dsp_opt(DSP_OPT_MAX_PINNED), 0);
    dsp_config_set_memory(RAM);
    long long pool = dsp_opt(DSP_OPT_POOL_MAX), max = dsp_opt(DSP_OPT_MAX_PINNED);
    cr_assert_eq(dsp_opt(DSP_OPT_MALLOC_MAX), 4LL << 30);
    dsp_config_load(env, RAM); /* the figures of a load that knew the memory */
    cr_assert_eq(pool, dsp_opt(DSP_OPT_POOL_MAX));
    cr_assert_eq(max, dsp_opt(DSP_OPT_MAX_PINNED));
    cr_assert_eq(max, (long long)((unsigned __int128)RAM * 333 / 1000));
}

Test(config, unknown_variable_gets_closest_name) {
    log_capture_start();
    char *env[] = {"DSP_MAX_PINED=4G", "DSP_ZZZZZZZZ=1", "PATH=/bin", NULL};
    dsp_config_load(env, RAM);
    const char *out = log_capture_collect();
    cr_assert(strstr(out, "unknown variable DSP_MAX_PINED ignored; did you mean DSP_MAX_PINNED?"),
              "got: %s", out);
    cr_assert(strstr(out, "unknown variable DSP_ZZZZZZZZ ignored; `dspreload env` lists"),
              "got: %s", out);
    cr_assert_eq(dsp_opt(DSP_OPT_MAX_PINNED), (long long)DSP_SIZE_AUTO);
}

Test(config, closest_name_needs_a_near_miss) {
    cr_assert_str_eq(dsp_config_closest("DSP_POOL_MAXX"), "DSP_POOL_MAX");
    cr_assert_str_eq(dsp_config_closest("DSP_HUGEPAGE"), "DSP_HUGEPAGES");
    cr_assert_null(dsp_config_closest("DSP_FOO"));
}

Test(config, stats_file_is_kept_verbatim) {
    char *env[] = {"DSP_STATS_FILE=/tmp/dsp.%p.json", NULL};
    dsp_config_load(env, RAM);
    cr_assert_str_eq(dsp_opt_str(DSP_OPT_STATS_FILE), "/tmp/dsp.%p.json");
}

/* Secure execution (AT_SECURE): a less privileged user's environment must not
 * choose files, limits or output for the privileged process (issue 14). */
Test(config, secure_execution_honours_only_off_switches) {
    char *env[] = {"DSP_STATS_FILE=/etc/passwd",
                   "DSP_MAX_PINNED=1T",
                   "DSP_LOG=debug",
                   "DSP_MALLOC_MIN=4K",
                   "DSP_CUDA=off",
                   "DSP_CUFILE=OFF",
                   "DSP_STATS=0",
                   "DSP_STATS_FILE_MODE=0666",
                   NULL};
    log_capture_start();
    dsp_config_load_as(env, RAM, 1);
    const char *out = log_capture_collect();
    cr_assert_str_eq(dsp_opt_str(DSP_OPT_STATS_FILE), "");
    cr_assert_eq(dsp_opt(DSP_OPT_MAX_PINNED), (long long)DSP_SIZE_AUTO);
    cr_assert_eq(dsp_opt(DSP_OPT_LOG), DSP_LOG_WARN);
    cr_assert_eq(dsp_opt(DSP_OPT_MALLOC_MIN), (long long)DSP_SIZE_AUTO); /* off */
    cr_assert_eq(dsp_opt(DSP_OPT_STATS_FILE_MODE), 0600);
    cr_assert_eq(dsp_opt(DSP_OPT_CUDA), DSP_CUDA_OFF, "DSP_CUDA=off is honoured");
    cr_assert_eq(dsp_opt(DSP_OPT_CUFILE), DSP_CUFILE_OFF, "DSP_CUFILE=off is honoured");
    cr_assert(strstr(out, "secure execution (setuid, setgid or file capabilities): "
                          "DSP_STATS_FILE, DSP_MAX_PINNED, DSP_LOG, DSP_MALLOC_MIN, "
                          "DSP_STATS_FILE_MODE ignored"),
              "%s", out);
    cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);
    dsp_config_load_as(env, RAM, 0);
    cr_assert_str_eq(dsp_opt_str(DSP_OPT_STATS_FILE), "/etc/passwd",
                     "without AT_SECURE all are honoured");
}

Test(config, stats_file_mode_is_octal_permission_bits) {
    long long v;
    cr_assert_eq(dsp_config_parse(DSP_OPT_STATS_FILE_MODE, "0644", RAM, &v), 0);
    cr_assert_eq(v, 0644);
    cr_assert_eq(dsp_config_parse(DSP_OPT_STATS_FILE_MODE, "600", RAM, &v), 0);
    cr_assert_eq(v, 0600);
    cr_assert_eq(dsp_config_parse(DSP_OPT_STATS_FILE_MODE, "4755", RAM, &v), -EINVAL,
                 "no setuid bit");
    cr_assert_eq(dsp_config_parse(DSP_OPT_STATS_FILE_MODE, "0648", RAM, &v), -EINVAL);
    cr_assert_eq(dsp_config_parse(DSP_OPT_STATS_FILE_MODE, "", RAM, &v), -EINVAL);
}

/* The node ledger's options (issue 16): two off switches, both honoured under
 * secure execution; the key and the wait not. */
Test(config, node_options_and_their_off_switches) {
    cr_assert_eq(parse(DSP_OPT_NODE_MAX_PINNED, "auto"), (long long)DSP_SIZE_AUTO);
    cr_assert_eq(parse(DSP_OPT_NODE_MAX_PINNED, "off"), (long long)DSP_SIZE_OFF);
    cr_assert_eq(parse(DSP_OPT_NODE_MAX_PINNED, "50%"), (long long)(RAM / 2));
    cr_assert_eq(parse(DSP_OPT_MAX_PINNED, "off"), -999, "off only where the forms say so");
    cr_assert_eq(parse(DSP_OPT_NODE, "off"), DSP_NODE_OFF);
    cr_assert_eq(parse(DSP_OPT_NODE_WAIT, "0"), 0);
    cr_assert_eq(parse(DSP_OPT_NODE_WAIT, "60000"), 60000);
    cr_assert_eq(parse(DSP_OPT_NODE_WAIT, "60001"), -999);
    char *env[] = {"DSP_NODE=off", "DSP_NODE_MAX_PINNED=off", "DSP_NODE_KEY=theirs",
                   "DSP_NODE_WAIT=60000", NULL};
    log_capture_start();
    dsp_config_load_as(env, RAM, 1);
    const char *out = log_capture_collect();
    cr_assert_eq(dsp_opt(DSP_OPT_NODE), DSP_NODE_OFF);
    cr_assert_eq(dsp_opt(DSP_OPT_NODE_MAX_PINNED), (long long)DSP_SIZE_OFF);
    cr_assert_str_eq(dsp_opt_str(DSP_OPT_NODE_KEY), "",
                     "a setuid program's ledger is not the user's choice");
    cr_assert_eq(dsp_opt(DSP_OPT_NODE_WAIT), 300);
    cr_assert(strstr(out, "DSP_NODE_KEY, DSP_NODE_WAIT ignored"), "%s", out);
    dsp_config_load_as(env, RAM, 0);
    cr_assert_str_eq(dsp_opt_str(DSP_OPT_NODE_KEY), "theirs");
}

/* Issue 32: a row declares what secure execution honours; a SECURE_IGNORED row
 * takes not even its off words, whatever its type. */
Test(config, secure_ignored_rows_take_no_off_switch) {
    for (int i = 0; i < DSP_OPT_COUNT; i++) {
        const struct dsp_opt_desc *d = &dsp_opt_desc[i];
        if (d->secure != DSP_SECURE_IGNORED) continue;
        for (int w = 0; w < 3; w++) {
            char kv[96];
            snprintf(kv, sizeof kv, "%s=%s", d->name, (const char *[]){"0", "off", "never"}[w]);
            char *env[] = {kv, NULL};
            log_capture_start();
            dsp_config_load_as(env, RAM, 1);
            const char *out = log_capture_collect();
            cr_assert(strstr(out, "secure execution") && strstr(out, d->name), "%s: %s", kv, out);
        }
    }
}

/* Issue 32: a STRING row's buffer is its declared size: a value that fills it
 * (NUL included) is kept whole, one byte more is ignored, never cut. */
Test(config, string_rows_hold_their_declared_bytes) {
    static char kv[8192];
    for (int i = 0; i < DSP_OPT_COUNT; i++) {
        const struct dsp_opt_desc *d = &dsp_opt_desc[i];
        if (d->type != DSP_T_STRING) continue;
        cr_assert(d->str_cap > 1 && d->str_cap < sizeof kv - 64, "%s", d->name);
        for (size_t extra = 0; extra < 2; extra++) {
            size_t n = (size_t)snprintf(kv, sizeof kv, "%s=", d->name),
                   len = d->str_cap - 1 + extra;
            memset(kv + n, 'k', len);
            kv[n + len] = 0;
            char *env[] = {kv, NULL};
            log_capture_start();
            dsp_config_load_as(env, RAM, 0);
            const char *out = log_capture_collect();
            const char *v = dsp_opt_str((enum dsp_opt_id)i);
            if (extra) {
                cr_assert_str_eq(v, "", "%s: %s", d->name, out);
                cr_assert(strstr(out, "ignored"), "%s: %s", d->name, out);
            } else {
                cr_assert_eq(strlen(v), len, "%s", d->name);
            }
        }
    }
    cr_assert_eq(DSP_NODE_KEY_MAX, dsp_opt_desc[DSP_OPT_NODE_KEY].str_cap);
}

/* Issue 32: a SECURE_OFF row takes its off word under secure execution (what
 * docs/configuration.md, "Secure execution", lists from the same rows), and
 * no other value. */
Test(config, secure_off_rows_honour_their_off_word_only) {
    int honoured = 0;
    for (int i = 0; i < DSP_OPT_COUNT; i++) {
        const struct dsp_opt_desc *d = &dsp_opt_desc[i];
        if (d->secure != DSP_SECURE_OFF) continue;
        const char *word = d->type == DSP_T_BOOL ? "0" : "off";
        long long off;
        if (dsp_config_parse((enum dsp_opt_id)i, word, RAM, &off) != 0) word = "never";
        if (dsp_config_parse((enum dsp_opt_id)i, word, RAM, &off) != 0) continue;
        char kv[96];
        snprintf(kv, sizeof kv, "%s=%s", d->name, word);
        char *env[] = {kv, NULL};
        dsp_config_load_as(env, RAM, 1);
        cr_assert_eq(dsp_opt((enum dsp_opt_id)i), off, "%s", kv);
        snprintf(kv, sizeof kv, "%s=%s", d->name, d->type == DSP_T_BOOL ? "1" : "64M");
        log_capture_start();
        dsp_config_load_as(env, RAM, 1);
        const char *out = log_capture_collect();
        cr_assert(strstr(out, "secure execution") && strstr(out, d->name), "%s: %s", kv, out);
        honoured++;
    }
    cr_assert_eq(honoured, 8,
                 "DSP_STATS, NODE, NODE_MAX_PINNED, HUGEPAGES, CUDA, AIO_BOUNCE, "
                 "CUFILE, MALLOC_MIN");
}

/* dsp_config_env: getenv's answer, which node.c's rank detection uses at
 * start-up instead of getenv (a lazy binding, issue 29). */
Test(config, env_lookup_answers_as_getenv) {
    char *env[] = {"RANKX=9", "RANK", "LOCAL_RANK=3", "RANK=", "RANK=7", NULL};
    cr_assert_str_eq(dsp_config_env(env, "LOCAL_RANK"), "3");
    cr_assert_str_eq(dsp_config_env(env, "RANK"), "", "the first entry that is NAME=");
    cr_assert_null(dsp_config_env(env, "RAN"), "a prefix of a name is not the name");
    cr_assert_null(dsp_config_env(env, "SLURM_PROCID"));
    cr_assert_null(dsp_config_env(NULL, "RANK"));
}
