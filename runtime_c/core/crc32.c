/*
 * crc32.c - CRC-32/IEEE (reflected, polynomial 0xEDB88320), bit-compatible with zlib's
 * crc32() so the Python packer can compute it with zlib.crc32.
 *
 * The default is table-less, one bit per step: about 20 bytes of Thumb code, and the
 * module is checked once at load, so speed matters less than flash. Define
 * MRT_CRC32_NIBBLE_TABLE for a 16-entry table (64 bytes of .rodata), about 4x faster
 * on large constant pools.
 */
#include "minirt.h"

#ifdef MRT_CRC32_NIBBLE_TABLE
/* crc of each 4-bit value shifted through 4 steps; two lookups per byte. */
static const uint32_t mrt_crc32_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
    0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};
#endif

uint32_t mrt_crc32(uint32_t crc, const void *data, uint32_t size) {
  const uint8_t *p = (const uint8_t *)data;
  crc = ~crc;
  while (size--) {
    crc ^= *p++;
#ifdef MRT_CRC32_NIBBLE_TABLE
    crc = (crc >> 4) ^ mrt_crc32_nibble[crc & 15u];
    crc = (crc >> 4) ^ mrt_crc32_nibble[crc & 15u];
#else
    /* -(crc & 1) is all ones when the low bit is set: a branch-free conditional xor. */
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
#endif
  }
  return ~crc;
}
