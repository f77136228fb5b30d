/*
 * mrt_semihost.c - mrt_platform.h over Arm / RISC-V semihosting, the protocol by which
 * a bare-metal program asks its debugger or emulator (QEMU -semihosting) to do I/O.
 *
 * Arm M-profile traps with `bkpt 0xAB`; RISC-V with the magic uncompressed sequence
 * `slli x0,x0,0x1f; ebreak; srai x0,x0,7`, which must not straddle a page.
 * Both take the operation in r0/a0 and a pointer to a parameter block in r1/a1.
 */
#include <stddef.h>
#include <stdint.h>

#include "mrt_platform.h"

enum {
  MRT_SEMIHOST_SYS_OPEN = 0x01,
  MRT_SEMIHOST_SYS_CLOSE = 0x02,
  MRT_SEMIHOST_SYS_WRITE = 0x05,
  MRT_SEMIHOST_SYS_READ = 0x06,
  MRT_SEMIHOST_SYS_EXIT = 0x18,
  MRT_SEMIHOST_SYS_EXIT_EXTENDED = 0x20, /* 32-bit targets: carries an exit code */
};

/* SYS_OPEN modes (ISO C fopen modes by index): 1 = "rb", 4 = "w", 5 = "wb". */
enum { MRT_SEMIHOST_MODE_RB = 1, MRT_SEMIHOST_MODE_W = 4, MRT_SEMIHOST_MODE_WB = 5 };

#define MRT_SEMIHOST_ADP_STOPPED_APPLICATION_EXIT 0x20026u

__attribute__((noinline)) static intptr_t mrt_semihost_call(uintptr_t op, const void *block) {
#if defined(__arm__)
  register uintptr_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return (intptr_t)r0;
#elif defined(__riscv)
  register uintptr_t a0 __asm__("a0") = op;
  register const void *a1 __asm__("a1") = block;
  __asm__ volatile(".option push\n\t"
                   ".option norvc\n\t"
                   ".balign 16\n\t"
                   "slli zero, zero, 0x1f\n\t"
                   "ebreak\n\t"
                   "srai zero, zero, 7\n\t"
                   ".option pop"
                   : "+r"(a0)
                   : "r"(a1)
                   : "memory");
  return (intptr_t)a0;
#else
#error "semihosting: unsupported architecture"
#endif
}

/* SYS_OPEN: the block is {path, mode, strlen(path)}. */
static intptr_t mrt_semihost_open(const char *path, uintptr_t mode) {
  uintptr_t block[3] = {(uintptr_t)path, mode, 0};
  while (path[block[2]] != '\0') block[2]++;
  return mrt_semihost_call(MRT_SEMIHOST_SYS_OPEN, block);
}

/* SYS_READ / SYS_WRITE return the number of bytes *not* transferred; anything outside
 * [0, size] is an error (one unsigned compare covers negative values). */
static long mrt_semihost_transfer(uintptr_t op, int handle, const void *data, size_t size) {
  const uintptr_t block[3] = {(uintptr_t)handle, (uintptr_t)data, size};
  const size_t left = (size_t)mrt_semihost_call(op, block);
  return left > size ? -1 : (long)(size - left);
}

/* Opens ":tt" (the emulator's console, stdout for write modes) at every call: only
 * error reports write to the console, once before exiting, so caching the handle
 * would cost more flash than it saves. */
long mrt_platform_console_write(const void *data, size_t size) {
  intptr_t handle = mrt_semihost_open(":tt", MRT_SEMIHOST_MODE_W);
  if (handle < 0) return -1;
  return mrt_semihost_transfer(MRT_SEMIHOST_SYS_WRITE, (int)handle, data, size);
}

int mrt_platform_file_open(const char *path, int mode) {
  if (path == NULL || (unsigned)mode > 1u) return -1;
  intptr_t handle =
      mrt_semihost_open(path, mode == 0 ? MRT_SEMIHOST_MODE_RB : MRT_SEMIHOST_MODE_WB);
  return handle < 0 ? -1 : (int)handle;
}

long mrt_platform_file_read(int handle, void *data, size_t size) {
  return mrt_semihost_transfer(MRT_SEMIHOST_SYS_READ, handle, data, size);
}

long mrt_platform_file_write(int handle, const void *data, size_t size) {
  return mrt_semihost_transfer(MRT_SEMIHOST_SYS_WRITE, handle, data, size);
}

void mrt_platform_file_close(int handle) {
  const uintptr_t block[1] = {(uintptr_t)handle};
  (void)mrt_semihost_call(MRT_SEMIHOST_SYS_CLOSE, block);
}

__attribute__((noreturn)) void mrt_platform_exit(int code) {
  /* SYS_EXIT_EXTENDED passes {reason, code}; QEMU makes `code` its exit status. */
  const uintptr_t block[2] = {MRT_SEMIHOST_ADP_STOPPED_APPLICATION_EXIT, (uintptr_t)code};
  (void)mrt_semihost_call(MRT_SEMIHOST_SYS_EXIT_EXTENDED, block);
  /* A host without the extension: plain SYS_EXIT (success or failure only). */
  (void)mrt_semihost_call(MRT_SEMIHOST_SYS_EXIT, (const void *)(uintptr_t)(
      code == 0 ? MRT_SEMIHOST_ADP_STOPPED_APPLICATION_EXIT : 0x20024u /* RunTimeErrorUnknown */));
  for (;;) {
  }
}
