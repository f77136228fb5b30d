/*
 * harness.h - what the verification harness's two mains (main.c: one inference;
 * stream.c: inference after inference on one state) share: their exit statuses and the
 * benchmark markers the emulator counts between.
 */
#ifndef MRT_HARNESS_H
#define MRT_HARNESS_H

/* Exit statuses. 1..15: the module did not load, with that mrt_status_t; 32 + status:
 * the run failed with that mrt_status_t (an image built with a cycle budget: 41, the
 * inference stopped over its budget, MRT_ERR_BUDGET). */
#define MRT_HARNESS_EXIT_OPEN_IN 16   /* cannot open the input file */
#define MRT_HARNESS_EXIT_SHORT_IN 17  /* the input file ends before the last input */
#define MRT_HARNESS_EXIT_LONG_IN 18   /* the input file holds more than the inputs */
#define MRT_HARNESS_EXIT_OPEN_OUT 19  /* cannot create the output file */
#define MRT_HARNESS_EXIT_WRITE_OUT 20 /* writing the output file failed */
#define MRT_HARNESS_EXIT_FEEDBACK 21  /* stream.c: mrt.fb is not a valid feedback table */
#define MRT_HARNESS_EXIT_RUN_BASE 32
/* 64 + k: the kernel of custom operator k (its ordinal, 0..63) returned non-zero
 * (custom_op_exit.c; EXIT_CUSTOM_BASE in toolchain/graph/custom_ops.py). */
#define MRT_HARNESS_EXIT_CUSTOM_BASE 64

/* Everything executed from the first call to the second is the measurement. */
void mrt_bench_begin(void);
void mrt_bench_end(void);

#endif /* MRT_HARNESS_H */
