/*
 * cmsdk_uart.c - Arm CMSDK APB UART (Cortex-M System Design Kit TRM, DDI 0479, "APB UART"),
 * the UARTs of the MPS2 FPGA images QEMU models (mps2-an385/an386/an500). Registers:
 * DATA 0x00, STATE 0x04 (bit 0 TX full, bit 1 RX full), CTRL 0x08 (bit 0 TX enable, bit 1
 * RX enable), BAUDDIV 0x10 = clock / baud (16 at least). No FIFO: one byte each way.
 */
#include "mrt_device.h"

void mrt_uart_init(void) {
  MRT_REG(0x10) = (MRT_UART_CLOCK_HZ + MRT_UART_BAUD / 2) / MRT_UART_BAUD;
  MRT_REG(0x08) = 3u;
}

void mrt_uart_put(uint8_t byte) {
  while (MRT_REG(0x04) & 1u) {
  }
  MRT_REG(0x00) = byte;
}

uint8_t mrt_uart_get(void) {
  while (!(MRT_REG(0x04) & 2u)) {
  }
  return (uint8_t)MRT_REG(0x00);
}
