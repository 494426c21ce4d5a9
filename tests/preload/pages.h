/* For the page tests of tests/preload (fork_locks_page.c, startup_resident.c,
 * libexitcheck.c): where libdspreload.so is loaded, and whether a page is
 * resident. */
#ifndef DSP_TEST_PAGES_H
#define DSP_TEST_PAGES_H

#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int shim_find_(struct dl_phdr_info *info, size_t size, void *base) {
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libdspreload")) return 0;
    *(uintptr_t *)base = info->dlpi_addr;
    return 1;
}

/* The load address of libdspreload.so in this process, or 0 (said on
 * stderr). */
static inline uintptr_t shim_base(void) {
    uintptr_t base = 0;
    dl_iterate_phdr(shim_find_, &base);
    if (!base) fprintf(stderr, "libdspreload.so is not loaded\n");
    return base;
}

/* 1 when the page holding addr is resident, 0 when not, -1 when mincore
 * refuses. */
static inline int page_resident(uintptr_t addr) {
    uintptr_t size = (uintptr_t)sysconf(_SC_PAGESIZE);
    unsigned char v = 0;
    if (mincore((void *)(addr & ~(size - 1)), size, &v) != 0) return -1;
    return v & 1;
}

#endif
