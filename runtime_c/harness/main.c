/*
 * main.c - the verification harness linked into every test image.
 *
 * Loads the module the compiler embedded (mrt_image.h), reads the inputs from the host
 * file minirt_in.bin (raw bytes of every input, concatenated in signature order), runs
 * the module between the two benchmark markers, and writes the outputs to
 * minirt_out.bin the same way. On error it prints one line and exits with the status:
 * an mrt_status_t, or MRT_HARNESS_ERR_IO for a host-file problem.
 *
 * The emulator's instruction counter uses the addresses of mrt_bench_begin and
 * mrt_bench_end: everything executed from the first to the second is the measurement.
 *
 * Written for flash size (the whole seed image is under 2 KB on Cortex-M4): buffer
 * sizes come straight from the signature (mrt_module_io_size), one loop moves data
 * both ways, and the message is assembled from a few shared pieces without bounds
 * checks, since every piece is a constant of known length.
 */
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"
#include "mrt_image.h"
#include "mrt_platform.h"

/* Exit status for a missing, short or long input file or a failed output write. */
#define MRT_HARNESS_ERR_IO 16

/* Every text the harness prints, NUL-separated and addressed by index (an immediate
 * at each call, where a string pointer would cost a literal-pool word): the messages,
 * then the name of MRT_HARNESS_ERR_IO. The host file names are the tails of the two
 * "cannot open" messages (MRT_HARNESS_IN_PATH / MRT_HARNESS_OUT_PATH). Other statuses
 * print as numbers: see mrt_status_t in minirt.h. */
static const char mrt_harness_texts[] =
    "load\0"                               /* 0 */
    "run\0"                                /* 1 */
    "cannot open minirt_in.bin\0"          /* 2 */
    "cannot open minirt_out.bin\0"         /* 3 */
    "minirt_in.bin too short at input \0"  /* 4 */
    "minirt_in.bin too long\0"             /* 5 */
    "cannot write output \0"               /* 6 */
    " (host file)";                        /* 7 */
enum {
  MRT_HARNESS_MSG_LOAD,
  MRT_HARNESS_MSG_RUN,
  MRT_HARNESS_MSG_OPEN_IN,
  MRT_HARNESS_MSG_OPEN_OUT,
  MRT_HARNESS_MSG_SHORT_IN,
  MRT_HARNESS_MSG_LONG_IN,
  MRT_HARNESS_MSG_WRITE_OUT,
  MRT_HARNESS_NAME_IO,
};
#define MRT_HARNESS_IN_PATH (mrt_harness_text(MRT_HARNESS_MSG_OPEN_IN) + 12)
#define MRT_HARNESS_OUT_PATH (mrt_harness_text(MRT_HARNESS_MSG_OPEN_OUT) + 12)

__attribute__((noinline, used)) void mrt_bench_begin(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) void mrt_bench_end(void) {
  __asm__ volatile("" ::: "memory");
}

static const char *mrt_harness_text(uint32_t index) {
  const char *text = mrt_harness_texts;
  while (index--) {
    while (*text++ != '\0') {
    }
  }
  return text;
}

static char *mrt_harness_put(char *p, const char *text) {
  while (*text != '\0') *p++ = *text++;
  return p;
}

static char *mrt_harness_put_u32(char *p, uint32_t value) {
  if (value >= 10u) p = mrt_harness_put_u32(p, value / 10u);
  *p++ = (char)('0' + value % 10u);
  return p;
}

/* Prints "minirt: <message>[<index>]: status N" (+ " (host file)" for
 * MRT_HARNESS_ERR_IO) and returns status; index < 0: none. The longest line is well
 * under the buffer. */
__attribute__((noinline)) static int mrt_harness_fail(uint32_t message, int32_t index,
                                                      int status) {
  char line[80];
  char *p = mrt_harness_put(mrt_harness_put(line, "minirt: "), mrt_harness_text(message));
  if (index >= 0) p = mrt_harness_put_u32(p, (uint32_t)index);
  p = mrt_harness_put_u32(mrt_harness_put(p, ": status "), (uint32_t)status);
  if (status == MRT_HARNESS_ERR_IO) p = mrt_harness_put(p, mrt_harness_text(MRT_HARNESS_NAME_IO));
  *p++ = '\n';
  (void)mrt_platform_console_write(line, (size_t)(p - line));
  return status;
}

/* Moves every input (write == 0: from minirt_in.bin) or output (write != 0: to
 * minirt_out.bin) between its buffer and the host file, in signature order. Returns
 * MRT_OK or the status mrt_harness_fail reported. */
static int mrt_harness_files(const mrt_module_t *module, int write) {
  const uint32_t count = write ? module->output_count : module->input_count;
  void *const *buffers = write ? mrt_image_outputs : mrt_image_inputs;
  int handle = mrt_platform_file_open(write ? MRT_HARNESS_OUT_PATH : MRT_HARNESS_IN_PATH, write);
  if (handle < 0) {
    return mrt_harness_fail(MRT_HARNESS_MSG_OPEN_IN + (uint32_t)write, -1, MRT_HARNESS_ERR_IO);
  }
  for (uint32_t i = 0; i < count; i++) {
    const uint32_t size = mrt_module_io_size(module, write ? module->input_count + i : i);
    /* One call per buffer: host files are regular files, which semihosting and Linux
     * transfer in full unless the file ends first. */
    const long done = write ? mrt_platform_file_write(handle, buffers[i], size)
                            : mrt_platform_file_read(handle, buffers[i], size);
    if (done != (long)size) {
      return mrt_harness_fail(write ? MRT_HARNESS_MSG_WRITE_OUT : MRT_HARNESS_MSG_SHORT_IN,
                              (int32_t)i, MRT_HARNESS_ERR_IO);
    }
  }
  /* The input file must hold exactly the inputs. */
  uint8_t extra;
  long more = write ? 0 : mrt_platform_file_read(handle, &extra, 1);
  mrt_platform_file_close(handle);
  if (more != 0) return mrt_harness_fail(MRT_HARNESS_MSG_LONG_IN, -1, MRT_HARNESS_ERR_IO);
  return MRT_OK;
}

int main(void) {
  mrt_module_t module;
  mrt_status_t status =
      mrt_module_load(mrt_image_module, mrt_image_module_size, mrt_image_target_id, &module);
  if (status != MRT_OK) return mrt_harness_fail(MRT_HARNESS_MSG_LOAD, -1, status);
  status = mrt_harness_files(&module, 0);
  if (status != MRT_OK) return status;
  mrt_bench_begin();
  status = mrt_module_run(&module, mrt_image_dispatches, mrt_image_dispatch_count,
                          mrt_image_inputs, mrt_image_outputs, mrt_image_arena,
                          mrt_image_arena_size);
  mrt_bench_end();
  if (status != MRT_OK) return mrt_harness_fail(MRT_HARNESS_MSG_RUN, -1, status);
  return mrt_harness_files(&module, 1);
}
