/* Regression (issue 14): the shim held its mutex for on-demand registration
 * across the real cudaHostRegister. A driver that calls back into the shim
 * from another thread and joins it (the double does, when armed with
 * fakecuda_call_back_on_register) deadlocked: the other thread's
 * cudaPointerGetAttributes waited for that mutex. alarm() turns a deadlock
 * into a failure. */
#include "cuda_test.h"

#include <unistd.h>

#define MiB (1u << 20)

int main(void) {
    alarm(30);
    void *(*dsp_alloc)(size_t) = (void *(*)(size_t))shim("dsp_alloc");
    /* Blocks of another layer, registered at the first CUDA question. */
    char *a = dsp_alloc(MiB), *b = dsp_alloc(MiB);
    CHECK(a && b && fakecuda_kind(a) == 0 && fakecuda_kind(b) == 0);
    fakecuda_call_back_on_register(b);
    CHECK(host_type(a) == 1, "a registered on demand");
    CHECK(fakecuda_called_back() == 1, "the double asked about b from inside a's registration");
    CHECK(fakecuda_kind(a) == 2 && fakecuda_kind(b) == 2, "both registered, once each");
    /* The same from cudaHostRegister of a slice of a new block. */
    char *c = dsp_alloc(MiB), *d = dsp_alloc(MiB);
    fakecuda_call_back_on_register(d);
    CHECK(cudaHostRegister(c + 4096, 4096, 0) == cudaSuccess);
    CHECK(fakecuda_called_back() == 2 && fakecuda_kind(c) == 2 && fakecuda_kind(d) == 2);
    CHECK(cudaHostUnregister(c + 4096) == cudaSuccess);
    CHECK(stat_of("cuda_registrations") == 4);
    PASS();
}
