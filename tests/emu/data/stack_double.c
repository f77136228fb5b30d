/*
 * stack_double.c - a test image whose stack use is known: main calls td_deep, whose
 * frame holds a TD_STACK_BYTES array that it writes from end to end, between the two
 * benchmark markers. Two builds that differ only in TD_STACK_BYTES (multiples of 16)
 * must measure depths that differ by exactly that much. Linked with the board's platform
 * part (start-up, exit) and nothing else.
 */
#include <stdint.h>

#ifndef TD_STACK_BYTES
#error "define TD_STACK_BYTES"
#endif

__attribute__((noinline, used)) void mrt_bench_begin(void) { __asm__ volatile("" ::: "memory"); }

__attribute__((noinline, used)) void mrt_bench_end(void) { __asm__ volatile("" ::: "memory"); }

__attribute__((noinline)) static uint32_t td_deep(uint32_t seed) {
  volatile uint8_t buf[TD_STACK_BYTES];
  for (uint32_t i = 0; i < TD_STACK_BYTES; i++) {
    buf[i] = (uint8_t)(seed + i);
  }
  return buf[0] + buf[TD_STACK_BYTES - 1];
}

int main(void) {
  mrt_bench_begin();
  uint32_t r = td_deep(7);
  mrt_bench_end();
  return r == 0u ? 1 : 0;
}
