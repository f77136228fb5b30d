/*
 * ns16550.c - a 16550-compatible UART with byte-wide registers one byte apart, as QEMU's
 * RISC-V virt machine has it (hw/char/serial.c, "NS16550A" in hw/riscv/virt.c): RBR/THR
 * 0x0, IER 0x1, FCR 0x2, LCR 0x3 (bit 7 DLAB: DLL/DLM at 0x0/0x1), MCR 0x4, LSR 0x5 (bit
 * 0 data ready, bit 5 THR empty). Divisor = clock / (16 * baud); 16-byte FIFOs.
 */
#include "mrt_device.h"

#define MRT_NS16550(offset) (*(volatile uint8_t *)(MRT_UART_BASE + (offset)))
#define MRT_NS16550_DIVISOR \
  ((MRT_UART_CLOCK_HZ + 8u * MRT_UART_BAUD) / (16u * MRT_UART_BAUD))

void mrt_uart_init(void) {
  MRT_NS16550(0x1) = 0u;                                /* IER: no interrupts, we poll */
  MRT_NS16550(0x3) = 0x80u;                             /* LCR.DLAB: the divisor latch */
  MRT_NS16550(0x0) = (uint8_t)MRT_NS16550_DIVISOR;
  MRT_NS16550(0x1) = (uint8_t)(MRT_NS16550_DIVISOR >> 8);
  MRT_NS16550(0x3) = 0x03u;                             /* 8N1, DLAB off */
  MRT_NS16550(0x2) = 0x07u;                             /* FIFOs on, both cleared */
  MRT_NS16550(0x4) = 0x03u;                             /* DTR, RTS */
}

void mrt_uart_put(uint8_t byte) {
  while (!(MRT_NS16550(0x5) & 0x20u)) {
  }
  MRT_NS16550(0x0) = byte;
}

uint8_t mrt_uart_get(void) {
  while (!(MRT_NS16550(0x5) & 0x01u)) {
  }
  return MRT_NS16550(0x0);
}
