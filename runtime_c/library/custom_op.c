/*
 * custom_op.c - the default failure hook of operators of the user's own
 * (mrt_custom_op.h): a firmware that links the model as a library reads
 * mrt_custom_op_failure after mrt_module_run. Weak, so that the firmware may replace
 * it. Only libraries hold it (runtime_c/library): it is the one runtime variable, and a
 * user's firmware zeroes .bss as C requires, which minirt's own bare-metal start-ups do
 * not (tests/module/test_runtime_sections.py); minirt's verification images take the
 * harness's hook instead (harness/custom_op_exit.c), which ends the run with a status
 * naming the operator. A model without custom operators never references it:
 * --gc-sections drops it.
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
