/* dlsym and dlvsym keep glibc's semantics for every lookup the shim does not
 * serve (issue 15): RTLD_NEXT from a wrapper library, RTLD_DEFAULT in the
 * caller's local scope, handles of other libraries, versioned lookups,
 * dlerror. Run with and without the shim: the same checks hold. argv[1..4]:
 * the test libraries. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    CHECK(argc == 4);
    int shimmed = dlsym(RTLD_DEFAULT, "dsp_alloc") != NULL;

    /* RTLD_NEXT from a wrapper: the next definition in its scope. */
    void *libm = dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL);
    CHECK(libm);
    void *next = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(next);
    void *(*dlnext_next)(void) = (void *(*)(void))dlsym(next, "dlnext_next");
    CHECK(dlnext_next && dlnext_next() != NULL);
    CHECK(((int (*)(void))dlnext_next())() == 42);
    int (*wrapped)(void) = (int (*)(void))dlsym(next, "dlscope_b_only");
    CHECK(wrapped && wrapped() == 1042);

    /* RTLD_DEFAULT: the caller's scope. */
    void *a = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    CHECK(a);
    void *(*finds_b)(void) = (void *(*)(void))dlsym(a, "dlscope_a_finds_b");
    CHECK(finds_b && finds_b() != NULL);
    CHECK(dlsym(RTLD_DEFAULT, "dlscope_b_only") == NULL, "not in the program's scope");
    int (*b_only)(void) = (int (*)(void))finds_b();
    CHECK(b_only() == 42);
    CHECK(dlsym(RTLD_DEFAULT, "printf") == (void *)printf);

    /* A library that is not CUDA's: its own function, whatever the name. */
    void *notcuda = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    CHECK(notcuda);
    int (*fake_alloc)(void **, unsigned long, unsigned) =
        (int (*)(void **, unsigned long, unsigned))dlsym(notcuda, "cuMemHostAlloc");
    void *p = &p;
    CHECK(fake_alloc && fake_alloc(&p, 4096, 0) == 7 && p == NULL, "its own function");
    CHECK((dlsym(RTLD_DEFAULT, "cuMemHostAlloc") != NULL) == shimmed, "the shim's, by default");

    /* Handles, versions and errors. */
    CHECK(dlsym(libm, "sin") == (void *)sin);
    CHECK(dlvsym(libm, "sin", "GLIBC_2.2.5") == (void *)sin || dlvsym(libm, "sin", "GLIBC_2.17"));
    dlerror();
    CHECK(dlsym(libm, "no_such_symbol_dsp") == NULL);
    const char *e = dlerror();
    CHECK(e && strstr(e, "no_such_symbol_dsp"));
    CHECK(dlerror() == NULL, "read once");
    CHECK(dlvsym(libm, "sin", "NO_SUCH_VERSION_DSP") == NULL);
    e = dlerror();
    CHECK(e && strstr(e, "sin"));
    CHECK(dlsym(RTLD_NEXT, "no_such_symbol_dsp") == NULL && dlerror() != NULL);
    CHECK(dlsym(RTLD_DEFAULT, "no_such_symbol_dsp") == NULL && dlerror() != NULL);
    /* Names starting with "cu" that nobody serves. */
    CHECK(dlsym(libm, "cuNoSuchFunction") == NULL && dlerror() != NULL);
    printf("PASS (%s the shim)\n", shimmed ? "with" : "without");
    return 0;
}
