/*
 * one_dispatch_image.h - the image contract (mrt_image.h) of a test double with one
 * dispatch reading one 16-byte input and writing one 16-byte output: what toolchain/codegen
 * generates for a real model, written once for image_double.c and
 * tests/emu/data/cycle_loops.c. The module is a 16-byte stand-in that core_double.c
 * accepts. Needs TD_TARGET_ID.
 */
#ifndef ONE_DISPATCH_IMAGE_H
#define ONE_DISPATCH_IMAGE_H

#include "mrt_image.h"

#define TD_ONE_DISPATCH_IMAGE(dispatch, io_t)                                        \
  static const mrt_dispatch_fn_t td_image_dispatches[] = {dispatch};                \
  static const uint32_t td_image_io_sizes[] = {sizeof(io_t), sizeof(io_t)};         \
  const mrt_image_t mrt_image = {                                                   \
      .dispatches = td_image_dispatches,                                            \
      .io_sizes = td_image_io_sizes,                                                \
      .target_id = TD_TARGET_ID,                                                    \
      .module_size = 16,                                                            \
      .command_count = 1,                                                           \
      .input_count = 1,                                                             \
      .output_count = 1,                                                            \
  };                                                                                \
  const uint8_t mrt_image_module[16] = {                                            \
      'T', 'D', 'B', 'L', (uint8_t)TD_TARGET_ID, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0, \
  };                                                                                \
  const uint32_t mrt_image_module_size = sizeof mrt_image_module;                   \
  _Alignas(16) uint8_t mrt_image_arena[64];                                         \
  const uint32_t mrt_image_arena_size = sizeof mrt_image_arena;                     \
  static io_t td_image_input;                                                       \
  static io_t td_image_output;                                                      \
  void *const mrt_image_inputs[] = {&td_image_input};                               \
  void *const mrt_image_outputs[] = {&td_image_output};

#endif /* ONE_DISPATCH_IMAGE_H */
