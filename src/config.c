#include "config.h"

#include "fmt.h"
#include "internal.h"
#include "log.h"
#include "str.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

/* A choice's forms are its words joined by | ([1]: past the first |). */
#define CHOICE_FORM(id, value, word) "|" #word
#define CHOICE_WORD(id, value, word) #word,
#define CHOICE_FORMS(id)             (&(DSP_CHOICES_##id(CHOICE_FORM))[1])
#define CHOICE_WORDS(id)             ((const char *const[]){DSP_CHOICES_##id(CHOICE_WORD) NULL})
#define STR_OFF_VAL(id)              0
#define STR_OFF_STR(id)              offsetof(struct dsp_config_str, id)
#define OPTION_DESC(id, type, storage, bytes, secure, def, forms, help)                            \
    {"DSP_" #id, DSP_T_##type, DSP_##secure, def, forms, help, NULL, STR_OFF_##storage(id), bytes},
const struct dsp_opt_desc dsp_opt_desc[DSP_OPT_COUNT] = {
#define DSP_OPTION(id, type, secure, def, forms, help)                                             \
    DSP_ROW_(OPTION_DESC, id, DSP_TYPE_##type, secure, def, forms, help)
#define DSP_CHOICE(id, secure, def, help)                                                          \
    {"DSP_" #id, DSP_T_ENUM, DSP_##secure, def, CHOICE_FORMS(id), help, CHOICE_WORDS(id), 0, 0},
#include "options.h"
#undef DSP_OPTION
#undef DSP_CHOICE
};

struct dsp_config dsp_cfg;

static int lower(int c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

DSP_STARTUP_TEXT static int word_eq(const char *a, const char *b) {
    while (*a && *b && lower(*a) == lower(*b)) a++, b++;
    return *a == 0 && *b == 0;
}

/* The constructor's parse tests strings by hand (str.h): each libc function
 * the library calls first costs a lazy binding, a symbol lookup through
 * every loaded object (issue 29). */
DSP_STARTUP_TEXT const char *dsp_config_env(char *const *env, const char *name) {
    for (; env && *env; env++) {
        const char *v = dsp_str_after(*env, name);
        if (v && *v == '=') return v + 1;
    }
    return NULL;
}

/* The parsers: 0 with *out set, or -EINVAL (out untouched). */
static int parse_enum(const char *const *words, const char *text, long long *out) {
    for (int i = 0; words[i]; i++)
        if (word_eq(words[i], text)) return *out = i, 0;
    return -EINVAL;
}

DSP_STARTUP_TEXT static int parse_bool(const char *t, long long *out) {
    static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false",
                                                                                "off"};
    for (int i = 0; i < 4; i++) {
        if (word_eq(t, yes[i])) return *out = 1, 0;
        if (word_eq(t, no[i])) return *out = 0, 0;
    }
    return -EINVAL;
}

static int parse_int(const char *t, long long lo, long long hi, long long *out) {
    long long v = 0;
    if (!*t) return -EINVAL;
    for (; *t; t++) {
        if (*t < '0' || *t > '9') return -EINVAL;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *t - '0', &v))
            return -EINVAL;
    }
    if (v < lo || v > hi) return -EINVAL;
    *out = v;
    return 0;
}

/* An octal file mode: 600, 0640; permission bits only (no setuid, setgid or
 * sticky bit). */
static int parse_mode(const char *t, long long *out) {
    long long v = 0;
    if (!*t || dsp_str_chr(t, 0) - t > 4) return -EINVAL;
    for (; *t; t++) {
        if (*t < '0' || *t > '7') return -EINVAL;
        v = v * 8 + (*t - '0');
    }
    if (v > 0777) return -EINVAL;
    *out = v;
    return 0;
}

/* A share of n bytes: share is in billionths of a percent. Of nothing (the
 * constructor's defaults, no memory read yet) without the division, as
 * parse_size below (issue 29). */
static size_t share_of(size_t n, uint64_t share) {
    if (!n) return 0;
    return (size_t)((unsigned __int128)n * share / 100000000000ull);
}

/* "64G", "1.5T", "512m", "4096", "64GiB", "50%" (share of ram when allowed;
 * *share, when not NULL, gets it in billionths of a percent, else
 * DSP_NO_SHARE). */
static int parse_size(const char *t, int allow_pct, size_t ram, long long *out, uint64_t *share) {
    unsigned long long whole = 0, frac = 0, frac_div = 1;
    const char *p = t;
    if (*p < '0' || *p > '9') return -EINVAL;
    for (; *p >= '0' && *p <= '9'; p++)
        if (__builtin_mul_overflow(whole, 10, &whole) ||
            __builtin_add_overflow(whole, (unsigned)(*p - '0'), &whole))
            return -EINVAL;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++)
            if (frac_div < 1000000000ull) frac = frac * 10 + (unsigned)(*p - '0'), frac_div *= 10;
    }
    unsigned __int128 v;
    uint64_t pct = DSP_NO_SHARE;
    if (*p == '%') {
        if (!allow_pct || p[1] || whole > 100 || (whole == 100 && frac)) return -EINVAL;
        /* frac_div divides 10^9: exact, and the same floor as ram * whole.frac / 100 */
        pct = whole * 1000000000ull + frac * (1000000000ull / frac_div);
        v = share_of(ram, pct);
    } else {
        unsigned shift = 0;
        switch (lower(*p)) {
        case 0:
            break;
        case 'k':
            shift = 10;
            break;
        case 'm':
            shift = 20;
            break;
        case 'g':
            shift = 30;
            break;
        case 't':
            shift = 40;
            break;
        case 'b':
            break; /* "4096B" */
        default:
            return -EINVAL;
        }
        if (*p && shift) {
            p++;
            if (lower(*p) == 'i') p++;
            if (lower(*p) == 'b') p++;
            if (*p) return -EINVAL;
        } else if (*p) {
            if (p[1] || frac) return -EINVAL; /* a bare B, whole bytes only */
        } else if (frac) {
            return -EINVAL; /* fractional bytes */
        }
        /* The 128-bit division only for a fraction: libgcc's __udivti3 lies
         * on a page the constructor's defaults ("64M") would fault in for
         * nothing (issue 29). */
        v = ((unsigned __int128)whole << shift) +
            (frac ? ((unsigned __int128)frac << shift) / frac_div : 0);
    }
    if (v >= (unsigned __int128)DSP_SIZE_OFF || v > (unsigned __int128)INT64_MAX) return -EINVAL;
    *out = (long long)v;
    if (share) *share = pct;
    return 0;
}

DSP_STARTUP_TEXT static int parse(enum dsp_opt_id id, const char *text, size_t ram, long long *out,
                                  uint64_t *share) {
    const struct dsp_opt_desc *d = &dsp_opt_desc[id];
    switch (d->type) {
    case DSP_T_BOOL:
        return parse_bool(text, out);
    case DSP_T_INT:
        return parse_int(text, 0, 64, out);
    case DSP_T_ENUM:
        return parse_enum(d->choices, text, out);
    case DSP_T_STRING:
        *out = 0;
        return 0;
    case DSP_T_MODE:
        return parse_mode(text, out);
    case DSP_T_MSEC:
        return parse_int(text, 0, 60000, out);
    case DSP_T_SIZE:
        /* "auto" (or "off") where it is the default: DSP_SIZE_AUTO. */
        if ((dsp_str_eq(d->def, "auto") || dsp_str_eq(d->def, "off")) && word_eq(text, d->def)) {
            *out = (long long)DSP_SIZE_AUTO;
            return 0;
        }
        if (dsp_str_eq(d->def, "auto") && dsp_str_after(d->forms, "auto, off") &&
            word_eq(text, "off")) {
            *out = (long long)DSP_SIZE_OFF;
            return 0;
        }
        return parse_size(text, dsp_str_chr(d->forms, '%') != NULL, ram, out, share);
    }
    return -EINVAL;
}

int dsp_config_parse(enum dsp_opt_id id, const char *text, size_t ram, long long *out) {
    return parse(id, text, ram, out, NULL);
}

/* A value parsed, recorded with its share (50%) if it is one. */
static int load_value(enum dsp_opt_id id, const char *text, size_t ram) {
    long long v;
    uint64_t share = DSP_NO_SHARE;
    int rc = parse(id, text, ram, &v, &share);
    if (rc == 0) dsp_cfg.val[id] = v, dsp_cfg.share[id] = share;
    return rc;
}

void dsp_config_set_memory(size_t mem) {
    for (int i = 0; i < DSP_OPT_COUNT; i++)
        if (dsp_cfg.share[i] != DSP_NO_SHARE)
            dsp_cfg.val[i] = (long long)share_of(mem, dsp_cfg.share[i]);
}

/* Levenshtein distance of two short names, capped at 31 characters. */
static int distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 31) la = 31;
    if (lb > 31) lb = 31;
    int row[32];
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            int best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *dsp_config_closest(const char *name) {
    /* Only near misses: at most 3 edits, and fewer than half the characters
     * after DSP_ (DSP_FOO is no typo of DSP_LOG). */
    const char *best = NULL;
    int best_d = 4, own = (int)strlen(name) - 4;
    for (int i = 0; i < DSP_OPT_COUNT; i++) {
        int d = distance(name, dsp_opt_desc[i].name);
        if (d < best_d && 2 * d < own) best_d = d, best = dsp_opt_desc[i].name;
    }
    return best;
}

DSP_STARTUP_TEXT static void set_default(enum dsp_opt_id id, size_t ram) {
    dsp_cfg.val[id] = 0;
    dsp_cfg.share[id] = DSP_NO_SHARE;
    int rc = load_value(id, dsp_opt_desc[id].def, ram);
    (void)rc; /* defaults are checked by the unit tests */
}

/* A value that only turns something off, of an option that secure execution
 * honours so (options.h): 0 for a switch, the word off or never for a choice
 * or a size. */
static int is_off_switch(const struct dsp_opt_desc *d, const char *value) {
    long long v;
    if (d->secure != DSP_SECURE_OFF) return 0;
    if (d->type == DSP_T_BOOL) return parse_bool(value, &v) == 0 && v == 0;
    return word_eq(value, "off") || word_eq(value, "never");
}

const char *dsp_config_off_word(enum dsp_opt_id id) {
    const struct dsp_opt_desc *d = &dsp_opt_desc[id];
    long long v;
    if (d->secure != DSP_SECURE_OFF) return NULL;
    if (d->type == DSP_T_BOOL) return "0";
    if (dsp_config_parse(id, "off", 0, &v) == 0) return "off";
    if (dsp_config_parse(id, "never", 0, &v) == 0) return "never";
    return NULL;
}

/* "DSP_STATS=0, DSP_NODE=off, ...": the off switches secure execution
 * honours, from the table, as docs/configuration.md lists them. */
static void off_switches(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < DSP_OPT_COUNT && n < cap; i++) {
        const char *word = dsp_config_off_word((enum dsp_opt_id)i);
        if (word)
            n += (size_t)dsp_fmt(buf + n, cap - n, "%s%s=%s", n ? ", " : "", dsp_opt_desc[i].name,
                                 word);
    }
}

/* A STRING option's buffer. */
static char *str_of(const struct dsp_opt_desc *d) {
    return (char *)&dsp_cfg.str + d->str_off;
}

DSP_STARTUP_TEXT void dsp_config_load(char *const *env, size_t ram) {
    dsp_config_load_as(env, ram, getauxval(AT_SECURE) != 0);
}

DSP_STARTUP_TEXT void dsp_config_load_as(char *const *env, size_t ram, int secure) {
    for (int i = 0; i < DSP_OPT_COUNT; i++) set_default((enum dsp_opt_id)i, ram);
    memset(dsp_cfg.str_given, 0, sizeof dsp_cfg.str_given); /* every STRING option "" */
    if (!env) return;
    char ignored[256];
    size_t n_ignored = 0;
    ignored[0] = 0;
    for (char *const *e = env; *e; e++) {
        const char *kv = *e;
        if (!dsp_str_after(kv, "DSP_")) continue;
        const char *eq = dsp_str_chr(kv, '=');
        if (!eq) continue;
        char name[64];
        size_t n = (size_t)(eq - kv);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, kv, n);
        name[n] = 0;
        const char *value = eq + 1;
        int id = -1;
        for (int i = 0; i < DSP_OPT_COUNT; i++)
            if (!strcmp(name, dsp_opt_desc[i].name)) id = i;
        if (id < 0) {
            const char *near = dsp_config_closest(name);
            if (near)
                dsp_warn("unknown variable %s ignored; did you mean %s?", name, near);
            else
                dsp_warn("unknown variable %s ignored; `dspreload env` lists the known ones", name);
            continue;
        }
        const struct dsp_opt_desc *d = &dsp_opt_desc[id];
        /* Secure execution (a setuid or file-capability program, or the
         * library in /etc/ld.so.preload): the environment belongs to a less
         * privileged user, who must not choose files, limits or output for
         * the privileged process (issue 14). Only the off switches of
         * SECURE_OFF rows are honoured. */
        if (secure && !is_off_switch(d, value)) {
            size_t len = strlen(d->name);
            if (n_ignored + len + 3 < sizeof ignored)
                n_ignored += (size_t)dsp_fmt(ignored + n_ignored, sizeof ignored - n_ignored,
                                             "%s%s", n_ignored ? ", " : "", d->name);
            continue;
        }
        if (load_value((enum dsp_opt_id)id, value, ram) != 0) {
            dsp_warn("%s=%s is not valid (accepted: %s); using the default %s", d->name, value,
                     d->forms, d->def[0] ? d->def : "(empty)");
            continue;
        }
        if (d->type == DSP_T_STRING) {
            size_t len = strlen(value);
            if (len >= d->str_cap) {
                dsp_warn("%s is longer than %u bytes; ignored", d->name, (unsigned)d->str_cap - 1);
                continue;
            }
            memcpy(str_of(d), value, len + 1);
            dsp_cfg.str_given[id / 64] |= (uint64_t)1 << (id % 64);
        }
    }
    if (n_ignored) {
        char offs[512];
        off_switches(offs, sizeof offs);
        dsp_warn("secure execution (setuid, setgid or file capabilities): %s ignored; only off "
                 "switches (%s) are honoured",
                 ignored, offs);
    }
}
