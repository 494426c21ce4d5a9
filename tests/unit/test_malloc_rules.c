/* The pure logic of malloc hints, in every build (the preloaded hooks
 * themselves are tested in tests/malloc, outside the sanitized builds). */
#include "config.h"
#include "malloc_rules.h"

#include "harness.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

Test(malloc_rules, posix_memalign_alignment_as_glibc) {
    size_t ok[] = {8, 16, 32, 4096, (size_t)1 << 20, (size_t)1 << 62};
    size_t bad[] = {0, 1, 2, 4, 3, 12, 24, 48, 4095, 4097, ((size_t)1 << 20) + 8};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        cr_assert(dsp_mrule_posix_align_ok(ok[i]), "%zu", ok[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_not(dsp_mrule_posix_align_ok(bad[i]), "%zu", bad[i]);
}

Test(malloc_rules, requests_pad_alignments_above_a_page) {
    size_t req = 0;
    cr_assert_eq(dsp_mrule_request(1000, 1, &req), 0);
    cr_assert_eq(req, 1000);
    cr_assert_eq(dsp_mrule_request(1000, 4096, &req), 0);
    cr_assert_eq(req, 1000, "blocks start on a page already");
    cr_assert_eq(dsp_mrule_request(1000, 65536, &req), 0);
    cr_assert_eq(req, 1000 + 65536 - 4096);
    cr_assert_eq(dsp_mrule_request(1000, 0, &req), 0, "0: no alignment asked");
}

Test(malloc_rules, requests_refused_when_not_ours_to_serve) {
    size_t req = 7;
    cr_assert_eq(dsp_mrule_request(1000, 24, &req), -EINVAL, "not a power of two");
    cr_assert_eq(dsp_mrule_request(1000, DSP_MRULE_MAX_ALIGN * 2, &req), -EINVAL);
    cr_assert_eq(dsp_mrule_request(SIZE_MAX - 100, 65536, &req), -EOVERFLOW, "overflow");
    cr_assert_eq(dsp_mrule_request(SIZE_MAX, 1, &req), -EOVERFLOW, "more than the manager serves");
    cr_assert_eq(dsp_mrule_request(0, 1, &req), -EINVAL, "zero bytes go to glibc");
    cr_assert_eq(req, 7, "untouched");
}

Test(malloc_rules, from_list_is_split_and_trimmed) {
    char names[DSP_MRULE_NAMES][DSP_MRULE_NAME_LEN];
    int dropped = -1;
    cr_assert_eq(dsp_mrule_names(" libtorch_cpu.so , libfoo,,libbar.so.2 ", names, DSP_MRULE_NAMES,
                                 &dropped),
                 3);
    cr_assert_str_eq(names[0], "libtorch_cpu.so");
    cr_assert_str_eq(names[1], "libfoo");
    cr_assert_str_eq(names[2], "libbar.so.2");
    cr_assert_eq(dropped, 0);
    cr_assert_eq(dsp_mrule_names("", names, DSP_MRULE_NAMES, &dropped), 0);
    cr_assert_eq(dsp_mrule_names(" , ,", names, DSP_MRULE_NAMES, &dropped), 0);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    cr_assert_eq(dsp_mrule_names(longname, names, DSP_MRULE_NAMES, &dropped), 0);
    cr_assert_eq(dropped, 1);
    cr_assert_eq(dsp_mrule_names("a,b,c", names, 2, &dropped), 2);
    cr_assert_eq(dropped, 1, "past the table");
}

Test(malloc_rules, names_match_file_names_up_to_a_dot) {
    char names[DSP_MRULE_NAMES][DSP_MRULE_NAME_LEN];
    int dropped, n = dsp_mrule_names("libfoo,libtorch_cpu.so", names, DSP_MRULE_NAMES, &dropped);
    const char(*c)[DSP_MRULE_NAME_LEN] = (const char(*)[DSP_MRULE_NAME_LEN])names;
    cr_assert(dsp_mrule_path_matches("/usr/lib/libfoo.so.1", c, n));
    cr_assert(dsp_mrule_path_matches("libfoo", c, n));
    cr_assert(dsp_mrule_path_matches("/x/site-packages/torch/lib/libtorch_cpu.so", c, n));
    cr_assert_not(dsp_mrule_path_matches("/usr/lib/libfoobar.so", c, n), "a longer name");
    cr_assert_not(dsp_mrule_path_matches("/usr/lib/libfoo/other.so", c, n), "a directory");
    cr_assert_not(dsp_mrule_path_matches("/usr/lib/libtorch_cpu.so.bak/x", c, n));
    cr_assert_not(dsp_mrule_path_matches("", c, n));
    cr_assert_not(dsp_mrule_path_matches(NULL, c, n));
}

Test(malloc_rules, config_min_is_off_unless_set) {
    long long v = 0;
    cr_assert_eq(dsp_config_parse(DSP_OPT_MALLOC_MIN, "off", 1 << 30, &v), 0);
    cr_assert_eq(v, (long long)DSP_SIZE_AUTO);
    cr_assert_eq(dsp_config_parse(DSP_OPT_MALLOC_MIN, "64K", 1 << 30, &v), 0);
    cr_assert_eq(v, 65536);
    cr_assert_eq(dsp_config_parse(DSP_OPT_MALLOC_MIN, "auto", 1 << 30, &v), -EINVAL);
    cr_assert_eq(dsp_config_parse(DSP_OPT_MALLOC_MAX, "auto", 1 << 30, &v), 0);
    cr_assert_eq(dsp_config_parse(DSP_OPT_MALLOC_MAX, "25%", 1 << 30, &v), 0);
    cr_assert_eq(v, 1 << 28);
    char *env[] = {"DSP_MALLOC_FROM=libfoo,libbar", NULL};
    dsp_config_load(env, 1 << 30);
    cr_assert_str_eq(dsp_opt_str(DSP_OPT_MALLOC_FROM), "libfoo,libbar");
    cr_assert_eq(dsp_opt(DSP_OPT_MALLOC_MIN), (long long)DSP_SIZE_AUTO);
}

Test(malloc_rules, site_cache_remembers_and_forgets) {
    static struct dsp_sites t;
    cr_assert_eq(dsp_sites_get(&t, 0x401000), -ENOENT);
    dsp_sites_put(&t, 0x401000, 1);
    dsp_sites_put(&t, 0x7f0000001234, 0);
    cr_assert_eq(dsp_sites_get(&t, 0x401000), 1);
    cr_assert_eq(dsp_sites_get(&t, 0x7f0000001234), 0);
    dsp_sites_put(&t, 0x401000, 0);
    cr_assert_eq(dsp_sites_get(&t, 0x401000), 1, "the first answer stays");
    dsp_sites_clear(&t);
    cr_assert_eq(dsp_sites_get(&t, 0x401000), -ENOENT);
}

Test(malloc_rules, site_cache_full_window_is_not_cached) {
    static struct dsp_sites t;
    /* Far more sites than slots: every put either lands or is dropped, and a
     * site that is found has the answer it was put with. */
    for (uintptr_t a = 1; a < 3 * DSP_SITES; a++) dsp_sites_put(&t, a * 16, (int)(a & 1));
    int found = 0;
    for (uintptr_t a = 1; a < 3 * DSP_SITES; a++) {
        int v = dsp_sites_get(&t, a * 16);
        if (v < 0) continue;
        cr_assert_eq(v, (int)(a & 1));
        found++;
    }
    cr_assert_gt(found, DSP_SITES / 2);
    cr_assert_leq(found, DSP_SITES);
}

static struct dsp_sites shared_sites;

static void *sites_worker(void *arg) {
    uintptr_t seed = (uintptr_t)arg;
    for (int round = 0; round < 20000; round++) {
        uintptr_t a = ((seed * 7919 + (uintptr_t)round * 104729) % 5000 + 1) * 64;
        int want = (int)((a >> 6) & 1);
        int v = dsp_sites_get(&shared_sites, a);
        if (v >= 0 && v != want) return (void *)1;
        if (v < 0) dsp_sites_put(&shared_sites, a, want);
        if (round % 5000 == 4999 && seed == 0) dsp_sites_clear(&shared_sites);
    }
    return NULL;
}

Test(malloc_rules, site_cache_is_consistent_under_threads) {
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, sites_worker, (void *)i);
    for (int i = 0; i < 4; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        cr_assert_null(bad, "a site read back with another answer");
    }
}
