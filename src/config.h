/* Environment configuration, parsed once at init from the table in options.h. */
#ifndef DSP_CONFIG_H
#define DSP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum dsp_opt_type {
    DSP_T_BOOL,
    DSP_T_INT,
    DSP_T_SIZE,
    DSP_T_ENUM,
    DSP_T_STRING,
    DSP_T_MODE,
    DSP_T_MSEC
};

/* What secure execution honours of an option (options.h). */
enum dsp_opt_secure { DSP_SECURE_OFF, DSP_SECURE_IGNORED };

/* A row's type, spelt out as (type, storage, bytes): a value in dsp_cfg.val,
 * or for STRING(bytes) a buffer in dsp_cfg.str. DSP_ROW_ applies a macro to
 * a row with its type spelt out. */
#define DSP_TYPE_BOOL        BOOL, VAL, 0
#define DSP_TYPE_INT         INT, VAL, 0
#define DSP_TYPE_SIZE        SIZE, VAL, 0
#define DSP_TYPE_MODE        MODE, VAL, 0
#define DSP_TYPE_MSEC        MSEC, VAL, 0
#define DSP_TYPE_STRING(n)   STRING, STR, n
#define DSP_ROW_(macro, ...) macro(__VA_ARGS__)

enum dsp_opt_id {
#define DSP_OPTION(id, type, secure, def, forms, help) DSP_OPT_##id,
#define DSP_CHOICE(id, secure, def, help)              DSP_OPT_##id,
#include "options.h"
#undef DSP_OPTION
#undef DSP_CHOICE
    DSP_OPT_COUNT
};

/* The values of each choice, as dsp_opt returns them: DSP_LOG_WARN,
 * DSP_HUGEPAGES_NEVER, DSP_AIO_BOUNCE_ALL... */
#define DSP_CHOICE_VALUE_(id, value, word) DSP_##id##_##value,
#define DSP_OPTION(id, type, secure, def, forms, help)
#define DSP_CHOICE(id, secure, def, help) enum { DSP_CHOICES_##id(DSP_CHOICE_VALUE_) };
#include "options.h"
#undef DSP_OPTION
#undef DSP_CHOICE
#undef DSP_CHOICE_VALUE_

/* The buffer of each STRING option, named by its id. */
#define DSP_STR_FIELD_(id, type, storage, bytes) DSP_STR_FIELD_##storage(id, bytes)
#define DSP_STR_FIELD_VAL(id, bytes)
#define DSP_STR_FIELD_STR(id, bytes) char id[bytes];
struct dsp_config_str {
#define DSP_OPTION(id, type, secure, def, forms, help) DSP_ROW_(DSP_STR_FIELD_, id, DSP_TYPE_##type)
#define DSP_CHOICE(id, secure, def, help)
#include "options.h"
#undef DSP_OPTION
#undef DSP_CHOICE
};
/* The bytes of a STRING option's buffer, its NUL included. */
#define DSP_OPT_STR_CAP(id) sizeof(((struct dsp_config_str *)0)->id)

struct dsp_opt_desc {
    const char *name; /* "DSP_LOG" */
    enum dsp_opt_type type;
    enum dsp_opt_secure secure;
    const char *def;
    const char *forms;
    const char *help;
    const char *const *choices; /* ENUM: the word of each value, then NULL */
    size_t str_off, str_cap;    /* STRING: its buffer in dsp_cfg.str */
};

extern const struct dsp_opt_desc dsp_opt_desc[DSP_OPT_COUNT];

/* Parsed values. SIZE options hold bytes, with DSP_SIZE_AUTO for "auto" (or
 * "off", where that is the default);
 * ENUM options the index of the choice; BOOL 0/1. */
#define DSP_SIZE_AUTO ((size_t)-1)
/* "off" for a SIZE option whose default is auto and whose forms name off. */
#define DSP_SIZE_OFF     ((size_t)-2)
#define DSP_NODE_KEY_MAX DSP_OPT_STR_CAP(NODE_KEY)
/* What a size given as a share of memory (50%) holds in dsp_cfg.share when
 * it is not one. */
#define DSP_NO_SHARE UINT64_MAX
struct dsp_config {
    long long val[DSP_OPT_COUNT];
    uint64_t share[DSP_OPT_COUNT]; /* a share's billionths of a percent, or DSP_NO_SHARE */
    uint64_t str_given[(DSP_OPT_COUNT + 63) / 64]; /* bit id: STRING option id was given */
    struct dsp_config_str str;                     /* STRING options, as given */
};
extern struct dsp_config dsp_cfg;

static inline long long dsp_opt(enum dsp_opt_id id) {
    return dsp_cfg.val[id];
}

/* A STRING option's value, "" when it was not given: then its buffer is not
 * read (issue 29: the buffers lie past DSP_STATS_FILE's 4 KiB, and the
 * constructor's read of DSP_NUMA's was a page fault in every process). */
static inline const char *dsp_opt_str(enum dsp_opt_id id) {
    if (!(dsp_cfg.str_given[id / 64] >> (id % 64) & 1)) return "";
    return (const char *)&dsp_cfg.str + dsp_opt_desc[id].str_off;
}

/* The value of the variable name in env (a NULL-terminated list, as
 * environ), or NULL: getenv's answer, without libc (config.c). */
const char *dsp_config_env(char *const *env, const char *name);

/* Parses `environ` (or the given NULL-terminated list) into dsp_cfg: bad values
 * are reported by name with the accepted forms and keep the default; unknown
 * DSP_* names are reported with the closest known one. ram is the memory that
 * shares (50%) are of; the library passes 0 at start-up, where it is not read
 * yet (issue 29: most processes never pin), and sets it at the first pin with
 * dsp_config_set_memory. Under secure execution (AT_SECURE) only the off
 * switches of SECURE_OFF rows are honoured, every other DSP_* variable
 * ignored with one warning. */
void dsp_config_load(char *const *env, size_t ram);
/* The same, secure execution given (tests). */
void dsp_config_load_as(char *const *env, size_t ram, int secure);

/* Every size given as a share (50%, or a default such as DSP_POOL_MAX's 10%)
 * taken again of mem bytes. */
void dsp_config_set_memory(size_t mem);

/* One value, as config_load would parse it: 0 on success, -EINVAL if invalid. */
int dsp_config_parse(enum dsp_opt_id id, const char *text, size_t ram, long long *out);

/* The value that turns option id off as secure execution honours it: "0"
 * for a switch, else "off" or "never", whichever the row accepts; NULL for a
 * row that has none or is not SECURE_OFF (options.h). The warning of
 * dsp_config_load and `dspreload env` list the off switches from it. */
const char *dsp_config_off_word(enum dsp_opt_id id);

/* The closest option name to `name` within a small edit distance, or NULL. */
const char *dsp_config_closest(const char *name);

#endif
