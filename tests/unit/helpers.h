/* Shared by the unit tests: they link the manager core directly, and Criterion
 * runs each test in a fresh process, so each starts with an uninitialised
 * manager and may set DSP_* variables in its .init before the first call. */
#ifndef DSP_TEST_HELPERS_H
#define DSP_TEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>

/* 1 when text is one valid JSON value (RFC 8259 grammar) and nothing else. */
int json_valid(const char *text);

/* Redirects the library's log lines to a pipe; collect() returns what arrived
 * (NUL-terminated, static buffer). */
void log_capture_start(void);
const char *log_capture_collect(void);

/* The VmFlags line of the mapping that holds addr, from /proc/self/smaps. */
int smaps_vmflags(const void *addr, char *out, size_t cap);

/* How many maps of /proc/self/maps overlap [lo, hi). */
size_t maps_over(uintptr_t lo, uintptr_t hi);

/* A field of /proc/self/status, in kB ("VmLck"), or -1. */
long status_kb(const char *field);

/* Drops CAP_IPC_LOCK from the effective set and sets RLIMIT_MEMLOCK. 0 or -1. */
int drop_ipc_lock(size_t memlock_bytes);

/* The manager's counter by JSON key, read through dsp_stats_json. */
long long stat_of(const char *key);

/* Span kind hooks (span_kind.h) that do nothing: a layer with no pool of
 * its own to give back. */
int kind_no_room(size_t len);
void kind_nothing(void);
size_t kind_none(void);

#endif
