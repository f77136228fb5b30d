/*
 * clip_scale.c - an int8 custom operator for tests/e2e/test_custom_op.py: reads the
 * quantization of its tensors from the ABI's descriptors (mrt_custom_op.h) and
 * requantizes, y = clamp(x_real, -limit, limit) in the output's scale, with the limit
 * an int8 option byte (in units of the input's scale). Float32 arithmetic in the same
 * order as clip_scale.py, rounding half away from zero, so the two agree exactly.
 */
#include <stdint.h>

#include "mrt_custom_op.h"

int32_t clip_scale(const mrt_custom_tensor_t *inputs, uint32_t input_count,
                   const mrt_custom_tensor_t *outputs, uint32_t output_count,
                   const uint8_t *options, uint32_t options_size) {
  if (input_count != 1 || output_count != 1 || options_size != 1) return 1;
  const mrt_custom_tensor_t *in = &inputs[0], *out = &outputs[0];
  if (in->type != MRT_CUSTOM_I8 || out->type != MRT_CUSTOM_I8 || in->scale <= 0.0f ||
      out->scale <= 0.0f || in->rank != out->rank)
    return 2;
  for (uint32_t d = 0; d < in->rank; d++)
    if (in->dims[d] != out->dims[d]) return 3;
  const float limit = (float)options[0] * in->scale;
  const int8_t *x = (const int8_t *)in->data;
  int8_t *y = (int8_t *)out->data;
  for (uint32_t i = 0; i < in->count; i++) {
    float v = (float)(x[i] - in->zero_point) * in->scale;
    v = v < -limit ? -limit : v > limit ? limit : v;
    float q = v / out->scale;
    int32_t r = (int32_t)(q < 0.0f ? q - 0.5f : q + 0.5f) + out->zero_point;
    y[i] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
  }
  return 0;
}
