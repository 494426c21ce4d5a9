/* A forked child does not use the parent's cuFile state: its calls go to
 * cuFile unchanged, the descriptors the shim opened are closed in it, and the
 * parent goes on as before. */
#include "cufile_test.h"

#include <sys/wait.h>

int main(void) {
    OPEN_DRIVER();
    int wfd = make_file("/tmp", 2 * MiB, 12);
    int fd = reopen(wfd, O_RDONLY | O_DIRECT);
    CUfileHandle_t fh = handle_of(fd);
    char *h = pinned(2 * MiB), *dev = device(MiB);
    CHECK(cuFileRead(fh, h, MiB, 5, 3) == MiB && same(h + 3, MiB, 5, 12)); /* opens a buffered fd */
    CHECK(cuFileRead(fh, dev, MiB, 0, 0) == MiB && fakecufile_registered(dev) == MiB);
    CHECK(fds_on_file(fd, NULL) == 3);
    CHECK(fakecufile_staged() == 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (fds_on_file(fd, NULL) != 2) _exit(2);
        long long staged = fakecufile_staged();
        if (cuFileRead(fh, h, 4096, 0, 0) != 4096 || !same(h, 4096, 0, 12)) _exit(3);
        if (fakecufile_staged() != staged + 4096) _exit(4); /* cuFile's own path */
        int reg = fakecufile_count("cuFileBufRegister");
        char *d2 = device(MiB);
        if (cuFileRead(fh, d2, 4096, 0, 0) != 4096) _exit(5);
        if (fakecufile_count("cuFileBufRegister") != reg) _exit(6); /* nothing registered */
        _exit(0);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed at step %d", WEXITSTATUS(st));
    long long direct = stat_of("cufile_direct_host");
    CHECK(cuFileRead(fh, h, MiB, 7, 1) == MiB && same(h + 1, MiB, 7, 12));
    CHECK(stat_of("cufile_direct_host") == direct + 1 && fakecufile_staged() == 0);
    PASS();
}
