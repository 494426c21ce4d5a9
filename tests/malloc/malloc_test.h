/* For the malloc-hint tests: programs run under LD_PRELOAD=libdspreload.so
 * with DSP_MALLOC_MIN set; they reach the shim's API through dlsym
 * (cuda_test.h's helpers: shim, stat_of, CHECK, PASS). */
#ifndef DSP_MALLOC_TEST_H
#define DSP_MALLOC_TEST_H

#include "cuda_test.h"

#endif
