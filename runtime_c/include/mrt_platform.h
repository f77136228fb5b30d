/*
 * mrt_platform.h - what each platform (Linux, Cortex-M, RISC-V bare metal) gives the
 * verification harness: console, host files and exit. On Linux these are raw
 * syscalls; on bare metal they are Arm / RISC-V semihosting calls to the emulator.
 */
#ifndef MRT_PLATFORM_H
#define MRT_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* Writes to the console (stdout); returns bytes written or a negative value. */
long mrt_platform_console_write(const void *data, size_t size);

/* Host files, relative to the emulator's working directory.
 * mode: 0 = read (binary), 1 = write (binary, truncate). Returns a handle >= 0 or -1. */
int mrt_platform_file_open(const char *path, int mode);
/* Returns bytes transferred, or a negative value on error. */
long mrt_platform_file_read(int handle, void *data, size_t size);
long mrt_platform_file_write(int handle, const void *data, size_t size);
void mrt_platform_file_close(int handle);

/* Ends the program with `code` as the emulator's / process's exit status. */
__attribute__((noreturn)) void mrt_platform_exit(int code);

#endif /* MRT_PLATFORM_H */
