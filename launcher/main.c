/* dspreload: runs a command with libdspreload.so preloaded, in the spirit of
 * hugectl and numactl; plus doctor, env, stats and demo (dspreload --help). */
#include "cgroup.h"
#include "config.h"
#include "internal.h"
#include "sys.h"
#include "launcher.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const help_text =
    USAGE "\n"
          "Runs COMMAND with libdspreload.so preloaded: pinned host memory for CUDA\n"
          "(cudaHostAlloc, tensor.pin_memory()) served by one pooled, exact-size manager,\n"
          "and with --malloc-min, large allocations born pinned (malloc hints).\n"
          "Children inherit it, so it works under torchrun, deepspeed, mpirun and srun.\n"
          "\n"
          "options (each sets the DSP_* variable named; VAR=value sets any variable):\n"
          "  --stats              DSP_STATS=1: a summary on stderr at exit\n"
          "  --stats-file PATH    DSP_STATS_FILE: JSON at exit, %p becomes the pid\n"
          "  --log LEVEL          DSP_LOG: error, warn, info or debug\n"
          "  --max-pinned SIZE    DSP_MAX_PINNED: 64G, 50%, auto\n"
          "  --pool-max SIZE      DSP_POOL_MAX: 4G, 10%\n"
          "  --hugepages MODE     DSP_HUGEPAGES: auto, always or never\n"
          "  --cuda MODE          DSP_CUDA: auto or off\n"
          "  --malloc-min SIZE    DSP_MALLOC_MIN: pin allocations of SIZE and more (1M)\n"
          "  --lib PATH           preload this library instead of the one found beside dspreload\n"
          "  -h, --help           this text;  --version  the version\n"
          "\n"
          "commands:\n"
          "  doctor [PATH ...]    check this machine (and each PATH for O_DIRECT I/O)\n"
          "  env [--markdown]     every DSP_* variable, its default and accepted values\n"
          "  env --stats-markdown every statistic, as docs/statistics.md\n"
          "  stats FILE ...       per-process table and totals of DSP_STATS_FILE output\n"
          "  stats --node [--key KEY]  the node ledgers of this user, live: one row a process\n"
          "  demo                 a short workload that shows what the shim does\n"
          "Options before doctor and demo apply to them (doctor checks the --lib library\n"
          "and the budget the settings give); after --, a program of that name runs.\n"
          "\n"
          "Exit status: COMMAND's own; 2 for a usage error; 126/127 when COMMAND cannot run.\n";

/* Options that set a variable: --name VALUE or --name=VALUE. */
static const struct {
    const char *opt;
    enum dsp_opt_id id;
} value_opts[] = {
    {"--stats-file", DSP_OPT_STATS_FILE}, {"--log", DSP_OPT_LOG},
    {"--max-pinned", DSP_OPT_MAX_PINNED}, {"--pool-max", DSP_OPT_POOL_MAX},
    {"--hugepages", DSP_OPT_HUGEPAGES},   {"--cuda", DSP_OPT_CUDA},
    {"--malloc-min", DSP_OPT_MALLOC_MIN},
};

/* Checks a DSP_* setting as the library will parse it: 0, or a usage error. */
static int check_setting(const char *name, const char *value, const char *as_given) {
    for (int i = 0; i < DSP_OPT_COUNT; i++) {
        if (strcmp(name, dsp_opt_desc[i].name)) continue;
        long long v;
        if (dsp_config_parse((enum dsp_opt_id)i, value, dsp_cgroup_ram(), &v) != 0)
            return usage_error("%s: '%s' is not valid for %s (accepted: %s)", as_given, value, name,
                               dsp_opt_desc[i].forms);
        return 0;
    }
    const char *near = dsp_config_closest(name);
    if (near) return usage_error("%s: unknown variable %s; did you mean %s?", as_given, name, near);
    return usage_error("%s: unknown variable %s (dspreload env lists them)", as_given, name);
}

static int set(const char *name, const char *value, const char *as_given) {
    if (!strncmp(name, "DSP_", 4)) {
        int rc = check_setting(name, value, as_given);
        if (rc) return rc;
    }
    if (setenv(name, value, 1) != 0) return usage_error("%s: cannot set %s", as_given, name);
    return 0;
}

/* The library named by --lib, as an absolute path: its real path, or where
 * that has a space or colon (which LD_PRELOAD cannot carry), the absolute form
 * of the path as given when that has neither and names the same file (a
 * symlink made elsewhere to an install under such a path). NULL if missing. */
static const char *lib_path(const char *given) {
    static char real[PATH_MAX], abs[PATH_MAX * 2];
    if (!realpath(given, real)) return NULL;
    if (!preload_unsafe(real)) return real;
    char cwd[PATH_MAX];
    if (given[0] == '/')
        snprintf(abs, sizeof abs, "%s", given);
    else if (getcwd(cwd, sizeof cwd))
        snprintf(abs, sizeof abs, "%s/%s", cwd, given);
    else
        return real;
    struct stat a, b;
    if (!preload_unsafe(abs) && strlen(abs) < PATH_MAX && stat(abs, &a) == 0 &&
        stat(real, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return abs;
    return real;
}

/* Whether the list (entries split at spaces and colons, as ld.so splits it)
 * has lib as a whole entry. */
static int has_entry(const char *list, const char *lib) {
    size_t n = strlen(lib);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, LD_PRELOAD_SEPARATORS);
        if (len == n && !strncmp(p, lib, n)) return 1;
        p += len;
        if (*p) p++;
    }
    return 0;
}

/* LD_PRELOAD gets the library first, the caller's own entries kept after it. */
static int add_preload(const char *lib) {
    const char *old = getenv("LD_PRELOAD");
    if (old && has_entry(old, lib)) return 0;
    size_t n = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(n);
    if (!v) return -1;
    snprintf(v, n, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
    int rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

static int cmd_env(int argc, char **argv, const char *lib) {
    (void)lib;
    int md = argc > 0 && !strcmp(argv[0], "--markdown");
    int stats_md = argc > 0 && !strcmp(argv[0], "--stats-markdown");
    if (argc > 1 || (argc == 1 && !md && !stats_md))
        return usage_error("env: unexpected argument '%s'", argv[argc - 1]);
    fflush(stdout);
    if (stats_md)
        print_stats_reference(1);
    else
        print_reference(1, md);
    return 0;
}

/* Options before a subcommand: doctor and demo take them all (doctor checks the
 * library --lib names and reads the DSP_* settings as the library would; demo
 * runs under them); env and stats read nothing they set. */
static const struct subcommand {
    const char *name;
    int takes_options;
    int (*run)(int argc, char **argv, const char *lib);
} subcommands[] = {
    {"doctor", 1, cmd_doctor},
    {"env", 0, cmd_env},
    {"stats", 0, cmd_stats},
    {"demo", 1, cmd_demo},
};

static const struct subcommand *find_subcommand(const char *a) {
    for (size_t k = 0; k < sizeof subcommands / sizeof *subcommands; k++)
        if (!strcmp(a, subcommands[k].name)) return &subcommands[k];
    return NULL;
}

/* One --option of those before the command (argv[*i], a): applied, or for
 * --lib, *lib set. Its value is after '=' or the next argument (*i moved on to
 * it). 0, or the exit status of a usage error. */
static int long_option(const char *a, char **argv, int *i, const char **lib) {
    const char *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    const char *value = eq ? eq + 1 : NULL;
    int known = 0;
    for (size_t k = 0; k < sizeof value_opts / sizeof *value_opts; k++) {
        if (strlen(value_opts[k].opt) != n || strncmp(a, value_opts[k].opt, n)) continue;
        known = 1;
        if (!value && (value = argv[++*i]) == NULL) return usage_error("%s needs a value", a);
        int rc = set(dsp_opt_desc[value_opts[k].id].name, value, value_opts[k].opt);
        if (rc) return rc;
    }
    if (!known && n == 5 && !strncmp(a, "--lib", 5)) {
        known = 1;
        if (!value && (value = argv[++*i]) == NULL) return usage_error("--lib needs a value");
        if (!(*lib = lib_path(value))) return usage_error("--lib: cannot find '%s'", value);
    }
    if (!known) return usage_error("unknown option '%s'", a);
    return 0;
}

/* The options and VAR=value settings before the command, applied: 0 with *at
 * the index of the command (argc when none) and *dashdash whether -- came
 * before it; or the exit status of a usage error. */
static int parse_options(int argc, char **argv, int *at, int *dashdash, const char **lib) {
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            *dashdash = 1;
            break;
        }
        if (!strcmp(a, "--stats")) {
            setenv("DSP_STATS", "1", 1);
            continue;
        }
        if (!strncmp(a, "--", 2)) {
            int rc = long_option(a, argv, &i, lib);
            if (rc) return rc;
            continue;
        }
        if (a[0] == '-') return usage_error("unknown option '%s'", a);
        const char *eq = strchr(a, '=');
        if (eq && eq > a &&
            strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                (size_t)(eq - a)) {
            /* The whole name, however long: setenv copies it. */
            char *name = strndup(a, (size_t)(eq - a));
            if (!name) return usage_error("%s: cannot set it (out of memory)", a);
            int rc = set(name, eq + 1, a);
            free(name);
            if (rc) return rc;
            continue;
        }
        break; /* the command, or a subcommand */
    }
    *at = i;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage_error("no command given");
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(help_text, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("dspreload %s\n", DSP_VERSION_STRING);
        return 0;
    }

    const char *lib = NULL;
    int i = 1, dashdash = 0;
    int rc = parse_options(argc, argv, &i, &dashdash, &lib);
    if (rc) return rc;
    /* A subcommand's name before any --; after --, a program of that name. */
    const struct subcommand *sub = !dashdash && i < argc ? find_subcommand(argv[i]) : NULL;
    if (sub) {
        if (i > 1 && !sub->takes_options)
            return usage_error("%s takes no options before it (got '%s')", sub->name, argv[1]);
        return sub->run(argc - i - 1, argv + i + 1, lib);
    }
    if (i >= argc) return usage_error("no command given");
    if (!lib && !(lib = find_library()))
        return usage_error("libdspreload.so not found beside %s (give it with --lib PATH)",
                           self_dir());
    if (preload_unsafe(lib)) return usage_error("%s", preload_unsafe_why(lib));
    if (add_preload(lib) != 0) return usage_error("cannot set LD_PRELOAD");
    execvp(argv[i], argv + i);
    int err = errno;
    fprintf(stderr, "dspreload: cannot run '%s': %s\n", argv[i], strerror(err));
    return err == ENOENT ? 127 : 126;
}
