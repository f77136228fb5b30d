/*
 * stm32_lpuart.c - the low-power UART of STM32L4/L4+ (RM0432, section 51.7): the
 * registers of the USART (stm32_usart_v2.c), with BRR = 256 * clock / baud (it must be at
 * least 0x300, so clock >= 3 * baud).
 */
#define MRT_UART_BRR \
  ((uint32_t)(((uint64_t)MRT_UART_CLOCK_HZ * 256u + MRT_UART_BAUD / 2) / MRT_UART_BAUD))
#include "stm32_usart_v2.c"
