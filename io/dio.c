#include "dio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x2000U
#endif

static int pow2(uint32_t v) {
    return v && (v & (v - 1)) == 0;
}

int dsp_dio_align(int fd, struct dsp_dio_align *out) {
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN | STATX_TYPE, &sx) != 0) return -errno;
    /* glibc headers older than 2.37 lack the field names: read them by offset
     * in the kernel's struct (stx_dio_mem_align @0x98, stx_dio_offset_align @0x9c). */
    const uint32_t *raw = (const uint32_t *)((const char *)&sx + 0x98);
    if ((sx.stx_mask & STATX_DIOALIGN) && pow2(raw[0]) && pow2(raw[1])) {
        *out = (struct dsp_dio_align){raw[0], raw[1]};
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
