/*
 * mrt_linux.c - mrt_platform.h for a static Linux process without libc: the `_start`
 * entry point and raw system calls (x86-64 `syscall`, aarch64 `svc 0`).
 */
#include <stddef.h>
#include <stdint.h>

#include "mrt_platform.h"

#if defined(__x86_64__)
enum {
  MRT_LINUX_SYS_READ = 0,
  MRT_LINUX_SYS_WRITE = 1,
  MRT_LINUX_SYS_EXIT_GROUP = 231,
  MRT_LINUX_SYS_OPENAT = 257,
};
#elif defined(__aarch64__)
enum {
  MRT_LINUX_SYS_READ = 63,
  MRT_LINUX_SYS_WRITE = 64,
  MRT_LINUX_SYS_EXIT_GROUP = 94,
  MRT_LINUX_SYS_OPENAT = 56,
};
#else
#error "linux platform: unsupported architecture"
#endif

/* Flags shared by x86-64 and the generic (aarch64) ABI. */
enum {
  MRT_LINUX_AT_FDCWD = -100,
  MRT_LINUX_O_RDONLY = 0,
  MRT_LINUX_O_WRONLY_CREAT_TRUNC = 01 | 0100 | 01000,
  MRT_LINUX_MODE_0644 = 0644,
};

static long mrt_linux_syscall4(long nr, long a, long b, long c, long d) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
#else
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
#endif
}

#include "../common/mrt_platform_files.h"

static long mrt_platform_open(const char *path, int write) {
  return mrt_linux_syscall4(MRT_LINUX_SYS_OPENAT, MRT_LINUX_AT_FDCWD, (long)path,
                            write ? MRT_LINUX_O_WRONLY_CREAT_TRUNC : MRT_LINUX_O_RDONLY,
                            MRT_LINUX_MODE_0644);
}

static long mrt_platform_transfer(int write, long handle, void *data, size_t size) {
  return mrt_linux_syscall4(write ? MRT_LINUX_SYS_WRITE : MRT_LINUX_SYS_READ, handle,
                            (long)data, (long)size, 0);
}

__attribute__((noreturn)) void mrt_platform_exit(int code) {
  for (;;) {
    (void)mrt_linux_syscall4(MRT_LINUX_SYS_EXIT_GROUP, code, 0, 0, 0);
  }
}

#ifdef MRT_MAX_CYCLES
#if !defined(__x86_64__)
#error "MRT_MAX_CYCLES: the linux platform counts cycles on x86-64 only (rdtsc)"
#endif
#include "../common/mrt_platform_cycles.h"

/* The cycle budget's counter: the time-stamp counter, readable in user mode. */
static uint64_t mrt_platform_counter(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t)hi << 32 | lo;
}
#endif

extern int main(void);

/* Called from _start with the initial stack pointer (argc, argv, envp: unused). */
__attribute__((noreturn, used)) void mrt_linux_start(void *initial_sp) {
  (void)initial_sp;
  mrt_platform_exit(main());
}

/* The kernel enters here with the stack 16-byte aligned and no frame to return to. */
__attribute__((naked, noreturn)) void _start(void) {
#if defined(__x86_64__)
  __asm__ volatile("xor %ebp, %ebp\n\t"
                   "mov %rsp, %rdi\n\t"
                   "and $-16, %rsp\n\t"
                   "call mrt_linux_start\n\t"
                   "ud2");
#else
  __asm__ volatile("mov x29, #0\n\t"
                   "mov x30, #0\n\t"
                   "mov x0, sp\n\t"
                   "bl mrt_linux_start\n\t"
                   "brk #1");
#endif
}
