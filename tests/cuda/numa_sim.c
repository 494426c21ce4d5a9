/* The library on a simulated machine of several NUMA nodes, for
 * cuda_numa_placement (tests/cuda/meson.build): linked with -Wl,--wrap, these
 * stand for what the core asks the machine (src/sys.h, src/numa.h). Tests
 * only: the installed library has none of it.
 *   DSP_TEST_SYSFS  the sysfs root the topology is read under ("/sys")
 *   DSP_TEST_CPU    the CPU every thread runs on (sched_getcpu's when unset)
 * A binding to node 0, the only one of this machine, is the kernel's; to
 * another node it is only recorded, and the block's pages are reported on
 * the node it was bound to. */
#include <stdlib.h>

const char *__wrap_dsp_numa_sysfs(void);
int __wrap_dsp_sys_cpu(void);
int __wrap_dsp_sys_bind_node(void *base, size_t len, int node);
int __wrap_dsp_sys_page_node(const void *p);
int __real_dsp_sys_cpu(void);
int __real_dsp_sys_bind_node(void *base, size_t len, int node);
int __real_dsp_sys_page_node(const void *p);

static _Atomic int bound = -1; /* the last node asked: the tests pin one block at a time */

const char *__wrap_dsp_numa_sysfs(void) {
    const char *root = getenv("DSP_TEST_SYSFS");
    return root ? root : "/sys";
}

int __wrap_dsp_sys_cpu(void) {
    const char *cpu = getenv("DSP_TEST_CPU");
    return cpu ? atoi(cpu) : __real_dsp_sys_cpu();
}

int __wrap_dsp_sys_bind_node(void *base, size_t len, int node) {
    bound = node;
    return node == 0 ? __real_dsp_sys_bind_node(base, len, node) : 0;
}

int __wrap_dsp_sys_page_node(const void *p) {
    return bound > 0 ? bound : __real_dsp_sys_page_node(p);
}
