/*
 * startup.c - the application's own start-up for QEMU's RISC-V 'virt' machine with an
 * RV32IMAFC hart (-bios none starts it at 0x80000000 in machine mode): stack, FPU on,
 * .data and .bss, the 16550 UART for output and a semihosting exit. Nothing here comes
 * from minirt.
 */
#include <stdint.h>

#include "../board.h"

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
extern int main(void);

#define UART_THR (*(volatile uint8_t *)0x10000000u)
#define UART_LSR (*(volatile uint8_t *)0x10000005u)
#define UART_LSR_THR_EMPTY 0x20u

void board_puts(const char *s) {
  for (; *s; s++) {
    while (!(UART_LSR & UART_LSR_THR_EMPTY)) {
    }
    UART_THR = (uint8_t)*s;
  }
}

void board_exit(int code) {
  /* Semihosting SYS_EXIT_EXTENDED: the magic uncompressed slli / ebreak / srai. */
  const uint32_t block[2] = {0x20026u, (uint32_t)code};
  register uint32_t a0 __asm__("a0") = 0x20u;
  register const uint32_t *a1 __asm__("a1") = block;
  __asm__ volatile(".option push\n\t.option norvc\n\t.balign 16\n\t"
                   "slli zero, zero, 0x1f\n\tebreak\n\tsrai zero, zero, 7\n\t.option pop"
                   : "+r"(a0) : "r"(a1) : "memory");
  for (;;) {
  }
}

__attribute__((noreturn, used)) void start_c(void) {
  const uint32_t *src = _sidata;
  for (uint32_t *dst = _sdata; dst < _edata; dst++) *dst = *src++;
  for (uint32_t *dst = _sbss; dst < _ebss; dst++) *dst = 0;
  board_exit(main());
}

__attribute__((naked, noreturn, section(".text.start"))) void _start(void) {
  __asm__ volatile("la sp, _estack\n\t"
                   "li t0, 0x2000\n\t" /* mstatus.FS = Initial: the FPU on */
                   "csrs mstatus, t0\n\t"
                   "csrwi fcsr, 0\n\t"
                   "call start_c\n\t"
                   "1: j 1b");
}
