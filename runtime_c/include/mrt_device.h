/*
 * mrt_device.h - what the device harness (runtime_c/harness/device) needs besides the
 * runtime: a UART driver (runtime_c/platform/uart/<kind>.c, one per UART kind) and the
 * cycle counter of the core (runtime_c/platform/cortex_m, riscv).
 *
 * The build (toolchain/link/device.py) compiles the driver the board's `uart:` block names
 * and defines, from that block:
 *   MRT_UART_BASE      the peripheral's base address
 *   MRT_UART_BAUD      the line rate, 8N1
 *   MRT_UART_CLOCK_HZ  the peripheral's input clock, the divisor's numerator
 *   MRT_UART_SETUP     optional: {address, clear, set} register updates done before the
 *                      driver's own init (clock gates, pin multiplexing), in order
 */
#ifndef MRT_DEVICE_H
#define MRT_DEVICE_H

#include <stdint.h>

#include "minirt.h"

/* Makes the UART ready: 8 data bits, no parity, one stop bit, MRT_UART_BAUD. */
void mrt_uart_init(void);
/* Sends one byte (waits while the transmitter is full). */
void mrt_uart_put(uint8_t byte);
/* Receives one byte (waits for it). */
uint8_t mrt_uart_get(void);

#ifndef MRT_MAX_CYCLES
/* The core's cycle counter (minirt.h declares them for an image with a cycle budget). */
void mrt_platform_cycles_start(uint64_t *mark);
uint64_t mrt_platform_cycles_since(uint64_t *mark);
#endif

/* Register access for the drivers. */
#define MRT_REG(offset) (*(volatile uint32_t *)(MRT_UART_BASE + (offset)))

#endif /* MRT_DEVICE_H */
