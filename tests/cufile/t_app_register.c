/* The cache stays consistent with what the application registers itself, and
 * the application sees what it would see without the shim. */
#include "cufile_test.h"

int main(void) {
    CUfileHandle_t fh = driver_and_file(4 * MiB, 5, NULL);
    char *a = device(2 * MiB);
    CHECK(cuFileRead(fh, a, MiB, 0, 0) == MiB && fakecufile_registered(a) == 2 * MiB);
    /* The application registers what the shim registered: success, as
     * without the shim; it owns the registration now. */
    CHECK(cuFileBufRegister(a, 2 * MiB, 0).err == CU_FILE_SUCCESS);
    CHECK(fakecufile_registered(a) == 2 * MiB);
    CHECK(cuFileBufRegister(a, 2 * MiB, 0).err == CU_FILE_MEMORY_ALREADY_REGISTERED,
          "twice is cuFile's error");
    int reg = fakecufile_count("cuFileBufRegister");
    CHECK(cuFileRead(fh, a, MiB, MiB, 0) == MiB && same(a, MiB, MiB, 5));
    CHECK(fakecufile_count("cuFileBufRegister") == reg && fakecufile_staged() == 0,
          "the application's registration is used as is");
    CHECK(cuFileBufDeregister(a).err == CU_FILE_SUCCESS);
    CHECK(cuFileBufDeregister(a).err == CU_FILE_MEMORY_NOT_REGISTERED);
    CHECK(fakecufile_registered(a) == 0);
    /* Not registered by anyone now: the shim registers it again. */
    CHECK(cuFileRead(fh, a, MiB, 0, 0) == MiB && fakecufile_registered(a) == 2 * MiB);
    CHECK(stat_of("cufile_autoregistered") == 2);
    /* Deregistering what only the shim registered: cuFile's answer without
     * the shim (not registered), and the shim's registration stays. */
    CHECK(cuFileBufDeregister(a).err == CU_FILE_MEMORY_NOT_REGISTERED);
    CHECK(fakecufile_registered(a) == 2 * MiB);
    /* Part of an allocation registered by the application: the shim leaves
     * the whole allocation alone. */
    char *b = device(4 * MiB);
    CHECK(cuFileBufRegister(b + MiB, MiB, 0).err == CU_FILE_SUCCESS);
    long long staged = fakecufile_staged();
    CHECK(cuFileRead(fh, b, MiB, 0, 0) == MiB && same(b, MiB, 0, 5));
    CHECK(fakecufile_registered(b) == 0 && fakecufile_staged() == staged + MiB);
    CHECK(cuFileRead(fh, b + MiB, MiB, 0, 0) == MiB && fakecufile_staged() == staged + MiB,
          "its own registration is used with its own base");
    CHECK(cuFileBufDeregister(b + MiB).err == CU_FILE_SUCCESS);
    /* Pinned host memory the application registered with cuFile: cuFile's. */
    char *h = pinned(MiB);
    CHECK(cuFileBufRegister(h, MiB, 0).err == CU_FILE_SUCCESS);
    long long direct = stat_of("cufile_direct_host");
    CHECK(cuFileRead(fh, h, MiB, 0, 0) == MiB && same(h, MiB, 0, 5));
    CHECK(stat_of("cufile_direct_host") == direct && fakecufile_count("cuFileRead") >= 1);
    CHECK(cuFileBufDeregister(h).err == CU_FILE_SUCCESS);
    CHECK(cuFileRead(fh, h, MiB, 0, 0) == MiB && stat_of("cufile_direct_host") == direct + 1);
    CHECK(fakecufile_register_failures() == 1, "only the application's own double register");
    PASS();
}
