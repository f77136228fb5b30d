/*
 * mrt_platform.h - what each platform (Linux, Cortex-M, RISC-V bare metal) gives the
 * verification harness: host files and exit. On Linux these are raw system calls; on
 * bare metal, Arm / RISC-V semihosting calls to the emulator or debugger.
 */
#ifndef MRT_PLATFORM_H
#define MRT_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* The host files the harness and the fault handlers use, in the emulator's working
 * directory (toolchain/emu/run.py writes the first and reads the others back). Short,
 * because every microcontroller image carries them. */
#define MRT_PLATFORM_INPUT_FILE "mrt.in"
#define MRT_PLATFORM_OUTPUT_FILE "mrt.out"
#define MRT_PLATFORM_FAULT_FILE "mrt.fault"

/* What mrt_platform_files returns. */
enum {
  MRT_PLATFORM_FILES_OK = 0,
  MRT_PLATFORM_FILES_OPEN = 1,  /* the file does not open */
  MRT_PLATFORM_FILES_SHORT = 2, /* a transfer came up short or failed */
  MRT_PLATFORM_FILES_LONG = 3,  /* reading: the file holds more than the buffers */
};

/* Moves `count` buffers, in order, between memory and the host file `path` (binary):
 * reads them from it (write == 0), which must then hold nothing more, or writes them to
 * it (write == 1; created or truncated). One transfer per buffer: host files are regular
 * files, which semihosting and Linux transfer in full unless the file ends first. The
 * file is left open: the program exits right after, and the host closes its files then
 * (a close call in every image would cost flash for nothing). Returns an
 * MRT_PLATFORM_FILES_* code. */
int mrt_platform_files(const char *path, int write, void *const *buffers,
                       const uint32_t *sizes, uint32_t count);

/* Ends the program with `code` as the emulator's / process's exit status. */
__attribute__((noreturn)) void mrt_platform_exit(int code);

#endif /* MRT_PLATFORM_H */
