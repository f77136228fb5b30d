/*
 * mrt_cortex_m.c - start-up for Arm Cortex-M (Armv6-M, Armv7-M, Armv8-M): the vector
 * table, the reset handler (FPU enable, .data copy, .bss zero, main, exit) and fault
 * handlers that report through the platform console and exit with
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

static const char *const mrt_cortex_m_exception_names[16] = {
    "thread",     "reset",    "NMI",      "HardFault", "MemManage", "BusFault",
    "UsageFault", "SecureFault", "exception 8", "exception 9", "exception 10", "SVCall",
    "DebugMonitor", "exception 13", "PendSV", "SysTick",
};

/* frame: the exception stack frame (r0-r3, r12, lr, pc, xpsr); ipsr: exception number. */
__attribute__((noreturn, used)) void mrt_cortex_m_report_fault(const uint32_t *frame,
                                                               uint32_t ipsr) {
  char line[160];
  size_t n = 0;
  uint32_t number = ipsr & 0x1FFu;
  mrt_platform_append(line, sizeof line, &n, "minirt: fault: ");
  mrt_platform_append(line, sizeof line, &n,
                      number < 16 ? mrt_cortex_m_exception_names[number] : "interrupt");
  mrt_platform_append(line, sizeof line, &n, " pc=");
  mrt_platform_append_hex32(line, sizeof line, &n, frame[6]);
  mrt_platform_append(line, sizeof line, &n, " lr=");
  mrt_platform_append_hex32(line, sizeof line, &n, frame[5]);
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
  /* Configurable / HardFault status registers (absent on Armv6-M and v8-M Baseline). */
  mrt_platform_append(line, sizeof line, &n, " cfsr=");
  mrt_platform_append_hex32(line, sizeof line, &n, *(volatile const uint32_t *)0xE000ED28u);
  mrt_platform_append(line, sizeof line, &n, " hfsr=");
  mrt_platform_append_hex32(line, sizeof line, &n, *(volatile const uint32_t *)0xE000ED2Cu);
#endif
  mrt_platform_append(line, sizeof line, &n, "\n");
  (void)mrt_platform_console_write(line, n);
  mrt_platform_exit(MRT_PLATFORM_FAULT_EXIT_CODE);
}

/* Every exception but reset lands here; none is expected in a verification run. */
__attribute__((naked, noreturn)) void mrt_cortex_m_fault(void) {
  __asm__ volatile("mrs r0, msp\n\t"
                   "mrs r1, ipsr\n\t"
                   "bl mrt_cortex_m_report_fault\n\t"
                   "udf #0");
}

/* The table the core reads at reset: initial SP, then the 15 system exception handlers.
 * No external interrupt is enabled, so no IRQ vectors are needed. */
typedef struct mrt_cortex_m_vectors {
  uint32_t *initial_sp;
  void (*handlers[15])(void);
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
        mrt_cortex_m_fault, /* 7 SecureFault (v8-M) */
        NULL, NULL, NULL,   /* 8-10 reserved */
        mrt_cortex_m_fault, /* 11 SVCall */
        mrt_cortex_m_fault, /* 12 DebugMonitor */
        NULL,               /* 13 reserved */
        mrt_cortex_m_fault, /* 14 PendSV */
        mrt_cortex_m_fault, /* 15 SysTick */
    },
};
