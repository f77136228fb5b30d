/*
 * sam_sercom.c - a SERCOM in USART mode on SAM D5x/E5x (SAM D5x/E5x datasheet DS60001507,
 * chapter 34): CTRLA 0x00, CTRLB 0x04, BAUD 0x0C (16 bits), INTFLAG 0x18 (8 bits: bit 0
 * DRE, bit 2 RXC), SYNCBUSY 0x1C, DATA 0x28. TX on PAD[0] and RX on PAD[1] unless
 * MRT_SERCOM_TXPO / _RXPO say otherwise; the core clock and the pin functions are the
 * board's setup writes. Arithmetic baud with 16x oversampling: BAUD = 65536 * (1 - 16 * baud / clock).
 */
#include "mrt_device.h"

#ifndef MRT_SERCOM_RXPO
#define MRT_SERCOM_RXPO 1u /* RX on PAD[1] */
#endif
#ifndef MRT_SERCOM_TXPO
#define MRT_SERCOM_TXPO 0u /* TX on PAD[0] */
#endif
#define MRT_SERCOM_BAUD \
  ((uint32_t)(65536u - ((uint64_t)65536u * 16u * MRT_UART_BAUD + MRT_UART_CLOCK_HZ / 2) / \
                           MRT_UART_CLOCK_HZ))

void mrt_uart_init(void) {
  /* MODE = 1 (USART, internal clock), LSB first (DORD), the pads. */
  const uint32_t ctrla = (1u << 2) | (MRT_SERCOM_RXPO << 20) | (MRT_SERCOM_TXPO << 16) |
                         (1u << 30);
  MRT_REG(0x00) = ctrla;
  MRT_REG(0x04) = (1u << 16) | (1u << 17); /* TXEN, RXEN; 8 data bits */
  while (MRT_REG(0x1C) & (1u << 2)) {     /* SYNCBUSY.CTRLB */
  }
  *(volatile uint16_t *)(MRT_UART_BASE + 0x0C) = (uint16_t)MRT_SERCOM_BAUD;
  MRT_REG(0x00) = ctrla | (1u << 1); /* ENABLE */
  while (MRT_REG(0x1C) & (1u << 1)) { /* SYNCBUSY.ENABLE */
  }
}

void mrt_uart_put(uint8_t byte) {
  while (!(*(volatile uint8_t *)(MRT_UART_BASE + 0x18) & 1u)) {
  }
  MRT_REG(0x28) = byte;
}

uint8_t mrt_uart_get(void) {
  while (!(*(volatile uint8_t *)(MRT_UART_BASE + 0x18) & 4u)) {
  }
  return (uint8_t)MRT_REG(0x28);
}
