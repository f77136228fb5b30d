/*
 * module.c - validates a packed module (.mrt) against the image it is to run in, and
 * answers signature queries.
 *
 * Everything a later mrt_module_run relies on is checked here, once, so that run is a
 * straight walk with no checks per binding: TFLite Micro's Prepare/Eval split. Layout:
 * docs/module-format.md. The module's structure must be exactly the one the image pins
 * (mrt_image_t), which the compiler checked when it built the image, so the loader
 * compares words instead of walking records and range-checking bindings: the module
 * cannot claim a size, count or offset the image does not already hold.
 */
#include "minirt.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "minirt reads little-endian module fields in place"
#endif

/* may_alias: module bytes are usually a uint8_t array; reading them as u32 must not
 * be subject to type-based alias analysis. */
typedef uint32_t __attribute__((may_alias)) mrt_u32_alias_t;

/* Header words (u32 at 4 * index); the version and the target share word 1. */
enum { MRT_H_MAGIC, MRT_H_VERSION_TARGET, MRT_H_CRC, MRT_H_TOTAL_SIZE };

/* The module checks, in the order of docs/module-format.md ("What the loader checks");
 * the reader (toolchain/module/reader.py) predicts the same status for any bytes. */
mrt_status_t mrt_module_validate(const void *data, uint32_t size, const mrt_image_t *image,
                                 mrt_module_t *out_module) {
  const mrt_u32_alias_t *const h = (const mrt_u32_alias_t *)data;
  if (size < MRT_MODULE_HEADER_SIZE) return MRT_ERR_TRUNCATED;
  if (h[MRT_H_MAGIC] != MRT_MODULE_MAGIC) return MRT_ERR_MAGIC;
  if ((uint16_t)h[MRT_H_VERSION_TARGET] != MRT_MODULE_VERSION) return MRT_ERR_VERSION;
  if (h[MRT_H_VERSION_TARGET] >> 16 != image->target_id) return MRT_ERR_TARGET;
  if (h[MRT_H_TOTAL_SIZE] > size) return MRT_ERR_TRUNCATED;
  if (h[MRT_H_TOTAL_SIZE] != size) return MRT_ERR_MALFORMED;
  const mrt_u32_alias_t *const from = h + MRT_H_TOTAL_SIZE;
#ifndef MRT_BOOT_CHECK_LAYOUT
  /* The CRC covers the rest of the header too, so the only fields a corrupted byte
   * can reach without failing here are the three exact-match ones above. A firmware
   * image built with --boot-check layout skips it: its module sits in the same flash
   * write as its code, which nothing checks at boot either, and reading every weight
   * byte costs more than an inference on a model of many weights (module-format.md,
   * "The boot check"). Everything below still runs, so no field can lead a read or
   * a write astray; only the weights' bytes are trusted as flashed. */
  if (mrt_crc32(0, from, size - MRT_MODULE_CRC_START) != h[MRT_H_CRC]) return MRT_ERR_CRC;
#endif
  /* A module that differs from the image was packed for other code (or crafted). The
   * first pinned word is total_size, just checked to be `size`: a module of another
   * size stops there, before any read past its end. The header's four words are always
   * pinned: the loop runs at least once. */
  const mrt_u32_alias_t *pin = (const mrt_u32_alias_t *)&image->module_size;
  const mrt_u32_alias_t *word = from;
  do
    if (*word++ != *pin++) return MRT_ERR_IMAGE;
  while (pin != (const mrt_u32_alias_t *)image->commands_end);
  /* The constant table: metadata for tools, never read here, kept what the compiler
   * wrote by its CRC. */
  if (mrt_crc32(0, from, image->pool_offset - MRT_MODULE_CRC_START) != image->layout_crc)
    return MRT_ERR_IMAGE;
  out_module->base = (const uint8_t *)data;
  out_module->image = image;
  return MRT_OK;
}

mrt_status_t mrt_module_load(const void *data, uint32_t size, const mrt_image_t *image,
                             mrt_module_t *out_module) {
  if (!out_module) return MRT_ERR_ARGUMENT;
  out_module->base = 0;
  if (!data || !image || ((uintptr_t)data & (MRT_MODULE_ALIGN - 1u))) return MRT_ERR_ARGUMENT;
  return mrt_module_validate(data, size, image, out_module);
}

mrt_status_t mrt_module_io_info(const mrt_module_t *module, int is_output, uint32_t index,
                                mrt_tensor_info_t *out_info) {
  if (!out_info) return MRT_ERR_ARGUMENT;
  out_info->name = 0;
  out_info->dims = 0;
  out_info->dtype = out_info->rank = out_info->byte_size = 0;
  if (!module || !module->base) return MRT_ERR_ARGUMENT;
  const mrt_image_t *image = module->image;
  if (index >= (is_output ? image->output_count : image->input_count)) return MRT_ERR_ARGUMENT;
  if (is_output) index += image->input_count;
  out_info->byte_size = image->io_sizes[index];
  /* The image's records, which the compiler checked: walking `index` of them stays
   * inside the signature. A record is its head word (dtype, rank, name length), its
   * dims and, unless the name is the default one, the name with its NUL, padded to 4. */
  const uint32_t *rec = image->structure;
  for (;;) {
    const uint32_t w = *rec++, rank = (w >> 8) & 0xFFu, name_len = (w >> 16) & 0xFFu;
    if (!index--) {
      out_info->dtype = w & 0xFFu;
      out_info->rank = rank;
      out_info->dims = rec;
      if (name_len) out_info->name = (const char *)(rec + rank);
      return MRT_OK;
    }
    rec += rank + (name_len ? (name_len + 4u) / 4u : 0u);
  }
}
