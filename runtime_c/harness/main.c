/*
 * main.c - the verification harness linked into every test image.
 *
 * Loads the module the compiler embedded (mrt_image.h), reads the inputs from the host
 * file minirt_in.bin (raw bytes of every input, concatenated in signature order), runs
 * the module between the two benchmark markers, and writes the outputs to
 * minirt_out.bin the same way.
 *
 * It prints nothing: the exit status says what went wrong (the MRT_HARNESS_EXIT_*
 * codes below) and the host explains it (toolchain/emu/diagnose.py). Messages cost
 * flash on every microcontroller image; an exit code costs an immediate.
 *
 * The emulator's instruction counter uses the addresses of mrt_bench_begin and
 * mrt_bench_end: everything executed from the first to the second is the measurement.
 */
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"
#include "mrt_image.h"
#include "mrt_platform.h"

/* Exit statuses. 1..15: mrt_module_load failed with that mrt_status_t. */
#define MRT_HARNESS_EXIT_OPEN_IN 16   /* cannot open minirt_in.bin */
#define MRT_HARNESS_EXIT_SHORT_IN 17  /* minirt_in.bin ends before the last input */
#define MRT_HARNESS_EXIT_LONG_IN 18   /* minirt_in.bin holds more than the inputs */
#define MRT_HARNESS_EXIT_OPEN_OUT 19  /* cannot create minirt_out.bin */
#define MRT_HARNESS_EXIT_WRITE_OUT 20 /* writing minirt_out.bin failed */
#define MRT_HARNESS_EXIT_RUN 32       /* + status: mrt_module_run failed */

__attribute__((noinline, used)) void mrt_bench_begin(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) void mrt_bench_end(void) {
  __asm__ volatile("" ::: "memory");
}

/* Moves every input (write == 0: from minirt_in.bin) or output (write != 0: to
 * minirt_out.bin) between its buffer and the host file, in signature order. Returns 0
 * or an MRT_HARNESS_EXIT_* code. */
static int mrt_harness_files(const mrt_module_t *module, int write) {
  const uint32_t inputs = module->image->input_count;
  const uint32_t count = write ? module->image->output_count : inputs;
  void *const *buffers = write ? mrt_image_outputs : mrt_image_inputs;
  const int handle = mrt_platform_file_open(write ? "minirt_out.bin" : "minirt_in.bin", write);
  if (handle < 0) return write ? MRT_HARNESS_EXIT_OPEN_OUT : MRT_HARNESS_EXIT_OPEN_IN;
  for (uint32_t i = 0; i < count; i++) {
    /* The image's size for the buffer (its buffers are made for it), not the module's. */
    const uint32_t size = mrt_module_io_size(module, write ? inputs + i : i);
    /* One call per buffer: host files are regular files, which semihosting and Linux
     * transfer in full unless the file ends first. */
    const long done = write ? mrt_platform_file_write(handle, buffers[i], size)
                            : mrt_platform_file_read(handle, buffers[i], size);
    if (done != (long)size) return write ? MRT_HARNESS_EXIT_WRITE_OUT : MRT_HARNESS_EXIT_SHORT_IN;
  }
  /* The input file must hold exactly the inputs. */
  uint8_t extra;
  const long more = write ? 0 : mrt_platform_file_read(handle, &extra, 1);
  mrt_platform_file_close(handle);
  return more != 0 ? MRT_HARNESS_EXIT_LONG_IN : 0;
}

int main(void) {
  mrt_module_t module;
  mrt_status_t status =
      mrt_module_load(mrt_image_module, mrt_image_module_size, &mrt_image, &module);
  if (status != MRT_OK) return status;
  status = mrt_harness_files(&module, 0);
  if (status != 0) return status;
  mrt_bench_begin();
  status = mrt_module_run(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena,
                          mrt_image_arena_size);
  mrt_bench_end();
  if (status != MRT_OK) return MRT_HARNESS_EXIT_RUN + status;
  return mrt_harness_files(&module, 1);
}
