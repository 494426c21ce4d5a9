/* The SigCgt line of /proc/self/status (io/sigcgt.h), which the first libaio
 * call reads to ask only the handled signals their disposition (io/guard.c).
 * It was read from the file's first 4 KiB: a Groups line long enough (a user
 * in a few hundred groups of a directory service) pushed it past them, and
 * every signal was asked again, 64 rt_sigaction. */
#include "sigcgt.h"

#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A file holding text, at offset 0. */
static int file_of(const char *text) {
    int fd = memfd_create("status", MFD_CLOEXEC);
    cr_assert(fd >= 0);
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static int read_text(const char *text, uint64_t *v) {
    int fd = file_of(text);
    int ok = dsp_sigcgt_read(fd, v);
    close(fd);
    return ok;
}

static void handled(int sig) {
    (void)sig;
}

Test(sigcgt, lists_the_handlers_of_this_process) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handled;
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    signal(SIGUSR2, SIG_IGN);
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0);
    uint64_t v = 0;
    cr_assert_eq(dsp_sigcgt_read(fd, &v), 1);
    close(fd);
    cr_assert(v >> (SIGUSR1 - 1) & 1, "SigCgt %#llx lacks SIGUSR1", (unsigned long long)v);
    cr_assert(!(v >> (SIGUSR2 - 1) & 1), "SigCgt %#llx has SIGUSR2", (unsigned long long)v);
}

Test(sigcgt, found_after_a_groups_line_of_any_length) {
    static char text[40000];
    for (int groups = 0; groups <= 3000; groups += groups < 40 ? 1 : 97) {
        size_t n = (size_t)snprintf(text, sizeof text, "Name:\tx\nGroups:\t");
        for (int g = 0; g < groups; g++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%d ", 1000000000 + g);
        snprintf(text + n, sizeof text - n,
                 "\nSigIgn:\t0000000000001000\nSigCgt:\t0000000180004a02\nCapInh:\t0\n");
        uint64_t v = 0;
        cr_assert_eq(read_text(text, &v), 1, "%d groups (%zu bytes before SigCgt)", groups, n);
        cr_assert_eq(v, 0x0000000180004a02ull, "%d groups", groups);
    }
}

Test(sigcgt, anything_but_one_line_of_16_hex_digits_is_no_answer) {
    uint64_t v = 7;
    cr_assert_eq(read_text("Name:\tx\nSigIgn:\t0\n", &v), 0);
    cr_assert_eq(read_text("SigCgt:\t000000000000000\n", &v), 0);   /* 15 digits */
    cr_assert_eq(read_text("SigCgt:\t00000000000000001\n", &v), 0); /* 17 */
    cr_assert_eq(read_text("SigCgt:\t0000000000000001", &v), 0);    /* cut short */
    cr_assert_eq(read_text("SigCgt:\t00000000 00000001\n", &v), 0);
    cr_assert_eq(read_text("XSigCgt:\t0000000000000001\n", &v), 0);
    cr_assert_eq(v, 7, "a refused answer left *caught alone");
    cr_assert_eq(read_text("SigCgt:\t00000000000000ff\n", &v), 1); /* the file's first line */
    cr_assert_eq(v, 0xff);
    cr_assert_eq(read_text("A:\n\nSigCgt: \t0000000000000100\n", &v), 1);
    cr_assert_eq(v, 0x100);
}
