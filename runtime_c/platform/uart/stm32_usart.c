/*
 * stm32_usart.c - the USART of STM32F1/F2/F4 (RM0090, STM32F405/407, section 30.6): SR
 * 0x00 (bit 5 RXNE, bit 7 TXE), DR 0x04, BRR 0x08, CR1 0x0C (bit 13 UE, bit 3 TE, bit 2
 * RE). With 16x oversampling BRR is clock / baud in 1/16 units of the mantissa, which is
 * the rounded quotient itself.
 */
#include "mrt_device.h"

void mrt_uart_init(void) {
  MRT_REG(0x08) = (MRT_UART_CLOCK_HZ + MRT_UART_BAUD / 2) / MRT_UART_BAUD;
  MRT_REG(0x0C) = (1u << 13) | (1u << 3) | (1u << 2);
}

void mrt_uart_put(uint8_t byte) {
  while (!(MRT_REG(0x00) & (1u << 7))) {
  }
  MRT_REG(0x04) = byte;
}

uint8_t mrt_uart_get(void) {
  /* Reading SR then DR also clears an overrun (ORE), which would otherwise stay set. */
  while (!(MRT_REG(0x00) & (1u << 5))) {
  }
  return (uint8_t)MRT_REG(0x04);
}
