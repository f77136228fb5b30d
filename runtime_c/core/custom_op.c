/*
 * custom_op.c - the default failure hook of operators of the user's own
 * (mrt_custom_op.h): a firmware that links the model as a library reads
 * mrt_custom_op_failure after mrt_module_run. Weak, so that the verification harness's
 * own (harness/custom_op_exit.c), which ends the run with a status naming the operator,
 * replaces it. A model without custom operators never references it: --gc-sections
 * drops both.
 */
#include "mrt_custom_op.h"

mrt_custom_op_failure_t mrt_custom_op_failure;

__attribute__((weak)) void mrt_custom_op_failed(uint32_t ordinal, int32_t status) {
  if (!mrt_custom_op_failure.failed) {
    mrt_custom_op_failure.failed = 1;
    mrt_custom_op_failure.ordinal = ordinal;
    mrt_custom_op_failure.status = status;
  }
}
