/*
 * module.c - validates a packed module (.mrt) in place and answers signature queries.
 *
 * Everything a later mrt_module_run relies on is checked here, once, so that run is a
 * straight walk with no checks per binding: TFLite Micro's Prepare/Eval split. Layout:
 * docs/module-format.md. All fields are 4-byte aligned little-endian u32 (or u16/u8
 * packed inside one), so they are read in place with aligned loads.
 */
#include "minirt.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "minirt reads little-endian module fields in place"
#endif

/* may_alias: module bytes are usually a uint8_t array; reading them as u32 must not
 * be subject to type-based alias analysis. */
typedef uint32_t __attribute__((may_alias)) mrt_u32_alias_t;

static inline uint32_t mrt_rd32(const uint8_t *p) { return *(const mrt_u32_alias_t *)p; }

/* Header word indices (each a u32 at 4 * index). */
enum {
  MRT_H_MAGIC = 0,
  MRT_H_VERSION = 1,
  MRT_H_TARGET = 2,
  MRT_H_CRC = 3,
  MRT_H_TOTAL_SIZE = 4,
  MRT_H_ARENA_SIZE = 5,
  MRT_H_IO_COUNTS = 6, /* input_count | output_count << 16 */
  MRT_H_COMMAND_COUNT = 7,
  MRT_H_SIGNATURE_SIZE = 8,
  MRT_H_COMMANDS_SIZE = 9,
  MRT_H_CONSTANT_COUNT = 10,
  MRT_H_POOL_OFFSET = 11,
};

#define MRT_CRC_START 16u
#define MRT_SIG_HEAD_SIZE 4u
#define MRT_BINDING_VALUE_MASK 0x3FFFFFFFu

/* 1 if [offset, offset + size) lies inside [0, limit); cannot overflow. */
static inline int mrt_in_range(uint32_t offset, uint32_t size, uint32_t limit) {
  return offset <= limit && size <= limit - offset;
}

/* Bytes of the signature record at p: head, rank dims, name + NUL padded to 4. Rank
 * and name length are u8s, so this cannot overflow. */
static inline uint32_t mrt_sig_record_size(const uint8_t *p) {
  const uint32_t w = mrt_rd32(p);
  return MRT_SIG_HEAD_SIZE + 4u * ((w >> 8) & 0xFFu) + ((((w >> 16) & 0xFFu) + 4u) & ~3u);
}

/* Zeroes an out_* struct without a memset call (the struct is a multiple of 4 bytes). */
static inline void mrt_zero(void *p, uint32_t size) {
  mrt_u32_alias_t *w = (mrt_u32_alias_t *)p;
  for (size /= 4u; size; --size) *w++ = 0;
}

mrt_status_t mrt_module_load(const void *data, uint32_t size, uint32_t target_id,
                             mrt_module_t *out_module) {
  if (!out_module) return MRT_ERR_ARGUMENT;
  mrt_zero(out_module, sizeof(*out_module));
  const uint8_t *base = (const uint8_t *)data;
  if (!base || ((uintptr_t)base & (MRT_MODULE_ALIGN - 1u))) return MRT_ERR_ARGUMENT;
  if (size < MRT_MODULE_HEADER_SIZE) return MRT_ERR_TRUNCATED;

  const mrt_u32_alias_t *h = (const mrt_u32_alias_t *)base;
  if (h[MRT_H_MAGIC] != MRT_MODULE_MAGIC) return MRT_ERR_MAGIC;
  if (h[MRT_H_VERSION] != MRT_MODULE_VERSION) return MRT_ERR_VERSION;
  if (h[MRT_H_TARGET] != target_id) return MRT_ERR_TARGET;
  if (h[MRT_H_TOTAL_SIZE] > size) return MRT_ERR_TRUNCATED;
  if (h[MRT_H_TOTAL_SIZE] != size) return MRT_ERR_MALFORMED;
  /* The CRC covers the rest of the header too, so the only fields a corrupted byte
   * can reach without failing here are the three exact-match ones above. */
  if (mrt_crc32(0, base + MRT_CRC_START, size - MRT_CRC_START) != h[MRT_H_CRC])
    return MRT_ERR_CRC;

  /* From here on the bytes are intact; the checks below defend against a module that
   * was packed wrong (or crafted) with a valid CRC. The constant table is metadata for
   * tools that the runtime never reads, so only the pool bounds matter here. */
  const uint32_t pool_offset = h[MRT_H_POOL_OFFSET];
  const uint32_t input_count = h[MRT_H_IO_COUNTS] & 0xFFFFu;
  const uint32_t output_count = h[MRT_H_IO_COUNTS] >> 16;
  /* One unsigned compare: an offset below the header wraps to a huge value. */
  if ((pool_offset & (MRT_MODULE_ALIGN - 1u)) ||
      pool_offset - MRT_MODULE_HEADER_SIZE > size - MRT_MODULE_HEADER_SIZE)
    goto malformed;
  const uint8_t *const pool = base + pool_offset;
  const uint8_t *const signature = base + MRT_MODULE_HEADER_SIZE;

  /* Signature: a u32 byte size per tensor (what bindings are checked against), then
   * one variable-length record per tensor, then the commands. Every read is bounded
   * by `pool`; the walked lengths must also equal the header's section sizes, so a
   * wrong count cannot reinterpret the next section. The constant table (between
   * the commands and the pool) is for tools, which check it (toolchain/module/
   * reader.py); the runtime never reads it. */
  const mrt_u32_alias_t *const io_sizes = (const mrt_u32_alias_t *)signature;
  const uint8_t *p = signature + 4u * (input_count + output_count); /* < 2^19: no wrap */
  if (p > pool) goto malformed;
  for (uint32_t i = input_count + output_count; i; --i) {
    if ((uint32_t)(pool - p) < MRT_SIG_HEAD_SIZE) goto malformed;
    const uint32_t w = mrt_rd32(p);
    const uint32_t name_at = MRT_SIG_HEAD_SIZE + 4u * ((w >> 8) & 0xFFu);
    const uint32_t rec_size = mrt_sig_record_size(p);
    /* rec_size fits first, so the NUL check reads inside the record; the NUL lets
     * io_info hand out the name as a C string. */
    if (rec_size > (uint32_t)(pool - p) || (w & 0xFFu) > MRT_DTYPE_MAX ||
        p[name_at + ((w >> 16) & 0xFFu)] != 0)
      goto malformed;
    p += rec_size;
  }
  if ((uint32_t)(p - signature) != h[MRT_H_SIGNATURE_SIZE]) goto malformed;
  const uint8_t *const commands = p;

  /* Commands: a u32 head (ordinal | count << 16), then count 8-byte bindings. */
  uint32_t dispatch_count = 0;
  for (uint32_t c = h[MRT_H_COMMAND_COUNT]; c; --c) {
    if ((uint32_t)(pool - p) < 4u) goto malformed;
    const uint32_t head = mrt_rd32(p);
    const uint32_t n = head >> 16;
    p += 4;
    if (n > MRT_MAX_BINDINGS || 8u * n > (uint32_t)(pool - p)) goto malformed;
    if ((head & 0xFFFFu) >= dispatch_count) dispatch_count = (head & 0xFFFFu) + 1u;
    for (const uint8_t *stop = p + 8u * n; p != stop; p += 8) {
      const uint32_t ref = mrt_rd32(p);
      const uint32_t kind = ref >> 30;
      uint32_t offset = ref & MRT_BINDING_VALUE_MASK;
      uint32_t limit;
      if (kind == MRT_BINDING_ARENA) {
        limit = h[MRT_H_ARENA_SIZE];
      } else if (kind == MRT_BINDING_CONSTANT) {
        limit = size - pool_offset;
      } else {
        /* I/O: the value is an index, and the binding starts at the tensor's start. */
        uint32_t first = 0, count = input_count;
        if (kind == MRT_BINDING_OUTPUT) first = input_count, count = output_count;
        if (offset >= count) goto malformed;
        limit = io_sizes[first + offset];
        offset = 0;
      }
      if (!mrt_in_range(offset, mrt_rd32(p + 4), limit)) goto malformed;
    }
  }
  if ((uint32_t)(p - commands) != h[MRT_H_COMMANDS_SIZE]) goto malformed;

  out_module->base = base;
  out_module->size = size;
  out_module->input_count = input_count;
  out_module->output_count = output_count;
  out_module->command_count = h[MRT_H_COMMAND_COUNT];
  out_module->arena_size = h[MRT_H_ARENA_SIZE];
  out_module->dispatch_count = dispatch_count;
  out_module->signature = signature;
  out_module->commands = commands;
  out_module->constants = pool;
  out_module->constants_size = size - pool_offset;
  return MRT_OK;

malformed:
  return MRT_ERR_MALFORMED;
}

mrt_status_t mrt_module_io_info(const mrt_module_t *module, int is_output, uint32_t index,
                                mrt_tensor_info_t *out_info) {
  if (!out_info) return MRT_ERR_ARGUMENT;
  mrt_zero(out_info, sizeof(*out_info));
  if (!module || !module->base) return MRT_ERR_ARGUMENT;
  if (index >= (is_output ? module->output_count : module->input_count)) return MRT_ERR_ARGUMENT;
  if (is_output) index += module->input_count;
  const uint32_t io_count = module->input_count + module->output_count;
  out_info->byte_size = mrt_rd32(module->signature + 4u * index);
  /* Records were walked by the loader, so skipping `index` of them stays inside. */
  const uint8_t *rec = module->signature + 4u * io_count;
  while (index--) rec += mrt_sig_record_size(rec);
  const uint32_t w = mrt_rd32(rec);
  const uint32_t rank = (w >> 8) & 0xFFu;
  out_info->dtype = w & 0xFFu;
  out_info->rank = rank;
  out_info->dims = (const uint32_t *)(const void *)(rec + MRT_SIG_HEAD_SIZE);
  out_info->name = (const char *)rec + MRT_SIG_HEAD_SIZE + 4u * rank;
  return MRT_OK;
}
