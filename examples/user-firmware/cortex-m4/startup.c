/*
 * startup.c - the application's own start-up for the Arm MPS2 AN386 board (Cortex-M4F,
 * as QEMU's mps2-an386 emulates it): vector table, reset handler, UART0 output and a
 * semihosting exit. Nothing here comes from minirt: the model arrives only through
 * libminirt_sensor_net.a.
 */
#include <stdint.h>

#include "../board.h"

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _estack[];
extern int main(void);

/* CMSDK APB UART0 of the MPS2 boards. */
#define UART0_DATA (*(volatile uint32_t *)0x40004000u)
#define UART0_STATE (*(volatile uint32_t *)0x40004004u)
#define UART0_CTRL (*(volatile uint32_t *)0x40004008u)
#define UART0_BAUDDIV (*(volatile uint32_t *)0x40004010u)
#define UART_STATE_TX_FULL 1u
#define UART_CTRL_TX_ENABLE 1u

/* Cortex-M coprocessor access control: CP10 and CP11 (the FPU). */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void board_puts(const char *s) {
  for (; *s; s++) {
    while (UART0_STATE & UART_STATE_TX_FULL) {
    }
    UART0_DATA = (uint8_t)*s;
  }
}

void board_exit(int code) {
  /* Semihosting SYS_EXIT_EXTENDED {ADP_Stopped_ApplicationExit, code}: QEMU exits with
   * `code`. On a real board without a debugger this would be a reset or a sleep. */
  const uint32_t block[2] = {0x20026u, (uint32_t)code};
  register uint32_t r0 __asm__("r0") = 0x20u;
  register const uint32_t *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  for (;;) {
  }
}

/* C start: .data from flash, .bss zeroed, the UART on, then main. Kept out of line so
 * that no floating-point instruction runs before reset_handler enables the FPU. */
__attribute__((noreturn, noinline)) static void start_c(void) {
  const uint32_t *src = _sidata;
  for (uint32_t *dst = _sdata; dst < _edata; dst++) *dst = *src++;
  for (uint32_t *dst = _sbss; dst < _ebss; dst++) *dst = 0;
  UART0_BAUDDIV = 16u;
  UART0_CTRL = UART_CTRL_TX_ENABLE;
  board_exit(main());
}

__attribute__((noreturn)) void reset_handler(void) {
  SCB_CPACR |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
  start_c();
}

__attribute__((noreturn)) static void fault_handler(void) { board_exit(99); }

/* Initial stack pointer, reset, NMI, HardFault, MemManage, BusFault, UsageFault. */
__attribute__((section(".isr_vector"), used)) static void *const vectors[7] = {
    _estack,       (void *)reset_handler, (void *)fault_handler, (void *)fault_handler,
    (void *)fault_handler, (void *)fault_handler, (void *)fault_handler,
};
