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
  MRT_ERR_BUDGET = 9,    /* the inference ran past the cycle budget the image was built
                            with (MRT_MAX_CYCLES: minirt-build --max-cycles) and was stopped */
};

/* Module format constants (docs/module-format.md; mirrored in toolchain/module/format.py). */
#define MRT_MODULE_MAGIC 0x5452694Du /* the bytes "MiRT" read as a little-endian u32 */
#define MRT_MODULE_VERSION 2u
#define MRT_MODULE_HEADER_SIZE 28u
#define MRT_MODULE_CRC_START 12u /* the CRC covers the module's bytes from here on */
#define MRT_MODULE_ALIGN 16u     /* module base, constant pool entries and arena alignment */
#define MRT_MAX_BINDINGS 16u     /* per command: run resolves them into a stack array */

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
  MRT_TARGET_X86_64_V3 = 11,   /* targets/x86-64-v3.yaml */
  MRT_TARGET_RISCV32IMC = 12,  /* rv32imc: the ESP32-C3 (targets/riscv32imc.yaml) */
  MRT_TARGET_X86_64_V4 = 13,   /* AVX-512, run natively (targets/x86-64-v4.yaml) */
};

/* One dispatch: a generated function that reads and writes the buffers its command
 * binds, in the order the command lists them. */
typedef void (*mrt_dispatch_fn_t)(void *const *bindings);

/* What the code compiled into an image needs from any module it runs. The compiler
 * writes it into the image, outside the module, and mrt_module_load rejects a module
 * that differs from it (MRT_ERR_IMAGE). The image holds the module's structure byte for
 * byte: the header after the CRC, the signature and the command list must be exactly
 * the ones the code was compiled for, and the constant table must have the layout CRC.
 * The compiler checked every count, offset and size in them when it built the image
 * (toolchain/module/contract.py), so the loader only compares, and run and io_info read
 * the structure from here. Only the constant pool is the module's own: a module with
 * new weights of the same shapes (a weights update) loads, and nothing else does. */
typedef struct mrt_image {
  const mrt_dispatch_fn_t *dispatches; /* indexed by dispatch ordinal */
  const uint32_t *io_sizes;     /* bytes of each input, then each output, as the code uses them */
  const uint32_t *commands;     /* the command list: in structure[], after the records */
  const uint32_t *commands_end; /* its end, the end of structure[] */
  uint32_t target_id;           /* MRT_TARGET_* the module header must carry */
  uint32_t layout_crc;          /* CRC-32 of the module's bytes [12, pool_offset) */
  uint32_t pool_offset;         /* where the module's constant pool starts */
  /* From here on, the module's bytes from 12 to the end of its command list as u32
   * words: the header after its CRC... */
  uint32_t module_size;
  uint32_t arena_size;
  uint16_t input_count;
  uint16_t output_count;
  uint16_t command_count;
  uint16_t constant_count;
  /* ...then the signature records and the command list. */
  uint32_t structure[];
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
  /* The small floats, one code a byte (docs/module-format.md) */
  MRT_DTYPE_F8E4M3FN = 13,
  MRT_DTYPE_F8E5M2 = 14,
  MRT_DTYPE_F8E4M3FNUZ = 15,
  MRT_DTYPE_F8E5M2FNUZ = 16,
  MRT_DTYPE_F8E4M3 = 17,
  MRT_DTYPE_F8E3M4 = 18,
  MRT_DTYPE_F8E4M3B11FNUZ = 19,
  MRT_DTYPE_F8E8M0FNU = 20,
  MRT_DTYPE_F6E2M3FN = 21,
  MRT_DTYPE_F6E3M2FN = 22,
  MRT_DTYPE_F4E2M1FN = 23,
  /* Constant-pool storage only, never an input or output: sub-byte integers packed
   * 8/bits to a byte, row-major, the first element in the low bits. */
  MRT_DTYPE_I4 = 24,
  MRT_DTYPE_U4 = 25,
  MRT_DTYPE_I2 = 26,
  MRT_DTYPE_U2 = 27,
  MRT_DTYPE_MAX = MRT_DTYPE_U2,
};

/* Describes one input or output tensor. Pointers point into the image's copy of the
 * module's signature. */
typedef struct mrt_tensor_info {
  const char *name;     /* NUL-terminated; NULL when the tensor has its default name,
                           input_<i> or output_<j> */
  uint32_t dtype;       /* MRT_DTYPE_* */
  uint32_t rank;
  const uint32_t *dims; /* rank entries */
  uint32_t byte_size;
} mrt_tensor_info_t;

/* A validated module. Filled by mrt_module_load; treat the fields as read-only. */
typedef struct mrt_module {
  const uint8_t *base;      /* NULL until a load succeeds */
  const mrt_image_t *image; /* the image it was checked against: its structure is the module's */
} mrt_module_t;

/* Checks magic, version, target, size and CRC, and that the module is the one `image`'s
 * code was built for: its structure (header, signature, commands) byte for byte and its
 * constant table by the layout CRC. A later mrt_module_run then cannot read or write
 * outside the buffers it is given, and computes what the image was built to compute.
 * `data` must be MRT_MODULE_ALIGN-aligned (constants are aligned relative to it;
 * Cortex-M0+ faults on unaligned loads) and `size` must be exactly the module's size.
 * The module and the image are used in place and must outlive out_module. */
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
 * entry's byte size; arena must be at least the image's arena_size bytes, 16-byte aligned
 * (may be NULL if arena_size is 0). All arguments are checked before the first dispatch
 * runs. Built with MRT_MAX_CYCLES, it returns MRT_ERR_BUDGET when the inference runs
 * past that many cycles (the outputs are then incomplete). A model that keeps state
 * between inferences has its state's slots last among its inputs and outputs (named
 * state_<k>; docs/module-format.md, "State"): pass one buffer per state value as both
 * its input and its output, keep it from one call to the next, and fill it with the
 * boot or reset values (the image's mrt_image_state_initial / _reset) to start or
 * reset; a library build does that itself (<name>_reset_state). */
mrt_status_t mrt_module_run(const mrt_module_t *module, void *const *inputs,
                            void *const *outputs, void *arena, uint32_t arena_size);

/* The two halves of load and run without their argument checks, for callers whose
 * arguments are right by construction (the verification harness passes the image's own
 * module and buffers, which the compiler emits non-null and aligned): the module checks
 * of mrt_module_load, all of them, filling out_module on success; and the command walk
 * of mrt_module_run over a module that loaded. */
mrt_status_t mrt_module_validate(const void *data, uint32_t size, const mrt_image_t *image,
                                 mrt_module_t *out_module);
#ifdef MRT_MAX_CYCLES
/* With a cycle budget the walk can stop early, and says so: MRT_OK or MRT_ERR_BUDGET. */
mrt_status_t mrt_module_execute(const mrt_module_t *module, void *const *inputs,
                                void *const *outputs, void *arena);

/* The cycle counter the budget is counted on, from the platform part the image links
 * (runtime_c/platform/<part>): start sets *mark to now (starting the counter where it
 * must be started), since returns the cycles from *mark to now and moves *mark there.
 * The walk reads it once per command, so a counter narrower than 64 bits (SysTick's
 * 24) must not wrap twice within one command. */
void mrt_platform_cycles_start(uint64_t *mark);
uint64_t mrt_platform_cycles_since(uint64_t *mark);
#else
void mrt_module_execute(const mrt_module_t *module, void *const *inputs, void *const *outputs,
                        void *arena);
#endif

/* CRC-32/IEEE (zlib's crc32): pass 0 to start, or a previous result to continue. */
uint32_t mrt_crc32(uint32_t crc, const void *data, uint32_t size);

#ifdef __cplusplus
}
#endif
#endif /* MINIRT_H */
