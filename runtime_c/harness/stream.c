/*
 * stream.c - the harness of an image built with MRT_STREAM: inference after inference
 * on one state (a model's resource variables, docs/commands.md "Stream mode"), in one
 * run of the emulator.
 *
 * The state region (mrt_image_state, which the state's input and output slots of the
 * module point into) starts with its boot values. Step k reads its inputs from the host
 * file mrt.in for k = 0 and mrt.<k>.in after (k in four digits), runs the module and
 * writes its outputs to mrt.out / mrt.<k>.out, until the next step's input file does
 * not open. Before step k, an (empty) file mrt.<k>.rst resets the state to its reset
 * values (TFLite Micro's MicroInterpreter::Reset); mrt.fb, when there, is a table of
 * (output, input) index pairs: from step 1 on, each output of the previous step is
 * copied over its input (feedback of explicit state, ONNX style). So a plain run (mrt.in
 * alone) is one inference, exactly as main.c's.
 *
 * Exit statuses as main.c's (harness.h), the file ones for the step that failed.
 */
#ifdef MRT_STREAM
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"
#include "mrt_image.h"
#include "mrt_platform.h"
#include "harness.h"

extern uint8_t mrt_image_state[];
extern const uint8_t mrt_image_state_initial[], mrt_image_state_reset[];
extern const uint32_t mrt_image_state_size, mrt_image_state_count;

/* mrt.fb: the pair count, then up to MRT_STREAM_MAX_FEEDBACK (output, input) pairs,
 * always this many words (toolchain/emu/stream.py writes it). */
#define MRT_STREAM_MAX_FEEDBACK 16u
#define MRT_STREAM_FEEDBACK_WORDS (1u + 2u * MRT_STREAM_MAX_FEEDBACK)

/* Steps in one run: the platforms' file primitives never close a file (one inference
 * opens two), so a run stays well inside the host's open-file limit
 * (toolchain/emu/stream.py MAX_STEPS). */
#define MRT_STREAM_MAX_STEPS 256u

/* "mrt.in" / "mrt.out" for step 0, else "mrt.NNNN.in" / ".out" / ".rst". */
static const char *step_file(char *name, uint32_t step, const char *suffix) {
  char *p = name;
  *p++ = 'm', *p++ = 'r', *p++ = 't', *p++ = '.';
  if (step) {
    for (int i = 3; i >= 0; --i, step /= 10) p[i] = (char)('0' + step % 10);
    p += 4;
    *p++ = '.';
  }
  while ((*p++ = *suffix++)) {
  }
  return name;
}

int main(void) {
  const mrt_image_t *const image = &mrt_image;
  mrt_module_t module;
  mrt_status_t status =
      mrt_module_validate(mrt_image_module, image->module_size, image, &module);
  if (status != MRT_OK) return status;
  const uint32_t n_in = image->input_count - mrt_image_state_count;
  const uint32_t n_out = image->output_count - mrt_image_state_count;
  const uint32_t *const out_sizes = image->io_sizes + image->input_count;
  uint32_t feedback[MRT_STREAM_FEEDBACK_WORDS] = {0};
  void *fb_buffer = feedback;
  const uint32_t fb_size = sizeof feedback;
  if (mrt_platform_files("mrt.fb", 0, &fb_buffer, &fb_size, 1) == MRT_PLATFORM_FILES_OK) {
    if (feedback[0] > MRT_STREAM_MAX_FEEDBACK) return MRT_HARNESS_EXIT_FEEDBACK;
    for (uint32_t i = 0; i < feedback[0]; ++i) {
      const uint32_t out = feedback[1 + 2 * i], in = feedback[2 + 2 * i];
      if (out >= n_out || in >= n_in || out_sizes[out] != image->io_sizes[in])
        return MRT_HARNESS_EXIT_FEEDBACK;
    }
  } else {
    feedback[0] = 0;
  }
  __builtin_memcpy(mrt_image_state, mrt_image_state_initial, mrt_image_state_size);
  char name[16];
  for (uint32_t step = 0; step < MRT_STREAM_MAX_STEPS; ++step) {
    if (step && mrt_platform_files(step_file(name, step, "rst"), 0, NULL, NULL, 0) ==
                    MRT_PLATFORM_FILES_OK)
      __builtin_memcpy(mrt_image_state, mrt_image_state_reset, mrt_image_state_size);
    status = mrt_platform_files(step_file(name, step, "in"), 0, mrt_image_inputs,
                                image->io_sizes, n_in);
    if (status == MRT_PLATFORM_FILES_OPEN && step) return 0; /* the stream's end */
    if (status != MRT_PLATFORM_FILES_OK) return MRT_HARNESS_EXIT_OPEN_IN - 1 + status;
    if (step)
      for (uint32_t i = 0; i < feedback[0]; ++i)
        __builtin_memcpy(mrt_image_inputs[feedback[2 + 2 * i]], mrt_image_outputs[feedback[1 + 2 * i]],
               out_sizes[feedback[1 + 2 * i]]);
    mrt_bench_begin();
#ifdef MRT_MAX_CYCLES
    status = mrt_module_execute(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena);
    mrt_bench_end();
    if (status != MRT_OK) return MRT_HARNESS_EXIT_RUN_BASE + status;
#else
    mrt_module_execute(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena);
    mrt_bench_end();
#endif
    status = mrt_platform_files(step_file(name, step, "out"), 1, mrt_image_outputs, out_sizes,
                                n_out);
    if (status != MRT_PLATFORM_FILES_OK) return MRT_HARNESS_EXIT_OPEN_OUT - 1 + status;
  }
  return 0;
}
#endif
