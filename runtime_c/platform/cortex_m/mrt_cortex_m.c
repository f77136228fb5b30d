/*
 * mrt_cortex_m.c - start-up for Arm Cortex-M (Armv6-M, Armv7-M, Armv8-M): the vector
 * table, the reset handler (FPU enable, main, exit) and a fault handler that records the
 * fault for the host and exits with MRT_PLATFORM_FAULT_EXIT_CODE instead of locking up.
 *
 * There is no .data to copy and no .bss to zero: runtime_c defines no variables (a test
 * checks its objects), and the image's arena and I/O buffers, the only .bss, are each
 * written before they are read (inputs by the harness, every other buffer by the
 * dispatch that produces it). Code that adds initialized or zero-relied-on variables
 * must add the copy / zero loops back.
 *
 * Symbol from the generated linker script (cortex-m-rt names): _stack_start, the
 * initial stack pointer (top of RAM).
 */
#include <stddef.h>
#include <stdint.h>

#include "../common/mrt_platform_util.h"
#include "mrt_platform.h"

extern uint32_t _stack_start[];
extern int main(void);

void mrt_cortex_m_fault(void);

/* With an FPU, grants full access to CP10/CP11 in CPACR before any C code that the
 * compiler may give floating-point instructions (main's callees) runs. */
__attribute__((noreturn, used)) void mrt_cortex_m_reset(void) {
#if defined(__ARM_FP)
  *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  mrt_platform_exit(main());
}

/* Every exception that reaches the vector table lands here; none is expected in a
 * verification run. Builds the fault record on the stack (MRT_FAULT_CORTEX_M, then pc
 * and lr from the exception frame, ipsr and, where the core has them, the configurable
 * and HardFault status registers CFSR and HFSR; mrt_platform_util.h), then calls
 * mrt_platform_files(MRT_PLATFORM_FAULT_FILE, 1, &record, &size, 1) with the three
 * words {1, size, &record} pushed for its last argument and its two arrays, and exits.
 * Thumb-1 assembly: the same source for every Cortex-M. */
__attribute__((naked, noreturn)) void mrt_cortex_m_fault(void) {
  __asm__ volatile(
      "mrs r0, msp\n\t"
      "ldr r1, [r0, #24]\n\t"
      "ldr r2, [r0, #20]\n\t"
      "mrs r3, ipsr\n\t"
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
      "ldr r4, =0xE000ED28\n\t"
      "ldm r4, {r4, r5}\n\t"
      "movs r0, #1\n\t"
      "push {r0-r5}\n\t"
      "movs r1, #24\n\t"
#else
      "movs r0, #1\n\t"
      "push {r0-r3}\n\t"
      "movs r1, #16\n\t"
#endif
      "mov r2, sp\n\t"
      "movs r0, #1\n\t"
      "push {r0, r1, r2}\n\t"
      "adr r0, 1f\n\t"
      "movs r1, #1\n\t"
      "add r2, sp, #8\n\t"
      "add r3, sp, #4\n\t"
      "bl mrt_platform_files\n\t"
      "movs r0, #139\n\t" /* MRT_PLATFORM_FAULT_EXIT_CODE */
      "bl mrt_platform_exit\n\t"
      ".p2align 2\n"
      "1: .asciz \"" MRT_PLATFORM_FAULT_FILE "\"\n\t"
      ".p2align 1\n\t"
      ".ltorg");
}

#define MRT_SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define MRT_SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define MRT_SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define MRT_SYST_MAX 0xFFFFFFu

#ifdef MRT_DEVICE
/* The device harness's clock (and the cycle budget's, in a device image): inferences
 * there may run far past SysTick's 2^24 cycles (0.1 s at 168 MHz). DWT CYCCNT where the
 * core has one that counts (Armv7-M and up; QEMU maps the DWT as an unimplemented device
 * that reads 0, so the enable does not read back), else SysTick with its wraps counted
 * by its interrupt (vector 15, in the table below). */
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
#define MRT_DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define MRT_DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#define MRT_DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)
#define MRT_DWT_LAR (*(volatile uint32_t *)0xE0001FB0u)
#define MRT_DWT_COUNTS() (MRT_DWT_CTRL & 1u)
#else
#define MRT_DWT_COUNTS() 0
#endif

static volatile uint32_t mrt_cortex_m_wraps; /* set before SysTick starts: .bss is not zeroed */

void mrt_cortex_m_systick(void) { ++mrt_cortex_m_wraps; }

/* Cycles since SysTick started: wraps and the current value read consistently. */
static uint64_t mrt_cortex_m_systick_now(void) {
  uint32_t wraps, value;
  do {
    wraps = mrt_cortex_m_wraps;
    value = MRT_SYST_CVR;
  } while (wraps != mrt_cortex_m_wraps);
  return ((uint64_t)wraps << 24) + (MRT_SYST_MAX - value);
}

void mrt_platform_cycles_start(uint64_t *mark) {
#ifdef MRT_DWT_LAR
  MRT_DEMCR |= 1u << 24;     /* TRCENA: the DWT's clock */
  MRT_DWT_LAR = 0xC5ACCE55u; /* Cortex-M7 locks the DWT until this key is written */
  MRT_DWT_CTRL |= 1u;        /* CYCCNTENA */
  if (MRT_DWT_COUNTS()) {
    *mark = MRT_DWT_CYCCNT;
    return;
  }
#endif
  /* Started once, then free-running: the harness and a cycle budget's walk both take
   * marks on it. Started without its interrupt, which is enabled once the counter has
   * reloaded: the load from a cleared counter is not a wrap (QEMU raises it as one). */
  if ((MRT_SYST_CSR & 3u) != 3u) {
    MRT_SYST_CSR = 0;
    MRT_SYST_RVR = MRT_SYST_MAX;
    MRT_SYST_CVR = 0; /* any write clears it; it reloads at the next clock */
    MRT_SYST_CSR = 5; /* ENABLE | CLKSOURCE = processor clock */
    while (MRT_SYST_CVR == 0) {
    }
    mrt_cortex_m_wraps = 0;
    MRT_SYST_CSR = 7; /* and TICKINT */
  }
  *mark = mrt_cortex_m_systick_now();
}

uint64_t mrt_platform_cycles_since(uint64_t *mark) {
#ifdef MRT_DWT_LAR
  if (MRT_DWT_COUNTS()) { /* 32 bits: 20 s at 216 MHz between two reads */
    const uint32_t now = MRT_DWT_CYCCNT;
    const uint32_t elapsed = now - (uint32_t)*mark;
    *mark = now;
    return elapsed;
  }
#endif
  const uint64_t now = mrt_cortex_m_systick_now();
  const uint64_t elapsed = now - *mark;
  *mark = now;
  return elapsed;
}
#elif defined(MRT_MAX_CYCLES)
/* The cycle budget's counter: SysTick, which every M-profile core has (DWT CYCCNT is
 * missing from Armv6-M and from QEMU), free-running from its 24-bit reload at the
 * processor clock, with its interrupt off (the vector table has no entry for it). It
 * counts down, so the cycles since a mark are mark - now modulo 2^24. */
void mrt_platform_cycles_start(uint64_t *mark) {
  MRT_SYST_RVR = MRT_SYST_MAX;
  MRT_SYST_CVR = 0; /* any write reloads it */
  MRT_SYST_CSR = 5; /* ENABLE | CLKSOURCE = processor clock; TICKINT off */
  *mark = MRT_SYST_CVR;
}

uint64_t mrt_platform_cycles_since(uint64_t *mark) {
  const uint32_t now = MRT_SYST_CVR;
  const uint32_t elapsed = ((uint32_t)*mark - now) & MRT_SYST_MAX;
  *mark = now;
  return elapsed;
}
#endif

/* The table the core reads at reset: the initial SP, then reset, NMI and HardFault. The
 * image enables no interrupt and no configurable fault (MemManage, BusFault and
 * UsageFault escalate to HardFault when disabled) and raises no SVCall or PendSV, so no
 * later entry is ever fetched: code that enables one must extend this table. */
typedef struct mrt_cortex_m_vectors {
  uint32_t *initial_sp;
#ifdef MRT_DEVICE
  void (*handlers[15])(void); /* up to SysTick, the device harness's clock */
#else
  void (*handlers[3])(void);
#endif
} mrt_cortex_m_vectors_t;

__attribute__((section(".vector_table"), used))
const mrt_cortex_m_vectors_t mrt_cortex_m_vector_table = {
    _stack_start,
    {
        mrt_cortex_m_reset, /* 1 reset */
        mrt_cortex_m_fault, /* 2 NMI */
        mrt_cortex_m_fault, /* 3 HardFault */
#ifdef MRT_DEVICE
        mrt_cortex_m_fault,   mrt_cortex_m_fault, mrt_cortex_m_fault, /* 4-6 */
        mrt_cortex_m_fault,   mrt_cortex_m_fault, mrt_cortex_m_fault, /* 7-9 reserved */
        mrt_cortex_m_fault,   mrt_cortex_m_fault, mrt_cortex_m_fault, /* 10-12 */
        mrt_cortex_m_fault,   mrt_cortex_m_fault,                     /* 13, 14 PendSV */
        mrt_cortex_m_systick, /* 15 SysTick */
#endif
    },
};
