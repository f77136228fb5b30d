/*
 * mem.c - memcpy, memmove, memset, memcmp (and the ARM EABI __aeabi_mem* entry points)
 * for images without libc. LLVM emits calls to these for struct copies, zero-fills
 * and large moves even when the source never names them.
 *
 * Build with -ffreestanding -fno-builtin: otherwise clang's loop-idiom pass may
 * recognize a copy loop below and replace it with a call to memcpy, i.e. the function
 * itself, recursing forever. The no_builtin attribute says the same thing per function,
 * so a build that forgets the flags is still correct.
 */
#include <stddef.h>
#include <stdint.h>

#if defined(__has_attribute)
#if __has_attribute(no_builtin)
#define MRT_NO_BUILTIN __attribute__((no_builtin))
#endif
#endif
#ifndef MRT_NO_BUILTIN
#if defined(__GNUC__) && !defined(__clang__)
#define MRT_NO_BUILTIN __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define MRT_NO_BUILTIN
#endif
#endif

typedef uint32_t __attribute__((may_alias)) mrt_word_t;

MRT_NO_BUILTIN void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
  uint8_t *d = (uint8_t *)dst;
  const uint8_t *s = (const uint8_t *)src;
  /* Whole words when both ends are word-aligned: dispatches copy tensors this way. */
  if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0) {
    for (; n >= 4; n -= 4, d += 4, s += 4) *(mrt_word_t *)d = *(const mrt_word_t *)s;
  }
  while (n--) *d++ = *s++;
  return dst;
}

MRT_NO_BUILTIN void *memmove(void *dst, const void *src, size_t n) {
  uint8_t *d = (uint8_t *)dst;
  const uint8_t *s = (const uint8_t *)src;
  /* Copy backwards only when dst starts inside [src, src + n); integer compare
   * because pointers into different objects are not ordered in C. */
  if ((uintptr_t)d - (uintptr_t)s < (uintptr_t)n) {
    while (n--) d[n] = s[n];
  } else {
    while (n--) *d++ = *s++;
  }
  return dst;
}

MRT_NO_BUILTIN void *memset(void *dst, int c, size_t n) {
  uint8_t *d = (uint8_t *)dst;
  while (n--) *d++ = (uint8_t)c;
  return dst;
}

MRT_NO_BUILTIN int memcmp(const void *a, const void *b, size_t n) {
  const uint8_t *x = (const uint8_t *)a;
  const uint8_t *y = (const uint8_t *)b;
  for (; n; --n, ++x, ++y)
    if (*x != *y) return *x - *y;
  return 0;
}

#if defined(__ARM_EABI__)
/* The ARM run-time ABI: LLVM calls these instead of memcpy/memset on *-eabi targets.
 * Weak, so a compiler runtime that brings its own wins without a duplicate symbol. */
#define MRT_WEAK_ALIAS(name, target) __attribute__((weak, alias(#target))) name
void *MRT_WEAK_ALIAS(__aeabi_memcpy(void *, const void *, size_t), memcpy);
void *MRT_WEAK_ALIAS(__aeabi_memcpy4(void *, const void *, size_t), memcpy);
void *MRT_WEAK_ALIAS(__aeabi_memcpy8(void *, const void *, size_t), memcpy);
void *MRT_WEAK_ALIAS(__aeabi_memmove(void *, const void *, size_t), memmove);
void *MRT_WEAK_ALIAS(__aeabi_memmove4(void *, const void *, size_t), memmove);
void *MRT_WEAK_ALIAS(__aeabi_memmove8(void *, const void *, size_t), memmove);

/* Note the argument order: (dest, n, c), unlike memset. */
__attribute__((weak)) void __aeabi_memset(void *dst, size_t n, int c) { memset(dst, c, n); }
__attribute__((weak)) void __aeabi_memset4(void *dst, size_t n, int c) { memset(dst, c, n); }
__attribute__((weak)) void __aeabi_memset8(void *dst, size_t n, int c) { memset(dst, c, n); }
__attribute__((weak)) void __aeabi_memclr(void *dst, size_t n) { memset(dst, 0, n); }
__attribute__((weak)) void __aeabi_memclr4(void *dst, size_t n) { memset(dst, 0, n); }
__attribute__((weak)) void __aeabi_memclr8(void *dst, size_t n) { memset(dst, 0, n); }
#endif
