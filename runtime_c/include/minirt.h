/*
 * minirt.h - the public API of the minirt runtime.
 *
 * The runtime validates a packed module (.mrt, see docs/module-format.md) and runs its
 * command list with buffers the caller owns. It never allocates, never calls libc and
 * keeps no global state: everything lives in the caller's mrt_module_t and arena.
 * Every function that can fail returns an mrt_status_t; 0 means OK.
 */
#ifndef MINIRT_H
#define MINIRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t mrt_status_t;

enum {
  MRT_OK = 0,
  MRT_ERR_ARGUMENT = 1,  /* a null pointer or a buffer the caller passed is too small */
  MRT_ERR_TRUNCATED = 2, /* the module is shorter than its header or a section says */
  MRT_ERR_MAGIC = 3,     /* not a minirt module */
  MRT_ERR_VERSION = 4,   /* a format version this runtime cannot read */
  MRT_ERR_TARGET = 5,    /* built for another target */
  MRT_ERR_CRC = 6,       /* payload does not match the header's CRC32 */
  MRT_ERR_MALFORMED = 7, /* a section, command or binding points outside its space */
  MRT_ERR_IMAGE = 8,     /* the module does not fit the code compiled into this image */
};

/* Module format constants (docs/module-format.md; mirrored in toolchain/module/format.py). */
#define MRT_MODULE_MAGIC 0x5452694Du /* the bytes "MiRT" read as a little-endian u32 */
#define MRT_MODULE_VERSION 1u
#define MRT_MODULE_HEADER_SIZE 48u
#define MRT_MODULE_ALIGN 16u   /* module base, constant pool entries and arena alignment */
#define MRT_MAX_BINDINGS 16u   /* per command: run resolves them into a stack array */

/* Binding kinds: the top 2 bits of a binding's first word; the low 30 bits are a byte
 * offset (arena, constant pool) or an index (inputs, outputs). */
enum {
  MRT_BINDING_ARENA = 0,
  MRT_BINDING_CONSTANT = 1,
  MRT_BINDING_INPUT = 2,
  MRT_BINDING_OUTPUT = 3,
};

/* Target ids: a module loads only on the target whose dispatch table it indexes. */
enum {
  MRT_TARGET_X86_64 = 1,
  MRT_TARGET_AARCH64 = 2,
  MRT_TARGET_RISCV32 = 3,       /* rv32imafc */
  MRT_TARGET_RISCV32_NOFPU = 4, /* rv32imac */
  MRT_TARGET_CORTEX_M0PLUS = 5,
  MRT_TARGET_CORTEX_M3 = 6,
  MRT_TARGET_CORTEX_M4 = 7,
  MRT_TARGET_CORTEX_M7 = 8,
  MRT_TARGET_CORTEX_M33 = 9,
  MRT_TARGET_CORTEX_M55 = 10,
};

/* One dispatch: a generated function that reads and writes the buffers its command
 * binds, in the order the command lists them. */
typedef void (*mrt_dispatch_fn_t)(void *const *bindings);

/* What the code compiled into an image needs from any module it runs. The compiler
 * writes it into the image, outside the module, and mrt_module_load rejects a module
 * that disagrees with it (MRT_ERR_IMAGE): a module can then be replaced (a weights
 * update) only by one that fits the code, and no size or count the module declares is
 * trusted on its own word. */
typedef struct mrt_image {
  const mrt_dispatch_fn_t *dispatches; /* indexed by dispatch ordinal */
  /* Per command, in order: its head word as the module stores it (dispatch ordinal |
   * binding count n << 16), then n words, each the binding's kind << 30 | the exact
   * byte size the dispatch accesses through it. The compiler binds what a dispatch
   * stores to only the arena or an output, so matching kinds keeps stores out of
   * constants (flash) and inputs (the caller's). */
  const uint32_t *commands;
  const uint32_t *io_sizes; /* bytes of each input, then each output, as the code uses them */
  uint32_t target_id;       /* MRT_TARGET_* the module header must carry */
  uint32_t layout_crc;      /* CRC-32 of the module's bytes [16, pool_offset): all but the pool */
  uint32_t command_count;
  uint16_t input_count;     /* these two, read as one u32, are the header's I/O counts word */
  uint16_t output_count;
} mrt_image_t;

/* Arena and constant bindings start at multiples of this: every element the code loads
 * is then naturally aligned (up to 8 bytes), which Cortex-M0+ and FPU loads require. */
#define MRT_BINDING_ALIGN 8u

/* Element types, shared by the I/O signature and the constant pool. */
enum {
  MRT_DTYPE_F32 = 0,
  MRT_DTYPE_F16 = 1,
  MRT_DTYPE_BF16 = 2,
  MRT_DTYPE_F64 = 3,
  MRT_DTYPE_I8 = 4,
  MRT_DTYPE_I16 = 5,
  MRT_DTYPE_I32 = 6,
  MRT_DTYPE_I64 = 7,
  MRT_DTYPE_U8 = 8,
  MRT_DTYPE_I1 = 9, /* stored one byte per element */
  MRT_DTYPE_U16 = 10,
  MRT_DTYPE_U32 = 11,
  MRT_DTYPE_U64 = 12,
  MRT_DTYPE_MAX = MRT_DTYPE_U64,
};

/* Describes one input or output tensor. Pointers point into the module. */
typedef struct mrt_tensor_info {
  const char *name;     /* NUL-terminated */
  uint32_t dtype;       /* MRT_DTYPE_* */
  uint32_t rank;
  const uint32_t *dims; /* rank entries */
  uint32_t byte_size;
} mrt_tensor_info_t;

/* A validated module. Filled by mrt_module_load; treat the fields as read-only. */
typedef struct mrt_module {
  const uint8_t *base;
  uint32_t size;
  uint32_t arena_size;
  const mrt_image_t *image; /* the image it was checked against: its counts are the module's */
  const uint8_t *signature;
  const uint8_t *commands;
  const uint8_t *constants;
  uint32_t constants_size;
} mrt_module_t;

/* Checks magic, version, target, CRC, every offset in the module and that the module
 * is the one `image`'s code was built for (its I/O sizes, every command's binding count,
 * byte sizes and writes, and its layout CRC), so that a later mrt_module_run cannot
 * read or write outside the buffers it is given, and computes what the image was built
 * to compute. `data` must be MRT_MODULE_ALIGN-aligned (constants are aligned relative
 * to it; Cortex-M0+ faults on unaligned loads) and `size` must be exactly the module's
 * size. The module and the image are used in place and must outlive out_module. */
mrt_status_t mrt_module_load(const void *data, uint32_t size, const mrt_image_t *image,
                             mrt_module_t *out_module);

/* Fills out_info for input (is_output == 0) or output (is_output != 0) `index`. */
mrt_status_t mrt_module_io_info(const mrt_module_t *module, int is_output, uint32_t index,
                                mrt_tensor_info_t *out_info);

/* Byte size of I/O tensor `index` of a loaded module, counting inputs first and then
 * outputs (output j is input_count + j); index must be below input_count + output_count.
 * This is the image's own size for the buffer, which the loader has checked the module
 * against: callers that only size buffers need not link mrt_module_io_info. */
static inline uint32_t mrt_module_io_size(const mrt_module_t *module, uint32_t index) {
  return module->image->io_sizes[index];
}

/* Runs every command in order with the dispatches of the image the module was loaded
 * against. inputs/outputs hold one pointer per signature entry, each to at least that
 * entry's byte size; arena must be at least module->arena_size bytes and 16-byte aligned
 * (may be NULL if arena_size is 0). All arguments are checked before the first dispatch
 * runs. */
mrt_status_t mrt_module_run(const mrt_module_t *module, void *const *inputs,
                            void *const *outputs, void *arena, uint32_t arena_size);

/* CRC-32/IEEE (zlib's crc32): pass 0 to start, or a previous result to continue. */
uint32_t mrt_crc32(uint32_t crc, const void *data, uint32_t size);

#ifdef __cplusplus
}
#endif
#endif /* MINIRT_H */
