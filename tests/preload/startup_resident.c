/* The pages of the library's zero-filled memory (.bss, .lbss) that a program
 * which never pins has touched by main(), after glibc's own allocations went
 * through the hooks (issue 29: each page first touched is a page fault in
 * every process; free() and realloc() read the arena's bounds in the middle
 * of struct dsp_manager, 36 KiB from the fields the constructor writes, a
 * fault of their own), and at exit the fork locks' page (node.c's destructor
 * read it before its own state: a fault at every exit).
 *
 * startup_resident BSS END LOCKS MAX: run under
 * LD_PRELOAD="libdspreload.so libexitcheck.so"; BSS and END bound the
 * library's zero-filled memory, LOCKS is dsp_fork_locks (offsets in the
 * library, hex); fails when more than MAX of those pages are resident at
 * main(). libexitcheck's destructor, which runs after the library's,
 * checks the fork locks' page. */
#include "pages.h"

#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    uintptr_t base = shim_base();
    if (!base) return 1;
    /* glibc's own allocations, which reach the hooks through libc's slots:
     * fopen's malloc, getline's realloc, fclose's free. */
    FILE *f = fopen("/proc/self/stat", "r");
    char *line = NULL;
    size_t cap = 0;
    if (!f || getline(&line, &cap, f) < 0) return 2;
    fclose(f);
    free(line);
    uintptr_t size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (base + strtoull(argv[1], NULL, 16)) & ~(size - 1);
    uintptr_t hi = base + strtoull(argv[2], NULL, 16);
    size_t pages = (hi - lo + size - 1) / size;
    unsigned char *v = malloc(pages);
    if (!v || mincore((void *)lo, hi - lo, v) != 0) return 2;
    int resident = 0;
    for (size_t i = 0; i < pages; i++)
        if (v[i] & 1) {
            printf("resident: page at offset 0x%lx\n", (unsigned long)(lo - base + i * size));
            resident++;
        }
    int max = atoi(argv[4]);
    printf("%d of %zu zero-filled pages resident at main (at most %d)\n", resident, pages, max);
    if (resident > max) {
        fprintf(stderr, "FAIL: start-up touched more pages than it needs\n");
        return 1;
    }
    char off[32];
    snprintf(off, sizeof off, "%lx", (unsigned long)(base + strtoull(argv[3], NULL, 16)));
    setenv("TEST_FORK_LOCKS_PAGE", off, 1);
    return 0;
}
