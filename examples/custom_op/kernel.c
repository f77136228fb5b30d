/*
 * kernel.c - the C kernel of the example's custom operator SoftsignGain
 * (docs/custom-ops.md): y = gain * x / (1 + |x|), element by element, float32.
 *
 * Built by minirt-build with the runtime's flags: freestanding, no libc (so no fabsf:
 * the absolute value is a comparison). The options are the gain, 4 bytes of a
 * little-endian float32, as make_model.py wrote them.
 */
#include <stdint.h>

#include "mrt_custom_op.h"

int32_t softsign_gain(const mrt_custom_tensor_t *inputs, uint32_t input_count,
                      const mrt_custom_tensor_t *outputs, uint32_t output_count,
                      const uint8_t *options, uint32_t options_size) {
  if (input_count != 1 || output_count != 1 || options_size != 4) return 1;
  const mrt_custom_tensor_t *in = &inputs[0], *out = &outputs[0];
  if (in->type != MRT_CUSTOM_F32 || out->type != MRT_CUSTOM_F32 || in->count != out->count)
    return 2;
  float gain;
  /* The options need not be aligned: copy the bytes rather than cast the pointer. */
  uint8_t *g = (uint8_t *)&gain;
  for (int i = 0; i < 4; i++) g[i] = options[i];
  const float *x = (const float *)in->data;
  float *y = (float *)out->data;
  for (uint32_t i = 0; i < in->count; i++) {
    const float a = x[i] < 0.0f ? -x[i] : x[i];
    y[i] = gain * x[i] / (1.0f + a);
  }
  return 0;
}
