/*
 * mrt_cortex_m.c - start-up for Arm Cortex-M (Armv6-M, Armv7-M, Armv8-M): the vector
 * table, the reset handler (FPU enable, .data copy, .bss zero, main, exit) and fault
 * handlers that record the fault for the host and exit with
 * MRT_PLATFORM_FAULT_EXIT_CODE instead of locking up.
 *
 * Symbols from the generated linker script (cortex-m-rt names): _stack_start (initial
 * stack pointer, top of RAM), __sidata (load address of .data in flash), __sdata /
 * __edata, __sbss / __ebss.
 */
#include <stddef.h>
#include <stdint.h>

#include "../common/mrt_platform_util.h"
#include "mrt_platform.h"

extern uint32_t _stack_start[];
extern const uint32_t __sidata[];
extern uint32_t __sdata[], __edata[], __sbss[], __ebss[];
extern int main(void);

void mrt_cortex_m_reset(void);
void mrt_cortex_m_fault(void);

/* Copies .data from flash and zeroes .bss; -ffreestanding keeps these loops from
 * turning into memcpy / memset calls. */
__attribute__((noreturn, used)) void mrt_cortex_m_start(void) {
  const uint32_t *src = __sidata;
  for (uint32_t *dst = __sdata; dst < __edata; dst++) {
    *dst = *src++;
  }
  for (uint32_t *dst = __sbss; dst < __ebss; dst++) {
    *dst = 0;
  }
  mrt_platform_exit(main());
}

/* Runs before any C code: with an FPU, grant full access to CP10/CP11 in CPACR so the
 * compiler's floating-point instructions do not fault. */
__attribute__((naked, noreturn)) void mrt_cortex_m_reset(void) {
  __asm__ volatile(
#if defined(__ARM_FP)
      "movw r0, #0xED88\n\t"
      "movt r0, #0xE000\n\t"
      "ldr r1, [r0]\n\t"
      "orr r1, r1, #(0xF << 20)\n\t"
      "str r1, [r0]\n\t"
      "dsb\n\t"
      "isb\n\t"
#endif
      "bl mrt_cortex_m_start\n\t"
      "udf #0");
}

/* frame: the exception stack frame (r0-r3, r12, lr, pc, xpsr); ipsr: exception number.
 * Records pc, lr, ipsr and, where the core has them, the configurable and HardFault
 * status registers (see mrt_platform_util.h for how the host prints them). */
__attribute__((noreturn, used)) void mrt_cortex_m_report_fault(const uint32_t *frame,
                                                               uint32_t ipsr) {
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
  /* Configurable / HardFault status registers (absent on Armv6-M and v8-M Baseline). */
  const uint32_t words[6] = {MRT_FAULT_CORTEX_M, frame[6], frame[5], ipsr,
                             *(volatile const uint32_t *)0xE000ED28u,
                             *(volatile const uint32_t *)0xE000ED2Cu};
#else
  const uint32_t words[4] = {MRT_FAULT_CORTEX_M, frame[6], frame[5], ipsr};
#endif
  mrt_platform_fault(words, sizeof words / sizeof words[0]);
}

/* Every exception but reset lands here; none is expected in a verification run. */
__attribute__((naked, noreturn)) void mrt_cortex_m_fault(void) {
  __asm__ volatile("mrs r0, msp\n\t"
                   "mrs r1, ipsr\n\t"
                   "bl mrt_cortex_m_report_fault\n\t"
                   "udf #0");
}

/* The table the core reads at reset: initial SP, then the handlers up to UsageFault.
 * Nothing in minirt enables or raises the later system exceptions (SVCall, DebugMonitor,
 * PendSV, SysTick) or any interrupt, so their 36 bytes of vectors are left out: code
 * that enables one must extend this table. */
typedef struct mrt_cortex_m_vectors {
  uint32_t *initial_sp;
  void (*handlers[6])(void);
} mrt_cortex_m_vectors_t;

__attribute__((section(".vector_table"), used))
const mrt_cortex_m_vectors_t mrt_cortex_m_vector_table = {
    _stack_start,
    {
        mrt_cortex_m_reset, /* 1 reset */
        mrt_cortex_m_fault, /* 2 NMI */
        mrt_cortex_m_fault, /* 3 HardFault */
        mrt_cortex_m_fault, /* 4 MemManage */
        mrt_cortex_m_fault, /* 5 BusFault */
        mrt_cortex_m_fault, /* 6 UsageFault */
    },
};
