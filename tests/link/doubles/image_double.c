/*
 * image_double.c - what toolchain/codegen would generate for one image (mrt_image.h),
 * with a trivial dispatch written in C, for link / emulator tests.
 *
 * Input (16 bytes): u32 mode, u32 iterations, u8 data[8].
 *   mode 0: output = {mode, lcg(iterations), data[i] + 1}
 *   mode 1: hang (endless loop)          mode 2: CPU fault (trap instruction)
 *   mode 3: float work (exercises the FPU / soft-float helpers), then as mode 0
 * Build with -DTD_TARGET_ID=<target id>.
 */
#include <stddef.h>
#include <stdint.h>

#include "one_dispatch_image.h"

#ifndef TD_TARGET_ID
#error "define TD_TARGET_ID"
#endif

typedef struct td_io {
  uint32_t mode;
  uint32_t iterations;
  uint8_t data[8];
} td_io_t;

/* Kept out of line so that the compiler cannot hoist the (data-dependent) soft-float
 * conversion into the mode-0 path, whose instruction count must be linear. */
__attribute__((noinline)) static uint32_t td_float_work(uint32_t value) {
  volatile float x = (float)value;
  volatile double y = (double)x / 3.0; /* double division: a helper on most MCUs */
  return (uint32_t)(y * 7.0);
}

static void td_dispatch(void *const *bindings) {
  const td_io_t *in = bindings[0];
  td_io_t *out = bindings[1];
  uint32_t acc = 12345u;
  if (in->mode == 1u) {
    for (;;) {
      __asm__ volatile("" ::: "memory");
    }
  }
  if (in->mode == 2u) {
    __builtin_trap();
  }
  for (uint32_t i = 0; i < in->iterations; i++) {
    acc = acc * 1664525u + 1013904223u;
    __asm__ volatile("" : "+r"(acc));
  }
  if (in->mode == 3u) {
    acc += td_float_work(in->iterations);
  }
  out->mode = in->mode;
  out->iterations = acc;
  for (int i = 0; i < 8; i++) {
    out->data[i] = (uint8_t)(in->data[i] + 1u);
  }
}

TD_ONE_DISPATCH_IMAGE(td_dispatch, td_io_t)
