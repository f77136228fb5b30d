/*
 * main.c - the verification harness linked into every test image.
 *
 * Checks the module the compiler embedded (mrt_image.h) against the image, reads the
 * inputs from the host file MRT_PLATFORM_INPUT_FILE (raw bytes of every input,
 * concatenated in signature order), runs the module between the two benchmark markers,
 * and writes the outputs to MRT_PLATFORM_OUTPUT_FILE the same way.
 *
 * It prints nothing: the exit status says what went wrong (the MRT_HARNESS_EXIT_*
 * codes below) and the host explains it (toolchain/emu/diagnose.py). Messages cost
 * flash on every microcontroller image; an exit code costs an immediate.
 *
 * It calls mrt_module_validate and mrt_module_execute, the module checks and the
 * command walk of mrt_module_load and mrt_module_run without their argument checks:
 * its arguments are the image's own module and buffers, which the compiler emits
 * non-null, aligned and of the sizes the image says.
 *
 * An image built with MRT_STREAM (a model with state, or minirt-run --stream) runs
 * stream.c's main instead: its first step is this one, file for file.
 *
 * The emulator's instruction counter uses the addresses of mrt_bench_begin and
 * mrt_bench_end: everything executed from the first to the second is the measurement.
 */
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"
#include "mrt_image.h"
#include "mrt_platform.h"
#include "harness.h"

__attribute__((noinline, used)) void mrt_bench_begin(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) void mrt_bench_end(void) {
  __asm__ volatile("" ::: "memory");
}

#ifndef MRT_STREAM /* stream.c: inference after inference on one state */
int main(void) {
  /* The image's own sizes (its buffers are made for them), not the module's. */
  const mrt_image_t *const image = &mrt_image;
  mrt_module_t module;
  mrt_status_t status =
      mrt_module_validate(mrt_image_module, image->module_size, image, &module);
  if (status != MRT_OK) return status;
  /* MRT_PLATFORM_FILES_* codes 1..3 map to the input exit codes 16..18, and 1..2 to
   * the output ones 19..20. */
  status = mrt_platform_files(MRT_PLATFORM_INPUT_FILE, 0, mrt_image_inputs, image->io_sizes,
                              image->input_count);
  if (status != MRT_PLATFORM_FILES_OK) return MRT_HARNESS_EXIT_OPEN_IN - 1 + status;
  mrt_bench_begin();
#ifdef MRT_MAX_CYCLES
  status = mrt_module_execute(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena);
  mrt_bench_end();
  /* Outputs of a stopped inference are incomplete: none are written. */
  if (status != MRT_OK) return MRT_HARNESS_EXIT_RUN_BASE + status;
#else
  mrt_module_execute(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena);
  mrt_bench_end();
#endif
  status = mrt_platform_files(MRT_PLATFORM_OUTPUT_FILE, 1, mrt_image_outputs,
                              image->io_sizes + image->input_count, image->output_count);
  return status != MRT_PLATFORM_FILES_OK ? MRT_HARNESS_EXIT_OPEN_OUT - 1 + status : 0;
}
#endif
