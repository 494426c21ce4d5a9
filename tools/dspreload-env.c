/* Prints the reference of every DSP_* variable from the table the library
 * parses (src/options.h): plain text, or with --markdown the text of
 * docs/configuration.md. */
#include "../src/config.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int markdown = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--markdown")) {
            markdown = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: dspreload-env [--markdown]\n");
            return 0;
        } else {
            fprintf(stderr,
                    "dspreload-env: unknown argument '%s'\nusage: dspreload-env [--markdown]\n",
                    argv[i]);
            return 2;
        }
    }
    fflush(stdout);
    dsp_config_print(1, markdown);
    return 0;
}
