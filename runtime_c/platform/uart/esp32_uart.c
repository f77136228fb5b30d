/*
 * esp32_uart.c - UART0 of the ESP32-C3 and ESP32-C6, both at 0x60000000 (ESP32-C3 TRM,
 * "System and Memory", peripheral address mapping; ESP32-C6 TRM, "System and Memory",
 * HP peripherals). Registers ("UART Controller (UART)" chapter of either TRM):
 * UART_FIFO_REG 0x00 (a read pops RXFIFO_RD_BYTE, a write pushes a byte into the TX
 * FIFO) and UART_STATUS_REG 0x1C: RXFIFO_CNT from bit 0, TXFIFO_CNT from bit 16. The C3
 * makes each count 10 bits wide, the C6 8 bits; a FIFO holds 128 bytes on both, so the
 * low 8 bits are the whole count on either chip.
 *
 * The ROM has set UART0 up for its boot messages, 115200 8N1 on the pins the DevKits'
 * USB-UART bridge is wired to, from whatever clock it runs the chip on. The driver keeps
 * that line setting rather than reprogramming the divisor from a clock it would have to
 * assume (the image changes no clock: docs/esp32.md), so the board's baud must be the ROM's.
 */
#include "mrt_device.h"

#if MRT_UART_BAUD != 115200u
#error "esp32_uart keeps the ROM loader's UART0 setting, which is 115200 baud"
#endif

#define MRT_ESP_FIFO_BYTES 128u
#define MRT_ESP_RX_COUNT() (MRT_REG(0x1C) & 0xFFu)
#define MRT_ESP_TX_COUNT() ((MRT_REG(0x1C) >> 16) & 0xFFu)

void mrt_uart_init(void) {
  /* Let the ROM's last boot message leave, so that the host sees it whole and then
   * only frames; then drop what arrived before the image was listening. */
  while (MRT_ESP_TX_COUNT() != 0u) {
  }
  while (MRT_ESP_RX_COUNT() != 0u) (void)MRT_REG(0x00);
}

void mrt_uart_put(uint8_t byte) {
  while (MRT_ESP_TX_COUNT() >= MRT_ESP_FIFO_BYTES) {
  }
  MRT_REG(0x00) = byte;
}

uint8_t mrt_uart_get(void) {
  while (MRT_ESP_RX_COUNT() == 0u) {
  }
  return (uint8_t)MRT_REG(0x00);
}
