/*
 * bench_main.c - the timing main of a native benchmark program (minirt-bench).
 *
 * Linked with runtime_c's core and the board's Linux platform part (its `_start` calls
 * main) instead of the verification harness. It loads the module the compiler embedded,
 * reads the benchmark's file (below), runs the inference `warmup` times untimed and then
 * `repeat` samples of `batch` inferences each, timing each sample with
 * clock_gettime: CLOCK_MONOTONIC (wall time) and CLOCK_PROCESS_CPUTIME_ID (the CPU
 * time of this process, which a loaded machine's other jobs do not inflate by
 * preempting it), and writes every sample's nanoseconds and then the outputs of the
 * last inference to the result file. The host computes median and
 * minimum (toolchain/bench/native.py).
 *
 * clock_gettime is a raw system call (there is no libc, hence no vDSO): it costs some
 * 50-200 ns, which the host keeps below 1% of a sample by choosing `batch`.
 *
 * minirt_bench_in.bin: u32 repeat, u32 batch, u32 warmup, u32 0, then the raw bytes of
 *                      every input in signature order (as the harness reads them).
 * minirt_bench_out.bin: repeat x (u64 wall ns, u64 CPU ns), then every output's raw
 *                       bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"
#include "mrt_image.h"

#if defined(__x86_64__)
enum { SYS_READ = 0, SYS_WRITE = 1, SYS_CLOSE = 3, SYS_CLOCK_GETTIME = 228, SYS_OPENAT = 257 };
#elif defined(__aarch64__)
enum { SYS_READ = 63, SYS_WRITE = 64, SYS_CLOSE = 57, SYS_CLOCK_GETTIME = 113, SYS_OPENAT = 56 };
#else
#error "minirt-bench: a Linux x86-64 or aarch64 board only"
#endif

enum {
  AT_FDCWD = -100,
  O_RDONLY = 0,
  O_WRONLY_CREAT_TRUNC = 01 | 0100 | 01000,
  CLOCK_MONOTONIC = 1,
  CLOCK_PROCESS_CPUTIME_ID = 2,
  CHUNK = 512, /* samples buffered between two writes (written outside the timing) */
};

/* Exit statuses (1..15: the module did not load, with that mrt_status_t). */
enum {
  EXIT_OPEN_IN = 16,
  EXIT_SHORT_IN = 17,
  EXIT_OPEN_OUT = 19,
  EXIT_WRITE_OUT = 20,
  EXIT_RUN = 32, /* + mrt_status_t of mrt_module_run */
};

static long bench_syscall4(long nr, long a, long b, long c, long d) {
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

struct bench_timespec {
  long sec;
  long nsec;
};

static uint64_t bench_now_ns(long clock) {
  struct bench_timespec t;
  bench_syscall4(SYS_CLOCK_GETTIME, clock, (long)&t, 0, 0);
  return (uint64_t)t.sec * 1000000000u + (uint64_t)t.nsec;
}

/* Reads or writes exactly `size` bytes (Linux may transfer less per call). */
static int bench_transfer(long fd, int write, void *data, uint64_t size) {
  uint8_t *p = (uint8_t *)data;
  while (size > 0) {
    const long n = bench_syscall4(write ? SYS_WRITE : SYS_READ, fd, (long)p, (long)size, 0);
    if (n <= 0) return -1;
    p += n;
    size -= (uint64_t)n;
  }
  return 0;
}

static uint64_t samples[2 * CHUNK]; /* wall, CPU per sample */

int main(void) {
  mrt_module_t module;
  mrt_status_t status =
      mrt_module_load(mrt_image_module, mrt_image_module_size, &mrt_image, &module);
  if (status != MRT_OK) return (int)status;
  const uint32_t inputs = mrt_image.input_count, outputs = mrt_image.output_count;

  const long in = bench_syscall4(SYS_OPENAT, AT_FDCWD, (long)"minirt_bench_in.bin", O_RDONLY, 0);
  if (in < 0) return EXIT_OPEN_IN;
  uint32_t head[4];
  if (bench_transfer(in, 0, head, sizeof head) != 0) return EXIT_SHORT_IN;
  for (uint32_t i = 0; i < inputs; i++)
    if (bench_transfer(in, 0, mrt_image_inputs[i], mrt_module_io_size(&module, i)) != 0)
      return EXIT_SHORT_IN;
  bench_syscall4(SYS_CLOSE, in, 0, 0, 0);
  const uint32_t repeat = head[0], batch = head[1], warmup = head[2];

  const long out = bench_syscall4(SYS_OPENAT, AT_FDCWD, (long)"minirt_bench_out.bin",
                                  O_WRONLY_CREAT_TRUNC, 0644);
  if (out < 0) return EXIT_OPEN_OUT;
  for (uint32_t i = 0; i < warmup; i++) {
    status = mrt_module_run(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena,
                            mrt_image_arena_size);
    if (status != MRT_OK) return EXIT_RUN + (int)status;
  }
  uint32_t held = 0;
  for (uint32_t r = 0; r < repeat; r++) {
    const uint64_t start = bench_now_ns(CLOCK_MONOTONIC);
    const uint64_t cpu_start = bench_now_ns(CLOCK_PROCESS_CPUTIME_ID);
    for (uint32_t b = 0; b < batch && status == MRT_OK; b++)
      status = mrt_module_run(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena,
                              mrt_image_arena_size);
    const uint64_t cpu_end = bench_now_ns(CLOCK_PROCESS_CPUTIME_ID);
    samples[2 * held] = bench_now_ns(CLOCK_MONOTONIC) - start;
    samples[2 * held + 1] = cpu_end - cpu_start;
    held++;
    if (status != MRT_OK) return EXIT_RUN + (int)status;
    if (held == CHUNK || r + 1 == repeat) {
      if (bench_transfer(out, 1, samples, 2 * held * sizeof samples[0]) != 0) return EXIT_WRITE_OUT;
      held = 0;
    }
  }
  for (uint32_t j = 0; j < outputs; j++)
    if (bench_transfer(out, 1, mrt_image_outputs[j], mrt_module_io_size(&module, inputs + j)) != 0)
      return EXIT_WRITE_OUT;
  bench_syscall4(SYS_CLOSE, out, 0, 0, 0);
  return 0;
}
