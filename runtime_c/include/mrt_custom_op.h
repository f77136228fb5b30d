/*
 * mrt_custom_op.h - the C ABI of an operator of your own (docs/custom-ops.md).
 *
 * minirt-build --custom-op CODE=kernel.c:my_op,reference.py:my_op compiles kernel.c with
 * the runtime's flags (freestanding: no libc, only this header, <stdint.h> and the
 * compiler's own headers) and calls my_op once per inference where the model runs
 * operator CODE:
 *
 *   int32_t my_op(const mrt_custom_tensor_t *inputs, uint32_t input_count,
 *                 const mrt_custom_tensor_t *outputs, uint32_t output_count,
 *                 const uint8_t *options, uint32_t options_size);
 *
 * Every tensor is dense, row-major, in the element type the model declares; an output's
 * buffer never overlaps an input's. `options` are the operator's own bytes (a TFLite
 * custom operator's custom_options: a flexbuffer, usually), kept in flash; NULL when
 * there are none. Return 0; anything else stops the inference: the verification image
 * exits with MRT_HARNESS_EXIT_CUSTOM_BASE + the operator's ordinal, which minirt-run
 * reports naming the operator. The tensor descriptors live on the caller's stack for
 * the call only.
 */
#ifndef MRT_CUSTOM_OP_H
#define MRT_CUSTOM_OP_H

#include <stdint.h>

/* Element types (the table TYPE_CODES in toolchain/graph/custom_ops.py). */
#define MRT_CUSTOM_F32 1
#define MRT_CUSTOM_I8 2
#define MRT_CUSTOM_U8 3
#define MRT_CUSTOM_I16 4
#define MRT_CUSTOM_I32 5
#define MRT_CUSTOM_F16 6
#define MRT_CUSTOM_U16 7
#define MRT_CUSTOM_U32 8
#define MRT_CUSTOM_I64 9
#define MRT_CUSTOM_F64 10
#define MRT_CUSTOM_BOOL 11

typedef struct {
  void *data;            /* the elements (const for an input: never write them) */
  const int32_t *dims;   /* `rank` dimensions, outermost first */
  uint32_t rank;
  uint32_t type;         /* MRT_CUSTOM_* */
  uint32_t count;        /* elements: the product of the dims */
  float scale;           /* quantized: real = scale * (stored - zero_point); 0 if not */
  int32_t zero_point;
} mrt_custom_tensor_t;

typedef int32_t (*mrt_custom_kernel_fn_t)(const mrt_custom_tensor_t *inputs,
                                          uint32_t input_count,
                                          const mrt_custom_tensor_t *outputs,
                                          uint32_t output_count, const uint8_t *options,
                                          uint32_t options_size);

/* Called by the generated code when the kernel of custom operator `ordinal` returns
 * `status` != 0. The verification harness's ends the run (runtime_c/harness); the
 * default (a weak symbol, for a firmware that links the model as a library) records it
 * in mrt_custom_op_failure, which the firmware may read after mrt_module_run. */
void mrt_custom_op_failed(uint32_t ordinal, int32_t status);

typedef struct {
  uint32_t failed;   /* non-zero once a kernel has failed */
  uint32_t ordinal;  /* the first failure's operator */
  int32_t status;    /* and what it returned */
} mrt_custom_op_failure_t;
extern mrt_custom_op_failure_t mrt_custom_op_failure;

#endif /* MRT_CUSTOM_OP_H */
