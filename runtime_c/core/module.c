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

/* log2 of the element size of each MRT_DTYPE_*, two bits per code: f32 f16 bf16 f64 i8
 * i16 i32 i64 u8 i1 u16 u32 u64. */
#define MRT_DTYPE_LOG2_SIZES 0x390E4D6u

/* Walks the signature at `sig` (u32 byte sizes, then one record per tensor) up to
 * `pool`: each record must fit, name a known dtype, end its name with a NUL (io_info
 * hands it out as a C string) and have dims whose product times the element size is
 * its byte size, and that size must be the image's (its buffers and code are made for
 * it). Returns MRT_OK with *end just past the records, or the status. */
static mrt_status_t mrt_check_signature(const uint8_t *sig, const uint8_t *pool,
                                        const mrt_image_t *image, const uint8_t **end) {
  const uint32_t count = image->input_count + image->output_count;
  const uint8_t *p = sig + 4u * count; /* < 2^19: no wrap */
  if (p > pool) return MRT_ERR_MALFORMED;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t byte_size = mrt_rd32(sig + 4u * i);
    /* The record fits first, so the NUL and the dims are read inside it. */
    if ((uint32_t)(pool - p) < MRT_SIG_HEAD_SIZE) return MRT_ERR_MALFORMED;
    const uint32_t w = mrt_rd32(p);
    const uint32_t dtype = w & 0xFFu;
    const uint32_t rec_size = mrt_sig_record_size(p);
    if (rec_size > (uint32_t)(pool - p) || dtype > MRT_DTYPE_MAX) return MRT_ERR_MALFORMED;
    /* A product that overflows 32 bits cannot be a u32 byte size. */
    const uint8_t *dim = p + MRT_SIG_HEAD_SIZE;
    uint32_t bytes = 1u << ((MRT_DTYPE_LOG2_SIZES >> (2u * dtype)) & 3u);
    for (uint32_t rank = (w >> 8) & 0xFFu; rank; --rank, dim += 4)
      if (__builtin_mul_overflow(bytes, mrt_rd32(dim), &bytes)) return MRT_ERR_MALFORMED;
    if (bytes != byte_size || dim[(w >> 16) & 0xFFu] != 0) return MRT_ERR_MALFORMED;
    if (byte_size != image->io_sizes[i]) return MRT_ERR_IMAGE;
    p += rec_size;
  }
  *end = p;
  return MRT_OK;
}

/* Walks the image's command_count commands from *p up to `pool`: each head must be the
 * image's, and each binding inside its region (the arena, the pool, its I/O tensor;
 * arena and pool offsets aligned) and of exactly the kind and size the image's
 * dispatch accesses. Returns MRT_OK with *p just past the commands, or the status. */
static mrt_status_t mrt_check_commands(const uint8_t **pp, const uint8_t *pool,
                                       uint32_t arena_size, uint32_t pool_size,
                                       const mrt_image_t *image) {
  const uint8_t *p = *pp;
  const uint32_t *need = image->commands;
  for (uint32_t c = image->command_count; c; --c) {
    if ((uint32_t)(pool - p) < 4u) return MRT_ERR_MALFORMED;
    const uint32_t head = mrt_rd32(p);
    const uint32_t n = head >> 16;
    p += 4;
    if (n > MRT_MAX_BINDINGS || 8u * n > (uint32_t)(pool - p)) return MRT_ERR_MALFORMED;
    if (head != *need++) return MRT_ERR_IMAGE;
    for (const uint8_t *stop = p + 8u * n; p != stop; p += 8, ++need) {
      const uint32_t ref = mrt_rd32(p);
      const uint32_t kind = ref >> 30;
      const uint32_t bytes = mrt_rd32(p + 4);
      uint32_t offset = ref & MRT_BINDING_VALUE_MASK;
      uint32_t limit = kind == MRT_BINDING_CONSTANT ? pool_size : arena_size;
      if (kind >= MRT_BINDING_INPUT) {
        /* I/O: the value is an index, and the binding starts at the tensor's start. */
        uint32_t first = 0, count = image->input_count;
        if (kind == MRT_BINDING_OUTPUT) first = count, count = image->output_count;
        if (offset >= count) return MRT_ERR_MALFORMED;
        limit = image->io_sizes[first + offset];
        offset = 0;
      }
      if ((offset & (MRT_BINDING_ALIGN - 1u)) || !mrt_in_range(offset, bytes, limit))
        return MRT_ERR_MALFORMED;
      if (kind != *need >> 30 || bytes != (*need & MRT_BINDING_VALUE_MASK)) return MRT_ERR_IMAGE;
    }
  }
  *pp = p;
  return MRT_OK;
}

mrt_status_t mrt_module_load(const void *data, uint32_t size, const mrt_image_t *image,
                             mrt_module_t *out_module) {
  if (!out_module) return MRT_ERR_ARGUMENT;
  mrt_zero(out_module, sizeof(*out_module));
  const uint8_t *base = (const uint8_t *)data;
  if (!base || !image || ((uintptr_t)base & (MRT_MODULE_ALIGN - 1u))) return MRT_ERR_ARGUMENT;
  if (size < MRT_MODULE_HEADER_SIZE) return MRT_ERR_TRUNCATED;

  const mrt_u32_alias_t *h = (const mrt_u32_alias_t *)base;
  if (h[MRT_H_MAGIC] != MRT_MODULE_MAGIC) return MRT_ERR_MAGIC;
  if (h[MRT_H_VERSION] != MRT_MODULE_VERSION) return MRT_ERR_VERSION;
  if (h[MRT_H_TARGET] != image->target_id) return MRT_ERR_TARGET;
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
  /* One unsigned compare: an offset below the header wraps to a huge value. */
  if ((pool_offset & (MRT_MODULE_ALIGN - 1u)) ||
      pool_offset - MRT_MODULE_HEADER_SIZE > size - MRT_MODULE_HEADER_SIZE)
    return MRT_ERR_MALFORMED;
  /* The image's two u16 counts, read as one word, must be the header's I/O counts. */
  if (h[MRT_H_IO_COUNTS] != mrt_rd32((const uint8_t *)&image->input_count) ||
      h[MRT_H_COMMAND_COUNT] != image->command_count)
    return MRT_ERR_IMAGE;
  const uint8_t *const pool = base + pool_offset;
  const uint8_t *const signature = base + MRT_MODULE_HEADER_SIZE;
  const uint8_t *commands, *p;
  /* The walked lengths must equal the header's section sizes, so a wrong count cannot
   * reinterpret the next section. */
  mrt_status_t status = mrt_check_signature(signature, pool, image, &commands);
  if (status) return status;
  if ((uint32_t)(commands - signature) != h[MRT_H_SIGNATURE_SIZE]) return MRT_ERR_MALFORMED;
  p = commands;
  status = mrt_check_commands(&p, pool, h[MRT_H_ARENA_SIZE], size - pool_offset, image);
  if (status) return status;
  if ((uint32_t)(p - commands) != h[MRT_H_COMMANDS_SIZE]) return MRT_ERR_MALFORMED;
  /* Everything but the pool is what the compiler wrote for this image: a module that
   * passes the checks above but differs here (an arena offset moved inside the arena,
   * say) would run safely and compute something else. */
  if (mrt_crc32(0, base + MRT_CRC_START, pool_offset - MRT_CRC_START) != image->layout_crc)
    return MRT_ERR_IMAGE;

  out_module->base = base;
  out_module->size = size;
  out_module->arena_size = h[MRT_H_ARENA_SIZE];
  out_module->image = image;
  out_module->signature = signature;
  out_module->commands = commands;
  out_module->constants = pool;
  out_module->constants_size = size - pool_offset;
  return MRT_OK;
}

mrt_status_t mrt_module_io_info(const mrt_module_t *module, int is_output, uint32_t index,
                                mrt_tensor_info_t *out_info) {
  if (!out_info) return MRT_ERR_ARGUMENT;
  mrt_zero(out_info, sizeof(*out_info));
  if (!module || !module->base) return MRT_ERR_ARGUMENT;
  const mrt_image_t *image = module->image;
  if (index >= (is_output ? image->output_count : image->input_count)) return MRT_ERR_ARGUMENT;
  if (is_output) index += image->input_count;
  const uint32_t io_count = image->input_count + image->output_count;
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
