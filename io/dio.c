#include "dio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

static int pow2(uint32_t v) {
    return v && (v & (v - 1)) == 0;
}

int dsp_dio_align(int fd, struct dsp_dio_align *out) {
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN | STATX_TYPE, &sx) != 0) return -errno;
    uint32_t mem = sx.stx_dio_mem_align, off = sx.stx_dio_offset_align;
    if ((sx.stx_mask & STATX_DIOALIGN) && pow2(mem) && pow2(off)) {
        *out = (struct dsp_dio_align){mem, off};
        return 0;
    }
    int ssz = 0;
    if (S_ISBLK(sx.stx_mode) && ioctl(fd, BLKSSZGET, &ssz) == 0 && pow2((uint32_t)ssz)) {
        *out = (struct dsp_dio_align){(uint32_t)ssz, (uint32_t)ssz};
        return 0;
    }
    *out = (struct dsp_dio_align){DSP_DIO_FALLBACK_ALIGN, DSP_DIO_FALLBACK_ALIGN};
    return 0;
}

int dsp_dio_is_direct(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -errno : (fl & O_DIRECT) != 0;
}
