#include "errname.h"

#include <errno.h>

#define E(name)                                                                                    \
    case name:                                                                                     \
        return #name;

const char *dsp_errname(int err) {
    switch (err) {
        E(EPERM)
        E(ENOMEM)
        E(EAGAIN)
        E(EINVAL)
        E(EFAULT)
        E(ENOENT)
        E(EEXIST)
        E(EACCES)
        E(EINTR)
        E(EHWPOISON)
        /* files (DSP_STATS_FILE) */
        E(ENAMETOOLONG)
        E(ENOTDIR)
        E(EISDIR)
        E(ELOOP)
        E(EROFS)
        E(ENOSPC)
        E(EDQUOT)
        E(EIO)
        E(EXDEV)
        E(EBUSY)
        E(EBADF)
        E(EMFILE)
        E(ENFILE)
        E(ETXTBSY)
    default:
        return "an unexpected error";
    }
}
