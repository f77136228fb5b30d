/*
 * custom_op_exit.c - the verification harness's answer to a custom operator's kernel
 * that failed (mrt_custom_op.h): the run ends at once with
 * MRT_HARNESS_EXIT_CUSTOM_BASE + the operator's ordinal, which the host turns into the
 * operator's name (toolchain/pipeline.py). Outputs computed past a failed kernel would
 * be wrong, so none are written.
 */
#include "harness.h"
#include "mrt_custom_op.h"
#include "mrt_platform.h"

void mrt_custom_op_failed(uint32_t ordinal, int32_t status) {
  (void)status; /* an exit status has room for the operator, not for its status too */
  mrt_platform_exit(MRT_HARNESS_EXIT_CUSTOM_BASE + (int)ordinal);
}
