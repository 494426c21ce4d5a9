#include "errname.h"

#include <errno.h>

const char *dsp_errname(int err) {
    switch (err) {
    case EPERM:
        return "EPERM";
    case ENOMEM:
        return "ENOMEM";
    case EAGAIN:
        return "EAGAIN";
    case EINVAL:
        return "EINVAL";
    case EFAULT:
        return "EFAULT";
    case ENOENT:
        return "ENOENT";
    case EEXIST:
        return "EEXIST";
    case EACCES:
        return "EACCES";
    case EINTR:
        return "EINTR";
    case EHWPOISON:
        return "EHWPOISON";
    default:
        return "an unexpected error";
    }
}
