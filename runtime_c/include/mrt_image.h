/*
 * mrt_image.h - symbols the compiler generates for each firmware image (one object
 * emitted by toolchain/codegen) and that the harness links against.
 */
#ifndef MRT_IMAGE_H
#define MRT_IMAGE_H

#include "minirt.h"

extern const mrt_image_t mrt_image;      /* what the image's code needs from a module */
extern const uint8_t mrt_image_module[]; /* the .mrt bytes, in flash (.rodata) */
extern const uint32_t mrt_image_module_size;
extern uint8_t mrt_image_arena[];          /* RAM (.bss), 16-byte aligned */
extern const uint32_t mrt_image_arena_size;
extern void *const mrt_image_inputs[];     /* one RAM buffer per input, in signature order */
extern void *const mrt_image_outputs[];    /* one RAM buffer per output */

#endif /* MRT_IMAGE_H */
