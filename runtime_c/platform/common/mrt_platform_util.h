/*
 * mrt_platform_util.h - small helpers shared by the platform layers (private to
 * runtime_c/platform): the one-line fault report, without libc.
 */
#ifndef MRT_PLATFORM_UTIL_H
#define MRT_PLATFORM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mrt_platform.h"

/* Exit status of an image that took a CPU fault (like a shell's 128 + SIGSEGV). */
#define MRT_PLATFORM_FAULT_EXIT_CODE 139

/* Copies NUL-terminated text to p; returns the new end. */
static inline char *mrt_platform_put(char *p, const char *text) {
  while (*text != '\0') *p++ = *text++;
  return p;
}

/* The index-th string of a list of NUL-separated strings. */
static inline const char *mrt_platform_nth(const char *list, uint32_t index) {
  while (index--) {
    while (*list++ != '\0') {
    }
  }
  return list;
}

/* Prints "minirt: fault: <what>" and, for each of the count values, its label from the
 * NUL-separated list `labels` and "0x" + 8 hex digits, then a newline; exits with
 * MRT_PLATFORM_FAULT_EXIT_CODE. The caller keeps what + labels under 40 bytes. */
static inline __attribute__((noreturn)) void mrt_platform_fault(const char *what,
                                                                const char *labels,
                                                                const uint32_t *values,
                                                                uint32_t count) {
  char line[16 + 40 + 4 * 10 + 1];
  char *p = mrt_platform_put(mrt_platform_put(line, "minirt: fault: "), what);
  for (uint32_t i = 0; i < count; i++) {
    p = mrt_platform_put(p, mrt_platform_nth(labels, i));
    *p++ = '0';
    *p++ = 'x';
    for (uint32_t v = values[i], k = 8; k; --k, v <<= 4) {
      const uint32_t d = v >> 28;
      *p++ = (char)(d < 10u ? '0' + d : 'a' - 10u + d);
    }
  }
  *p++ = '\n';
  (void)mrt_platform_console_write(line, (size_t)(p - line));
  mrt_platform_exit(MRT_PLATFORM_FAULT_EXIT_CODE);
}

#endif /* MRT_PLATFORM_UTIL_H */
