/*
 * nrf_uart.c - the nRF52840's UART0 without EasyDMA (nRF52840 Product Specification v1.7,
 * section 6.33 "UART", at UARTE0's address): byte by byte through RXD 0x518 / TXD 0x51C,
 * with a six-byte receive FIFO, where UARTE's DMA would need a buffer per transfer and
 * loses bytes between two. TASKS_STARTRX 0x000, TASKS_STARTTX 0x008, EVENTS_RXDRDY 0x108,
 * EVENTS_TXDRDY 0x11C, ENABLE 0x500 (4: UART), BAUDRATE 0x524, CONFIG 0x56C (0: 8N1, no
 * flow control). The pins (PSEL.TXD 0x50C, PSEL.RXD 0x514) are the board's setup writes.
 */
#include "mrt_device.h"

/* BAUDRATE is baud * 2^32 / 16 MHz rounded to a multiple of 0x1000 (the table in the
 * specification: 115200 -> 0x01D7E000). */
#define MRT_NRF_BAUDRATE \
  ((uint32_t)((((uint64_t)MRT_UART_BAUD << 32) / MRT_UART_CLOCK_HZ + 0x800u) & ~0xFFFull))

void mrt_uart_init(void) {
  MRT_REG(0x524) = MRT_NRF_BAUDRATE;
  MRT_REG(0x56C) = 0u;
  MRT_REG(0x500) = 4u;
  MRT_REG(0x108) = 0u;
  MRT_REG(0x000) = 1u;
  MRT_REG(0x008) = 1u;
}

void mrt_uart_put(uint8_t byte) {
  MRT_REG(0x11C) = 0u;
  MRT_REG(0x51C) = byte;
  while (!MRT_REG(0x11C)) {
  }
}

uint8_t mrt_uart_get(void) {
  while (!MRT_REG(0x108)) {
  }
  MRT_REG(0x108) = 0u; /* cleared before the read: the next byte sets it again */
  return (uint8_t)MRT_REG(0x518);
}
