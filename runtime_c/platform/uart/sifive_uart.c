/*
 * sifive_uart.c - the SiFive UART of the FE310 (FE310-G000 manual, chapter 18): txdata
 * 0x00 (bit 31 full), rxdata 0x04 (bit 31 empty, else the byte), txctrl 0x08 (bit 0
 * txen), rxctrl 0x0C (bit 0 rxen), div 0x18 = clock / baud - 1. Eight-entry FIFOs.
 */
#include "mrt_device.h"

void mrt_uart_init(void) {
  MRT_REG(0x18) = (MRT_UART_CLOCK_HZ + MRT_UART_BAUD / 2) / MRT_UART_BAUD - 1u;
  MRT_REG(0x08) = 1u;
  MRT_REG(0x0C) = 1u;
}

void mrt_uart_put(uint8_t byte) {
  while ((int32_t)MRT_REG(0x00) < 0) {
  }
  MRT_REG(0x00) = byte;
}

uint8_t mrt_uart_get(void) {
  int32_t data;
  do {
    data = (int32_t)MRT_REG(0x04); /* one read: a read pops the FIFO */
  } while (data < 0);
  return (uint8_t)data;
}
