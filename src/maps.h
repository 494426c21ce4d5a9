#ifndef DSP_MAPS_H
#define DSP_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* maps.c: the process's memory maps (vm.max_map_count). Under mu. */
/* Room for n more maps that a new pin (drop 0) or a drop splitting the mapping
 * it is in (drop 1) may add, keeping the reserve left to the program: 0, or
 * -ENOMEM (logged once) when the manager must refuse, or keep the span as it is. */
int dsp_maps_take(int n, int drop);
/* The next take counts the maps again: before a trim, which may drop many
 * spans long after the last count (the program maps too meanwhile). */
void dsp_maps_recount(void);
size_t dsp_maps_count(void);                   /* lines of /proc/self/maps, without allocating */
size_t dsp_maps_max(void);                     /* vm.max_map_count (65530 if unreadable) */
size_t dsp_maps_reserve(size_t max_map_count); /* maps left to the program */

#endif
