/* The signals that have a handler (neither SIG_DFL nor SIG_IGN), as the
 * kernel lists them in the SigCgt line of /proc/PID/status: bit n-1 for
 * signal n (io/guard.c asks only those their disposition, issue 29's
 * review). Read as a stream: the lines before it have no bound (Groups
 * lists every supplementary group, thousands under some directory
 * services), so a fixed buffer could end before it. No allocation, no lock. */
#ifndef DSP_SIGCGT_H
#define DSP_SIGCGT_H

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

/* SigCgt of the status file open on fd, read from its current offset: 1
 * with *caught set, 0 where the file has no such line of 16 hex digits. */
static inline int dsp_sigcgt_read(int fd, uint64_t *caught) {
    static const char key[] = "\nSigCgt:";
    char buf[1024];  /* one read: the line is within the first KiB unless Groups is long */
    size_t k = 1;    /* of key matched: the file starts a line */
    int digits = -1; /* -1 while looking for key */
    uint64_t v = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        for (ssize_t i = 0; i < n; i++) {
            char c = buf[i];
            if (digits < 0) {
                k = c == key[k] ? k + 1 : c == '\n' ? 1 : 0;
                if (k == sizeof key - 1) digits = 0;
                continue;
            }
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d >= 0 && digits < 16) {
                v = v << 4 | (uint64_t)d;
                digits++;
            } else if (digits == 0 && (c == ' ' || c == '\t')) {
                continue;
            } else {
                if (c != '\n' || digits != 16) return 0;
                *caught = v;
                return 1;
            }
        }
    }
    return 0;
}

#endif
