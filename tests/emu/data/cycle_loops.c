/*
 * cycle_loops.c - an image (mrt_image.h) whose one dispatch runs a hand-written assembly
 * loop, for checking the cycle estimate against the cores' manuals
 * (tests/emu/test_cycles_manual.py). Linked with tests/link/doubles/core_double.c.
 *
 * Input (16 bytes): u32 kernel, u32 iterations, u8 unused[8]; output: the input.
 * Kernels: 0 loads, 1 multiply(-accumulate)s, 2 branches, 3 divides, 4 load multiple,
 * 5 FP ops. Each loop body is exactly what its test counts, ending in a conditional branch
 * back (taken every iteration but the last). Build with -DTD_TARGET_ID=<target id>.
 */
#include <stddef.h>
#include <stdint.h>

#include "../../link/doubles/one_dispatch_image.h"

#ifndef TD_TARGET_ID
#error "define TD_TARGET_ID"
#endif

typedef struct cl_io {
  uint32_t kernel;
  uint32_t iterations;
  uint8_t unused[8];
} cl_io_t;

/* const: the start-up code copies no .data. The loads only read it. */
static const uint32_t cl_words[8] = {1, 2, 3, 4, 5, 6, 7, 8};

#if defined(__thumb__) && !defined(__thumb2__) /* Armv6-M: 16-bit Thumb only */
static void cl_run(uint32_t kernel, uint32_t n) {
  const uint32_t *p = cl_words;
  switch (kernel) {
    case 0:
      __asm__ volatile("1: ldr r4, [%1]\n ldr r5, [%1, #4]\n ldr r6, [%1, #8]\n"
                       " ldr r7, [%1, #12]\n subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n) : "l"(p) : "r4", "r5", "r6", "r7", "cc", "memory");
      break;
    case 1:
      __asm__ volatile("1: muls r4, r5\n muls r4, r5\n muls r4, r5\n muls r4, r5\n"
                       " subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n) : : "r4", "r5", "cc");
      break;
    case 2:
      __asm__ volatile("1: cmp %0, #0\n beq 2f\n subs %0, %0, #1\n bne 1b\n 2:\n"
                       : "+l"(n) : : "cc");
      break;
    case 4:
      __asm__ volatile("1: ldm %1!, {r4-r7}\n subs %1, #16\n subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n), "+l"(p) : : "r4", "r5", "r6", "r7", "cc", "memory");
      break;
    default:
      break;
  }
}
#elif defined(__thumb2__)
static void cl_run(uint32_t kernel, uint32_t n) {
  const uint32_t *p = cl_words;
  uint32_t a = 1000000u, b = 7u;
  switch (kernel) {
    case 0:
      __asm__ volatile("1: ldr r4, [%1]\n ldr r5, [%1, #4]\n ldr r6, [%1, #8]\n"
                       " ldr r7, [%1, #12]\n subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n) : "l"(p) : "r4", "r5", "r6", "r7", "cc", "memory");
      break;
    case 1:
      __asm__ volatile("1: mla r4, r5, r6, r4\n mla r4, r5, r6, r4\n mla r4, r5, r6, r4\n"
                       " mla r4, r5, r6, r4\n subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n) : : "r4", "r5", "r6", "cc");
      break;
    case 2:
      __asm__ volatile("1: cmp %0, #0\n beq 2f\n subs %0, %0, #1\n bne 1b\n 2:\n"
                       : "+l"(n) : : "cc");
      break;
    case 3:
      __asm__ volatile("1: udiv r4, %1, %2\n udiv r5, %1, %2\n subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n) : "r"(a), "r"(b) : "r4", "r5", "cc");
      break;
    case 4:
      __asm__ volatile("1: ldm %1, {r4-r7}\n subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n) : "l"(p) : "r4", "r5", "r6", "r7", "cc", "memory");
      break;
#if defined(__ARM_FP)
    case 5:
      __asm__ volatile("1: vadd.f32 s0, s0, s1\n vmul.f32 s2, s2, s3\n vmla.f32 s4, s5, s6\n"
                       " subs %0, %0, #1\n bne 1b\n"
                       : "+l"(n) : : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "cc");
      break;
#endif
    default:
      break;
  }
}
#elif defined(__riscv)
static void cl_run(uint32_t kernel, uint32_t n) {
  const uint32_t *p = cl_words;
  uint32_t a = 1000000u, b = 7u;
  switch (kernel) {
    case 0:
      __asm__ volatile("1: lw t0, 0(%1)\n lw t1, 4(%1)\n lw t2, 8(%1)\n lw t3, 12(%1)\n"
                       " addi %0, %0, -1\n bnez %0, 1b\n"
                       : "+r"(n) : "r"(p) : "t0", "t1", "t2", "t3", "memory");
      break;
    case 1:
      __asm__ volatile("1: mul t0, %1, %2\n mul t1, %1, %2\n mul t2, %1, %2\n"
                       " mul t3, %1, %2\n addi %0, %0, -1\n bnez %0, 1b\n"
                       : "+r"(n) : "r"(a), "r"(b) : "t0", "t1", "t2", "t3");
      break;
    case 2:
      __asm__ volatile("1: beqz %0, 2f\n addi %0, %0, -1\n bnez %0, 1b\n 2:\n" : "+r"(n));
      break;
    case 3:
      __asm__ volatile("1: divu t0, %1, %2\n divu t1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b\n"
                       : "+r"(n) : "r"(a), "r"(b) : "t0", "t1");
      break;
    default:
      break;
  }
}
#else
#error "cycle_loops.c: no loops for this architecture"
#endif

static void cl_dispatch(void *const *bindings) {
  const cl_io_t *in = bindings[0];
  cl_io_t *out = bindings[1];
  if (in->iterations) {
    cl_run(in->kernel, in->iterations);
  }
  *out = *in;
}

TD_ONE_DISPATCH_IMAGE(cl_dispatch, cl_io_t)
