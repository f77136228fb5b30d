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
 */
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"
#include "mrt_image.h"
#include "mrt_platform.h"

/* Exit status for a missing, short or long input file or a failed output write. */
#define MRT_HARNESS_ERR_IO 16

static const char mrt_harness_in_path[] = "minirt_in.bin";
static const char mrt_harness_out_path[] = "minirt_out.bin";

__attribute__((noinline, used)) void mrt_bench_begin(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) void mrt_bench_end(void) {
  __asm__ volatile("" ::: "memory");
}

static void mrt_harness_append(char *buf, size_t cap, size_t *pos, const char *text) {
  while (*text != '\0' && *pos < cap) {
    buf[(*pos)++] = *text++;
  }
}

static void mrt_harness_append_u32(char *buf, size_t cap, size_t *pos, uint32_t value) {
  char digits[10];
  size_t count = 0;
  do {
    digits[count++] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0u);
  while (count > 0 && *pos < cap) {
    buf[(*pos)++] = digits[--count];
  }
}

static const char *const mrt_harness_status_names[] = {
    "ok",      "argument", "truncated", "magic",    "version",
    "target",  "crc",      "malformed", "dispatch",
};

/* Prints "minirt: <what> <detail>: status N (name)" and returns status. */
static int mrt_harness_fail(const char *what, const char *detail, uint32_t index, int status) {
  char line[160];
  size_t n = 0;
  mrt_harness_append(line, sizeof line, &n, "minirt: ");
  mrt_harness_append(line, sizeof line, &n, what);
  if (detail != NULL) {
    mrt_harness_append(line, sizeof line, &n, " ");
    mrt_harness_append(line, sizeof line, &n, detail);
    mrt_harness_append_u32(line, sizeof line, &n, index);
  }
  mrt_harness_append(line, sizeof line, &n, ": status ");
  mrt_harness_append_u32(line, sizeof line, &n, (uint32_t)status);
  size_t names = sizeof mrt_harness_status_names / sizeof mrt_harness_status_names[0];
  const char *name = (uint32_t)status < names           ? mrt_harness_status_names[status]
                     : status == MRT_HARNESS_ERR_IO ? "host file"
                                                    : "unknown";
  mrt_harness_append(line, sizeof line, &n, " (");
  mrt_harness_append(line, sizeof line, &n, name);
  mrt_harness_append(line, sizeof line, &n, ")\n");
  (void)mrt_platform_console_write(line, n);
  return status;
}

/* Reads exactly size bytes; returns 0 on success. */
static int mrt_harness_read_all(int handle, uint8_t *data, uint32_t size) {
  uint32_t done = 0;
  while (done < size) {
    long got = mrt_platform_file_read(handle, data + done, size - done);
    if (got <= 0) {
      return -1;
    }
    done += (uint32_t)got;
  }
  return 0;
}

static int mrt_harness_write_all(int handle, const uint8_t *data, uint32_t size) {
  uint32_t done = 0;
  while (done < size) {
    long put = mrt_platform_file_write(handle, data + done, size - done);
    if (put <= 0) {
      return -1;
    }
    done += (uint32_t)put;
  }
  return 0;
}

static int mrt_harness_read_inputs(const mrt_module_t *module) {
  int handle = mrt_platform_file_open(mrt_harness_in_path, 0);
  if (handle < 0) {
    return mrt_harness_fail("cannot open minirt_in.bin", NULL, 0, MRT_HARNESS_ERR_IO);
  }
  for (uint32_t i = 0; i < module->input_count; i++) {
    mrt_tensor_info_t info;
    mrt_status_t status = mrt_module_io_info(module, 0, i, &info);
    if (status != MRT_OK) {
      mrt_platform_file_close(handle);
      return mrt_harness_fail("mrt_module_io_info", "input ", i, status);
    }
    if (mrt_harness_read_all(handle, mrt_image_inputs[i], info.byte_size) != 0) {
      mrt_platform_file_close(handle);
      return mrt_harness_fail("minirt_in.bin too short at", "input ", i, MRT_HARNESS_ERR_IO);
    }
  }
  uint8_t extra;
  long more = mrt_platform_file_read(handle, &extra, 1);
  mrt_platform_file_close(handle);
  if (more != 0) {
    return mrt_harness_fail("minirt_in.bin longer than the inputs", NULL, 0, MRT_HARNESS_ERR_IO);
  }
  return MRT_OK;
}

static int mrt_harness_write_outputs(const mrt_module_t *module) {
  int handle = mrt_platform_file_open(mrt_harness_out_path, 1);
  if (handle < 0) {
    return mrt_harness_fail("cannot create minirt_out.bin", NULL, 0, MRT_HARNESS_ERR_IO);
  }
  for (uint32_t i = 0; i < module->output_count; i++) {
    mrt_tensor_info_t info;
    mrt_status_t status = mrt_module_io_info(module, 1, i, &info);
    if (status != MRT_OK) {
      mrt_platform_file_close(handle);
      return mrt_harness_fail("mrt_module_io_info", "output ", i, status);
    }
    if (mrt_harness_write_all(handle, mrt_image_outputs[i], info.byte_size) != 0) {
      mrt_platform_file_close(handle);
      return mrt_harness_fail("cannot write minirt_out.bin at", "output ", i, MRT_HARNESS_ERR_IO);
    }
  }
  mrt_platform_file_close(handle);
  return MRT_OK;
}

int main(void) {
  mrt_module_t module;
  mrt_status_t status =
      mrt_module_load(mrt_image_module, mrt_image_module_size, mrt_image_target_id, &module);
  if (status != MRT_OK) {
    return mrt_harness_fail("mrt_module_load", NULL, 0, status);
  }
  int io = mrt_harness_read_inputs(&module);
  if (io != MRT_OK) {
    return io;
  }
  mrt_bench_begin();
  status = mrt_module_run(&module, mrt_image_dispatches, mrt_image_dispatch_count,
                          mrt_image_inputs, mrt_image_outputs, mrt_image_arena,
                          mrt_image_arena_size);
  mrt_bench_end();
  if (status != MRT_OK) {
    return mrt_harness_fail("mrt_module_run", NULL, 0, status);
  }
  return mrt_harness_write_outputs(&module);
}
