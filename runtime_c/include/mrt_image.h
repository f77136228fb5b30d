/*
 * mrt_image.h - symbols the compiler generates for each firmware image (one object
 * emitted by toolchain/codegen) and that the harness links against.
 */
#ifndef MRT_IMAGE_H
#define MRT_IMAGE_H

#include "minirt.h"

extern const mrt_dispatch_fn_t mrt_image_dispatches[]; /* indexed by dispatch ordinal */
extern const uint32_t mrt_image_dispatch_count;
extern const uint8_t mrt_image_module[]; /* the .mrt bytes, in flash (.rodata) */
extern const uint32_t mrt_image_module_size;
extern const uint32_t mrt_image_target_id;
extern uint8_t mrt_image_arena[];          /* RAM (.bss), 16-byte aligned */
extern const uint32_t mrt_image_arena_size;
extern void *const mrt_image_inputs[];     /* one RAM buffer per input, in signature order */
extern void *const mrt_image_outputs[];    /* one RAM buffer per output */

#endif /* MRT_IMAGE_H */
