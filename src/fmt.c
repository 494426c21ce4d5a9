#include "fmt.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

struct out {
    char *buf;
    size_t cap;
    size_t len;
};

static void put(struct out *o, char c) {
    if (o->len + 1 < o->cap) o->buf[o->len] = c;
    o->len++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width, int left, char pad) {
    int fill = width > (int)n ? width - (int)n : 0;
    if (!left)
        while (fill-- > 0) put(o, pad);
    for (size_t i = 0; i < n; i++) put(o, s[i]);
    if (left)
        while (fill-- > 0) put(o, ' ');
}

static size_t utoa(char *tmp, unsigned long long v, unsigned base) {
    size_t n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    for (size_t i = 0; i < n / 2; i++) {
        char c = tmp[i];
        tmp[i] = tmp[n - 1 - i];
        tmp[n - 1 - i] = c;
    }
    return n;
}

/* A %s argument in a log line: a value the user or the program chose (a
 * path, a variable's value). Control characters are escaped (\n, \t, \xNN),
 * so that a value cannot forge a line, and a long value keeps its head and
 * tail around "...", so that the reason after it is never cut (issue 14). */
#define LOG_ARG_HEAD 200
#define LOG_ARG_TAIL 56
static void put_escaped(struct out *o, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (n > LOG_ARG_HEAD + LOG_ARG_TAIL + 3 && i == LOG_ARG_HEAD) {
            put(o, '.'), put(o, '.'), put(o, '.');
            i = n - LOG_ARG_TAIL;
        }
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != 0x7f) {
            put(o, (char)c);
        } else if (c == '\n' || c == '\t' || c == '\r') {
            put(o, '\\'), put(o, c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
        } else {
            static const char hex[] = "0123456789abcdef";
            put(o, '\\'), put(o, 'x'), put(o, hex[c >> 4]), put(o, hex[c & 15]);
        }
    }
}

static int vfmt(char *buf, size_t cap, const char *fmt, va_list ap, int log) {
    struct out o = {buf, cap, 0};
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            put(&o, *p);
            continue;
        }
        p++;
        int left = 0, width = 0;
        char pad = ' ';
        if (*p == '-') left = 1, p++;
        if (*p == '0') pad = '0', p++;
        while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
        int lng = 0;
        while (*p == 'l') lng++, p++;
        if (*p == 'z') lng = 2, p++;
        char tmp[24];
        size_t n;
        switch (*p) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s) s = "(null)";
            if (log)
                put_escaped(&o, s);
            else
                put_padded(&o, s, strlen(s), width, left, ' ');
            break;
        }
        case 'c':
            tmp[0] = (char)va_arg(ap, int);
            put_padded(&o, tmp, 1, width, left, ' ');
            break;
        case 'd':
        case 'i': {
            long long v = lng >= 2 ? va_arg(ap, long long)
                          : lng    ? va_arg(ap, long)
                                   : va_arg(ap, int);
            unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            n = utoa(tmp, m, 10);
            if (v < 0 && pad == '0' && !left) { /* the sign goes before the zeros: -0042 */
                put(&o, '-');
                if (width > 0) width--;
            } else if (v < 0) {
                memmove(tmp + 1, tmp, n++);
                tmp[0] = '-';
            }
            put_padded(&o, tmp, n, width, left, pad);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = lng >= 2 ? va_arg(ap, unsigned long long)
                                   : lng    ? va_arg(ap, unsigned long)
                                            : va_arg(ap, unsigned);
            n = utoa(tmp, v, *p == 'x' ? 16 : 10);
            put_padded(&o, tmp, n, width, left, pad);
            break;
        }
        case 'p': {
            tmp[0] = '0', tmp[1] = 'x';
            n = 2 + utoa(tmp + 2, (uintptr_t)va_arg(ap, void *), 16);
            put_padded(&o, tmp, n, width, left, ' ');
            break;
        }
        case '%':
            put(&o, '%');
            break;
        case '\0':
            p--;
            break;
        default:
            put(&o, '%'), put(&o, *p);
            break;
        }
    }
    if (cap) o.buf[o.len < cap ? o.len : cap - 1] = '\0';
    return (int)o.len;
}

int dsp_vfmt(char *buf, size_t cap, const char *fmt, va_list ap) {
    return vfmt(buf, cap, fmt, ap, 0);
}

int dsp_vfmt_log(char *buf, size_t cap, const char *fmt, va_list ap) {
    return vfmt(buf, cap, fmt, ap, 1);
}

int dsp_fmt(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = dsp_vfmt(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

const char *dsp_fmt_bytes(char *buf, size_t cap, unsigned long long bytes) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned u = 0;
    while (u < 6 && bytes >= (1ull << (10 * (u + 1)))) u++;
    if (u == 0) {
        dsp_fmt(buf, cap, "%llu B", bytes);
        return buf;
    }
    /* Tenths, rounded to nearest: 20.4 GiB, not 20.3. */
    unsigned __int128 div = (unsigned __int128)1 << (10 * u);
    unsigned long long tenths =
        (unsigned long long)(((unsigned __int128)bytes * 10 + div / 2) / div);
    if (tenths >= 10240 && u < 6) { /* 1 MiB less a byte is 1 MiB, not "1024 KiB" */
        u++;
        tenths = 10;
    }
    if (tenths % 10 == 0)
        dsp_fmt(buf, cap, "%llu %s", tenths / 10, unit[u]);
    else
        dsp_fmt(buf, cap, "%llu.%llu %s", tenths / 10, tenths % 10, unit[u]);
    return buf;
}

void dsp_write_all(int fd, const char *buf, size_t len) {
    int saved = errno;
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        buf += n;
        len -= (size_t)n;
    }
    errno = saved;
}
