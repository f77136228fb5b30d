/*
 * stm32_usart_v2.c - the USART of STM32F0/F3/F7/L4/G4/H7 (RM0385, STM32F75xxx, section
 * 34.8; RM0432, STM32L4+, section 50.8): CR1 0x00 (bit 0 UE, bit 2 RE, bit 3 TE), CR3 0x08
 * (bit 12 OVRDIS), BRR 0x0C, ISR 0x1C (bit 5 RXNE, bit 7 TXE), RDR 0x24, TDR 0x28. With
 * 16x oversampling BRR = clock / baud; the LPUART (stm32_lpuart.c) scales it by 256.
 */
#include "mrt_device.h"

#ifndef MRT_UART_BRR
#define MRT_UART_BRR ((MRT_UART_CLOCK_HZ + MRT_UART_BAUD / 2) / MRT_UART_BAUD)
#endif

void mrt_uart_init(void) {
  MRT_REG(0x0C) = MRT_UART_BRR;
  /* Overrun detection off: a byte lost while the core computes is the host's to notice
   * (a bad CRC), not a receiver stuck until ORE is cleared. */
  MRT_REG(0x08) = 1u << 12;
  MRT_REG(0x00) = (1u << 0) | (1u << 2) | (1u << 3);
}

void mrt_uart_put(uint8_t byte) {
  while (!(MRT_REG(0x1C) & (1u << 7))) {
  }
  MRT_REG(0x28) = byte;
}

uint8_t mrt_uart_get(void) {
  while (!(MRT_REG(0x1C) & (1u << 5))) {
  }
  return (uint8_t)MRT_REG(0x24);
}
