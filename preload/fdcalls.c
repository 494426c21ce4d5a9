/* The program's calls that can make an fd number name another open file, or
 * change a file's O_DIRECT flag: each calls the real function, then
 * dsp_dio_forget() (io/dio.h), so that the libaio hooks' fd cache never
 * answers for a file the number no longer names (issue 29: the cache spares
 * an fcntl and a statx per io_submit of misaligned I/O). Numbers are freed by
 * close, close_range, closefrom, fclose, dup2 and dup3 (which close their
 * target); they are taken again by every call that creates an fd, of which
 * the common ones are hooked too, so that a number freed where no hook sees
 * it (inside glibc, a raw system call) is still forgotten when open, socket,
 * accept, pipe or dup hands it out again. Flags change with fcntl(F_SETFL),
 * on every fd that shares the open file (dup, fork), hence one generation for
 * all. What no hook sees is listed in docs/io.md. Until the cache keeps its
 * first answer each hook costs one plain load (io/dio.c: no fence). */
/* Both names of each call are defined here: with 64-bit offsets the headers
 * would rename open to open64, and define one symbol twice. */
#undef _FILE_OFFSET_BITS

#include "dio.h"
#include "internal.h"
#include "real.h"
#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef DSP_NO_LIBC_HOOKS
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
typedef int (*fcntl_fn)(int, int, ...);
typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);
/* Every hooked call whose real function is looked up (the *64 names are
 * aliases: below), a few a line. */
#define FD_HOOKS(X)                                                                                \
    X(__typeof__(&close), close)                                                                   \
    X(close_range_fn, close_range)                                                                 \
    X(closefrom_fn, closefrom)                                                                     \
    X(__typeof__(&fclose), fclose) X(__typeof__(&dup), dup) X(__typeof__(&dup2), dup2)             \
        X(__typeof__(&dup3), dup3) X(fcntl_fn, fcntl) X(open_fn, open) X(openat_fn, openat)        \
            X(open2_fn, __open_2) X(openat2_fn, __openat_2) X(__typeof__(&creat), creat)           \
                X(__typeof__(&socket), socket) X(__typeof__(&accept), accept)                      \
                    X(__typeof__(&accept4), accept4) X(__typeof__(&pipe), pipe)                    \
                        X(__typeof__(&pipe2), pipe2)
FD_HOOKS(DSP_REAL_DECL)

/* The real call, then the cache forgets (dsp_dio_forget leaves errno, the
 * real call's, alone). */
#define FORGET_AFTER(type, call)                                                                   \
    ({                                                                                             \
        type r_ = (call);                                                                          \
        dsp_dio_forget();                                                                          \
        r_;                                                                                        \
    })

DSP_API int close(int fd) {
    return FORGET_AFTER(int, real_close()(fd));
}

DSP_API int close_range(unsigned first, unsigned last, int flags) {
    return FORGET_AFTER(int, real_close_range()(first, last, flags));
}

DSP_API void closefrom(int low) {
    real_closefrom()(low);
    dsp_dio_forget();
}

DSP_API int fclose(FILE *f) {
    return FORGET_AFTER(int, real_fclose()(f));
}

DSP_API int dup(int fd) {
    return FORGET_AFTER(int, real_dup()(fd));
}

DSP_API int dup2(int fd, int to) {
    return FORGET_AFTER(int, real_dup2()(fd, to));
}

DSP_API int dup3(int fd, int to, int flags) {
    return FORGET_AFTER(int, real_dup3()(fd, to, flags));
}

/* F_SETFL changes the flags of the open file, seen through every fd that
 * shares it; F_DUPFD hands out a number. Other commands pass untouched. glibc
 * reads the third argument as a pointer, whatever its type: so does this. */
static inline int changes_fd(int cmd) {
    return cmd == F_SETFL || cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
}

DSP_API int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!changes_fd(cmd)) return real_fcntl()(fd, cmd, arg);
    return FORGET_AFTER(int, real_fcntl()(fd, cmd, arg));
}

/* On LP64 glibc the 64-bit names are the same functions (no off_t to widen):
 * so are ours. */
_Static_assert(sizeof(long) == 8, "the *64 hooks are aliases: LP64 only");
DSP_API int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* The mode is read only where the call has one, as glibc does. */
static inline mode_t mode_of(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

DSP_API int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return FORGET_AFTER(int, real_open()(path, flags, mode));
}

DSP_API int open64(const char *path, int flags, ...) __attribute__((alias("open")));

DSP_API int openat(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return FORGET_AFTER(int, real_openat()(dir, path, flags, mode));
}

DSP_API int openat64(int dir, const char *path, int flags, ...) __attribute__((alias("openat")));

/* open and openat under _FORTIFY_SOURCE. */
DSP_API int __open_2(const char *path, int flags);
DSP_API int __open_2(const char *path, int flags) {
    return FORGET_AFTER(int, real___open_2()(path, flags));
}
DSP_API int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));
DSP_API int __openat_2(int dir, const char *path, int flags);
DSP_API int __openat_2(int dir, const char *path, int flags) {
    return FORGET_AFTER(int, real___openat_2()(dir, path, flags));
}
DSP_API int __openat64_2(int dir, const char *path, int flags) __attribute__((alias("__openat_2")));

DSP_API int creat(const char *path, mode_t mode) {
    return FORGET_AFTER(int, real_creat()(path, mode));
}

DSP_API int socket(int domain, int type, int protocol) {
    return FORGET_AFTER(int, real_socket()(domain, type, protocol));
}

DSP_API int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    return FORGET_AFTER(int, real_accept()(fd, addr, len));
}

DSP_API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return FORGET_AFTER(int, real_accept4()(fd, addr, len, flags));
}

DSP_API int pipe(int fds[2]) {
    return FORGET_AFTER(int, real_pipe()(fds));
}

DSP_API int pipe2(int fds[2], int flags) {
    return FORGET_AFTER(int, real_pipe2()(fds, flags));
}

/* Every real function found now (from the constructor), and whether these
 * hooks are the definitions the program reaches: 1, or 0 when another comes
 * first, and the fd cache must stay off. */
int dsp_fdcalls_bound(void) {
    static const char *const names[] = {FD_HOOKS(DSP_REAL_NAME) "fcntl64", "open64", "openat64",
                                        "__open64_2", "__openat64_2"};
    return dsp_real_all_ours(names, sizeof names / sizeof *names);
}

DSP_STARTUP_TEXT void dsp_fdcalls_init(void) {
    DSP_REAL_FIND_ALL(FD_HOOKS);
}

#else
int dsp_fdcalls_bound(void) {
    return 0;
}
void dsp_fdcalls_init(void) {}
#endif
