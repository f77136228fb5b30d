/*
 * mrt_semihost.c - mrt_platform.h over Arm / RISC-V semihosting, the protocol by which
 * a bare-metal program asks its debugger or emulator (QEMU -semihosting) to do I/O.
 *
 * A call takes the operation in r0/a0 and a pointer to a parameter block in r1/a1, and
 * returns its result in r0/a0. The calls used: SYS_OPEN {path, mode, strlen(path)}
 * (modes 1 = "rb", 5 = "wb") returns a handle or -1; SYS_READ / SYS_WRITE {handle, data,
 * size} return the number of bytes *not* transferred; SYS_EXIT_EXTENDED {reason, code}
 * ends the program with `code` as its exit status (QEMU, OpenOCD and pyOCD have it).
 */
#include <stddef.h>
#include <stdint.h>

#include "mrt_platform.h"

enum {
  MRT_SEMIHOST_SYS_OPEN = 0x01,
  MRT_SEMIHOST_SYS_WRITE = 0x05,
  MRT_SEMIHOST_SYS_READ = 0x06,
  MRT_SEMIHOST_SYS_EXIT_EXTENDED = 0x20,
};

#define MRT_SEMIHOST_ADP_STOPPED_APPLICATION_EXIT 0x20026u

#if defined(__arm__)
/* Arm M-profile traps with `bkpt 0xAB`. In assembly because every Arm image carries this
 * file and flash is what it is measured in (the whole seed firmware for Cortex-M4 fits
 * in 1 KB): the block is the three argument registers pushed on the stack, and
 * mrt_platform_files keeps its state in callee-saved registers across the calls. Thumb-1
 * only, so one source serves Armv6-M to Armv8.1-M. mrt_platform_files takes the steps of
 * common/mrt_platform_files.h, the C version the other platforms use. */
__asm__(
    /* mrt_semihost: r0 = operation, r1-r3 = the block's words; returns r0, keeps r1-r3. */
    "  .section .text.mrt_semihost, \"ax\", %progbits\n"
    "  .p2align 1\n"
    "  .type mrt_semihost, %function\n"
    "  .thumb_func\n"
    "mrt_semihost:\n"
    "  push {r1, r2, r3}\n"
    "  mov r1, sp\n"
    "  bkpt 0xAB\n"
    "  pop {r1, r2, r3}\n"
    "  bx lr\n"
    "  .size mrt_semihost, . - mrt_semihost\n"

    /* r0 = path, r1 = write, r2 = buffers, r3 = sizes, [sp] = count. Kept: r4 the
     * transfer operation, r5 buffers, r6 sizes, r7 count, [sp] the handle, [sp, #4] the
     * byte that must not come after the inputs. */
    "  .section .text.mrt_platform_files, \"ax\", %progbits\n"
    "  .global mrt_platform_files\n"
    "  .p2align 1\n"
    "  .type mrt_platform_files, %function\n"
    "  .thumb_func\n"
    "mrt_platform_files:\n"
    "  push {r2-r7, lr}\n"
    "  ldr r7, [sp, #28]\n"
    "  movs r4, #6\n" /* SYS_READ, or SYS_WRITE = 5 when writing */
    "  subs r4, r4, r1\n"
    "  mov r5, r2\n"
    "  mov r6, r3\n"
    "  lsls r2, r1, #2\n" /* mode 1 "rb", or 5 "wb" when writing */
    "  adds r2, #1\n"
    "  movs r3, #0\n" /* strlen(path) */
    "1:ldrb r1, [r0, r3]\n"
    "  adds r3, #1\n"
    "  cmp r1, #0\n"
    "  bne 1b\n"
    "  subs r3, #1\n"
    "  mov r1, r0\n"
    "  movs r0, #1\n" /* SYS_OPEN */
    "  bl mrt_semihost\n"
    "  str r0, [sp]\n"
    "  movs r1, #1\n" /* MRT_PLATFORM_FILES_OPEN when the handle is -1 */
    "  adds r0, #1\n"
    "  beq 9f\n"
    "2:movs r1, #2\n" /* MRT_PLATFORM_FILES_SHORT when a transfer leaves bytes */
    "  subs r7, #1\n"
    "  bcc 3f\n"
    "  ldm r5!, {r2}\n"
    "  ldm r6!, {r3}\n"
    "  ldr r1, [sp]\n"
    "  mov r0, r4\n"
    "  bl mrt_semihost\n"
    "  movs r1, #2\n"
    "  cmp r0, #0\n"
    "  beq 2b\n"
    "  b 9f\n"
    "3:movs r1, #0\n" /* written: done */
    "  cmp r4, #6\n"
    "  bne 9f\n"
    "  mov r0, r4\n" /* read: one more byte must not come (it stays 1 unread) */
    "  ldr r1, [sp]\n"
    "  add r2, sp, #4\n"
    "  movs r3, #1\n"
    "  bl mrt_semihost\n"
    "  movs r1, #0\n"
    "  cmp r0, #1\n"
    "  beq 9f\n"
    "  movs r1, #3\n" /* MRT_PLATFORM_FILES_LONG */
    "9:mov r0, r1\n"
    "  pop {r2-r7, pc}\n"
    "  .size mrt_platform_files, . - mrt_platform_files\n"

    /* r0 = code. A host without SYS_EXIT_EXTENDED returns: try again, forever. */
    "  .section .text.mrt_platform_exit, \"ax\", %progbits\n"
    "  .global mrt_platform_exit\n"
    "  .p2align 1\n"
    "  .type mrt_platform_exit, %function\n"
    "  .thumb_func\n"
    "mrt_platform_exit:\n"
    "  mov r2, r0\n"
    "1:ldr r1, =0x20026\n" /* ADP_Stopped_ApplicationExit */
    "  movs r0, #0x20\n"   /* SYS_EXIT_EXTENDED */
    "  bl mrt_semihost\n"
    "  b 1b\n"
    "  .ltorg\n"
    "  .size mrt_platform_exit, . - mrt_platform_exit\n");

#elif defined(__riscv)
/* RISC-V traps with the magic uncompressed sequence `slli x0,x0,0x1f; ebreak;
 * srai x0,x0,7`, which must not straddle a page: it is 16-byte aligned. */
__attribute__((noinline)) static long mrt_semihost(uintptr_t op, uintptr_t a, uintptr_t b,
                                                    uintptr_t c) {
  const uintptr_t block[3] = {a, b, c};
  register uintptr_t a0 __asm__("a0") = op;
  register const uintptr_t *a1 __asm__("a1") = block;
  __asm__ volatile(".balign 16\n\t"
                   ".option push\n\t"
                   ".option norvc\n\t"
                   "slli zero, zero, 0x1f\n\t"
                   "ebreak\n\t"
                   "srai zero, zero, 7\n\t"
                   ".option pop"
                   : "+r"(a0)
                   : "r"(a1)
                   : "memory");
  return (long)a0;
}

#include "../common/mrt_platform_files.h"

static long mrt_platform_open(const char *path, int write) {
  uintptr_t length = 0;
  while (path[length]) length++;
  return mrt_semihost(MRT_SEMIHOST_SYS_OPEN, (uintptr_t)path, write ? 5u : 1u, length);
}

static long mrt_platform_transfer(int write, long handle, void *data, size_t size) {
  return (long)size - mrt_semihost(write ? MRT_SEMIHOST_SYS_WRITE : MRT_SEMIHOST_SYS_READ,
                                   (uintptr_t)handle, (uintptr_t)data, size);
}

__attribute__((noreturn)) void mrt_platform_exit(int code) {
  for (;;)
    (void)mrt_semihost(MRT_SEMIHOST_SYS_EXIT_EXTENDED, MRT_SEMIHOST_ADP_STOPPED_APPLICATION_EXIT,
                       (uintptr_t)code, 0);
}
#else
#error "semihosting: unsupported architecture"
#endif
