/* A container with `ulimit -l 64` and no CAP_IPC_LOCK: mlock is refused, but
 * the driver's registration pins without it, so blocks are still served. */
#include "cuda_test.h"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    CHECK(syscall(SYS_capget, &hdr, data) == 0);
    data[0].effective &= ~(1u << CAP_IPC_LOCK);
    data[0].permitted &= ~(1u << CAP_IPC_LOCK);
    CHECK(syscall(SYS_capset, &hdr, data) == 0);
    struct rlimit rl = {64 << 10, 64 << 10};
    CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);

    void *p = NULL;
    CHECK(cudaHostAlloc(&p, 16 << 20, 0) == cudaSuccess);
    CHECK(calls("cudaHostAlloc") == 0, "served by the shim");
    CHECK(fakecuda_kind(p) == 2 && is_pinned(p, 16 << 20));
    CHECK(stat_of("locked_bytes") == 0, "not mlocked: %lld", stat_of("locked_bytes"));
    CHECK(stat_of("pinned_bytes") == 16 << 20, "but pinned, by the driver");
    CHECK(cudaFreeHost(p) == cudaSuccess);
    PASS();
}
