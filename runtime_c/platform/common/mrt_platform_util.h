/*
 * mrt_platform_util.h - small helpers shared by the platform layers (private to
 * runtime_c/platform): the fault record.
 *
 * A fault is reported as data, not text: the handler writes a few raw words to the
 * host file MRT_PLATFORM_FAULT_FILE and exits with MRT_PLATFORM_FAULT_EXIT_CODE; the
 * host (toolchain/emu/diagnose.py) decodes and prints them. Formatting on the host keeps
 * a hex printer and its strings out of every microcontroller image.
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

/* Writes the record (count words) to the fault file and exits with
 * MRT_PLATFORM_FAULT_EXIT_CODE. */
static inline __attribute__((noreturn)) void mrt_platform_fault(uint32_t *words,
                                                                 uint32_t count) {
  void *const buffer = words;
  const uint32_t size = count * sizeof(uint32_t);
  (void)mrt_platform_files(MRT_PLATFORM_FAULT_FILE, 1, &buffer, &size, 1);
  mrt_platform_exit(MRT_PLATFORM_FAULT_EXIT_CODE);
}

#endif /* MRT_PLATFORM_UTIL_H */
