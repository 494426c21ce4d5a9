/* For t_direct.c's `later` mode: a library the program opens after start-up,
 * which calls malloc through a GOT slot of its own (bound at dlopen, to the
 * shim's hook). The binding of hints off must leave it alone. */
#include <stdlib.h>

void *later_alloc(size_t n) {
    return malloc(n);
}
