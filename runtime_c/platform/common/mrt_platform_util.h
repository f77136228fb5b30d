/*
 * mrt_platform_util.h - small helpers shared by the platform layers (private to
 * runtime_c/platform): the fault record.
 *
 * A fault is reported as data, not text: the handler writes a few raw words to the
 * host file minirt_fault.bin and exits with MRT_PLATFORM_FAULT_EXIT_CODE; the host
 * (toolchain/emu/diagnose.py) decodes and prints them. Formatting on the host keeps a
 * hex printer and its strings out of every microcontroller image.
 */
#ifndef MRT_PLATFORM_UTIL_H
#define MRT_PLATFORM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mrt_platform.h"

/* Exit status of an image that took a CPU fault (like a shell's 128 + SIGSEGV). */
#define MRT_PLATFORM_FAULT_EXIT_CODE 139

/* First word of the fault record: which layout the rest follows. */
#define MRT_FAULT_CORTEX_M 1u /* pc, lr, ipsr[, cfsr, hfsr] */
#define MRT_FAULT_RISCV 2u    /* mcause, mepc, mtval */

static inline __attribute__((noreturn)) void mrt_platform_fault(const uint32_t *words,
                                                                uint32_t count) {
  const int handle = mrt_platform_file_open("minirt_fault.bin", 1);
  if (handle >= 0) {
    (void)mrt_platform_file_write(handle, words, count * sizeof(uint32_t));
    mrt_platform_file_close(handle);
  }
  mrt_platform_exit(MRT_PLATFORM_FAULT_EXIT_CODE);
}

#endif /* MRT_PLATFORM_UTIL_H */
