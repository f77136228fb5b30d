/* failing.c - a SoftsignGain kernel that refuses to run (tests/e2e/test_custom_op.py):
 * its non-zero status must stop the run, reported naming the operator. */
#include <stdint.h>

#include "mrt_custom_op.h"

int32_t softsign_gain(const mrt_custom_tensor_t *inputs, uint32_t input_count,
                      const mrt_custom_tensor_t *outputs, uint32_t output_count,
                      const uint8_t *options, uint32_t options_size) {
  (void)inputs, (void)input_count, (void)outputs, (void)output_count, (void)options;
  return (int32_t)options_size; /* 4: the example's options, so never 0 */
}
