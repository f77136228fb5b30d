/*
 * mrt_platform_util.h - small helpers shared by the platform layers (private to
 * runtime_c/platform): fault reporting text without libc.
 */
#ifndef MRT_PLATFORM_UTIL_H
#define MRT_PLATFORM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mrt_platform.h"

/* Exit status of an image that took a CPU fault (like a shell's 128 + SIGSEGV). */
#define MRT_PLATFORM_FAULT_EXIT_CODE 139

/* Appends NUL-terminated `text` to buf at *pos (bounded by cap). */
static inline void mrt_platform_append(char *buf, size_t cap, size_t *pos, const char *text) {
  while (*text != '\0' && *pos < cap) {
    buf[(*pos)++] = *text++;
  }
}

/* Appends "0x" and 8 hex digits of value. */
static inline void mrt_platform_append_hex32(char *buf, size_t cap, size_t *pos, uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  mrt_platform_append(buf, cap, pos, "0x");
  for (int shift = 28; shift >= 0; shift -= 4) {
    if (*pos < cap) {
      buf[(*pos)++] = digits[(value >> shift) & 0xFu];
    }
  }
}

#endif /* MRT_PLATFORM_UTIL_H */
