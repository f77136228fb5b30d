/*
 * mrt_platform_cycles.h - the cycle budget's hooks (mrt_platform_cycles_start / _since,
 * minirt.h, with MRT_MAX_CYCLES) over a 64-bit counter that counts up, which the
 * including platform defines (static, after the #include): the differences are then
 * plain subtractions. Private to runtime_c/platform; Cortex-M's SysTick counts down
 * over 24 bits and has its own.
 */
#ifndef MRT_PLATFORM_CYCLES_H
#define MRT_PLATFORM_CYCLES_H

#include <stdint.h>

#include "minirt.h"

static uint64_t mrt_platform_counter(void);

void mrt_platform_cycles_start(uint64_t *mark) { *mark = mrt_platform_counter(); }

uint64_t mrt_platform_cycles_since(uint64_t *mark) {
  const uint64_t now = mrt_platform_counter();
  const uint64_t elapsed = now - *mark;
  *mark = now;
  return elapsed;
}

#endif /* MRT_PLATFORM_CYCLES_H */
