/*
 * mrt_riscv.c - crt0 for bare-metal RV32 in machine mode: stack, trap vector, FPU
 * enable (when the target has F), main, exit; and a trap handler that records mcause /
 * mepc / mtval for the host and exits with MRT_PLATFORM_FAULT_EXIT_CODE.
 *
 * There is no .data to copy and no .bss to zero: runtime_c defines no variables (a
 * test checks its objects), and the image's arena and I/O buffers, the only .bss, are
 * each written before they are read (inputs by the harness, every other buffer by the
 * dispatch that produces it).
 *
 * _start is placed first in flash (section .text.mrt_start): QEMU's virt machine with
 * `-bios none` jumps to the start of DRAM.
 */
#include <stddef.h>
#include <stdint.h>

#include "../common/mrt_platform_util.h"
#include "mrt_platform.h"

extern int main(void);

__attribute__((noreturn, used)) void mrt_riscv_start(void) {
  mrt_platform_exit(main());
}

static uint32_t mrt_riscv_csr_mcause(void) {
  uint32_t v;
  __asm__ volatile("csrr %0, mcause" : "=r"(v));
  return v;
}
static uint32_t mrt_riscv_csr_mepc(void) {
  uint32_t v;
  __asm__ volatile("csrr %0, mepc" : "=r"(v));
  return v;
}
static uint32_t mrt_riscv_csr_mtval(void) {
  uint32_t v;
  __asm__ volatile("csrr %0, mtval" : "=r"(v));
  return v;
}

#if defined(MRT_MAX_CYCLES) || defined(MRT_DEVICE)
#include "../common/mrt_platform_cycles.h"

/* The counter the board's linker script makes mrt_riscv_cycles (toolchain/link/script.py,
 * the board's cycle_counter): one of the two below, chosen at link time so that the copy
 * relinked for QEMU's virt sibling reads mcycle from the same object. */
uint64_t mrt_riscv_cycles(void);

static uint64_t mrt_platform_counter(void) { return mrt_riscv_cycles(); }

/* The architecture's mcycle, 64 bits read as two halves (again when the high half moved
 * in between). */
uint64_t mrt_riscv_cycles_mcycle(void) {
  uint32_t hi, lo, again;
  do {
    __asm__ volatile("csrr %0, mcycleh\n\tcsrr %1, mcycle\n\tcsrr %2, mcycleh"
                     : "=r"(hi), "=r"(lo), "=r"(again));
  } while (hi != again);
  return (uint64_t)hi << 32 | lo;
}

/* Espressif's cores (ESP32-C3, C6) implement no mcycle: reading it is an illegal
 * instruction. Their own counter (ESP32-C3 TRM, "ESP-RISC-V CPU", "Performance Counter"):
 * mpcer 0x7E0 selects the event (bit 0: cycles), mpcmr 0x7E1 bit 0 enables counting,
 * mpccr 0x7E2 is the 32-bit count, which wraps around. Widened to 64 bits here by counting
 * the wraps between reads: exact while two reads are less than 2^32 cycles apart (26.8 s
 * at 160 MHz), as the budget's walk and one inference's start and end are. */
uint64_t mrt_riscv_cycles_esp_pccr(void) {
  static uint32_t started, last, wraps;
  if (!started) {
    __asm__ volatile("csrwi 0x7E0, 1\n\tcsrwi 0x7E1, 1");
    started = 1u;
  }
  uint32_t now;
  __asm__ volatile("csrr %0, 0x7E2" : "=r"(now));
  if (now < last) ++wraps;
  last = now;
  return (uint64_t)wraps << 32 | now;
}
#endif

/* mtvec (direct mode) points here, so it must be 4-byte aligned. */
__attribute__((noreturn, used, aligned(4))) void mrt_riscv_trap(void) {
  uint32_t words[4] = {MRT_FAULT_RISCV, mrt_riscv_csr_mcause(), mrt_riscv_csr_mepc(),
                       mrt_riscv_csr_mtval()};
  mrt_platform_fault(words, 4);
}

__attribute__((naked, noreturn, section(".text.mrt_start"))) void _start(void) {
  __asm__ volatile("la sp, _stack_start\n\t"
                   "la t0, mrt_riscv_trap\n\t"
                   "csrw mtvec, t0\n\t"
#if defined(__riscv_flen)
                   "li t0, 0x2000\n\t" /* mstatus.FS = Initial */
                   "csrs mstatus, t0\n\t"
                   "csrwi fcsr, 0\n\t"
#endif
                   "call mrt_riscv_start\n\t"
                   "1: j 1b");
}
