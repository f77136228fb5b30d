/*
 * core_double.c - a stand-in for runtime_c/core in link / emulator tests: the minirt.h
 * API over a toy module format, plus memcpy / memset. Not the real runtime.
 *
 * Toy module: "TDBL", u32 target id, u32 input bytes, u32 output bytes; one input, one
 * output, one command that calls dispatch 0 with bindings {input, output, arena}.
 */
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"

static uint32_t td_word(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

mrt_status_t mrt_module_validate(const void *data, uint32_t size, const mrt_image_t *image,
                                 mrt_module_t *out_module) {
  const uint8_t *p = data;
  if (size < 16) {
    return MRT_ERR_TRUNCATED;
  }
  if (p[0] != 'T' || p[1] != 'D' || p[2] != 'B' || p[3] != 'L') {
    return MRT_ERR_MAGIC;
  }
  if (td_word(p + 4) != image->target_id) {
    return MRT_ERR_TARGET;
  }
  out_module->base = p;
  out_module->image = image;
  return MRT_OK;
}

mrt_status_t mrt_module_load(const void *data, uint32_t size, const mrt_image_t *image,
                             mrt_module_t *out_module) {
  if (data == NULL || image == NULL || out_module == NULL) {
    return MRT_ERR_ARGUMENT;
  }
  return mrt_module_validate(data, size, image, out_module);
}

static const uint32_t td_dims[1] = {16};

mrt_status_t mrt_module_io_info(const mrt_module_t *module, int is_output, uint32_t index,
                                mrt_tensor_info_t *out_info) {
  if (module == NULL || out_info == NULL || index != 0) {
    return MRT_ERR_ARGUMENT;
  }
  out_info->name = is_output ? "out" : "in";
  out_info->dtype = MRT_DTYPE_U8;
  out_info->rank = 1;
  out_info->dims = td_dims;
  out_info->byte_size = td_word(module->base + (is_output ? 12 : 8));
  return MRT_OK;
}

void mrt_module_execute(const mrt_module_t *module, void *const *inputs, void *const *outputs,
                        void *arena) {
  void *bindings[3] = {inputs[0], outputs[0], arena};
  module->image->dispatches[0](bindings);
}

mrt_status_t mrt_module_run(const mrt_module_t *module, void *const *inputs,
                            void *const *outputs, void *arena, uint32_t arena_size) {
  (void)arena_size;
  if (module == NULL || module->image == NULL) {
    return MRT_ERR_ARGUMENT;
  }
  mrt_module_execute(module, inputs, outputs, arena);
  return MRT_OK;
}

void *memcpy(void *dst, const void *src, size_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  while (n--) {
    *d++ = *s++;
  }
  return dst;
}

void *memset(void *dst, int value, size_t n) {
  uint8_t *d = dst;
  while (n--) {
    *d++ = (uint8_t)value;
  }
  return dst;
}
