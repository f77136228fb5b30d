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

#if defined(__thumb__) && !defined(MRT_CRC32_NIBBLE_TABLE)
/* The same loop in Thumb assembly (Armv6-M and up): `lsrs` shifts the low bit into the
 * carry, which says whether to xor the polynomial, so the loop has no mask to build.
 * 40 bytes instead of the compiler's 48: the CRC is in every Arm image, and the seed
 * firmware for Cortex-M4 has to fit in 1 KB. */
__asm__("  .section .text.mrt_crc32, \"ax\", %progbits\n"
        "  .global mrt_crc32\n"
        "  .p2align 1\n"
        "  .type mrt_crc32, %function\n"
        "  .thumb_func\n"
        "mrt_crc32:\n"          /* r0 = crc, r1 = data, r2 = size */
        "  push {r4, lr}\n"
        "  mvns r0, r0\n"
        "  ldr r3, =0xEDB88320\n"
        "1:subs r2, #1\n"       /* no byte left: done */
        "  bcc 4f\n"
        "  ldrb r4, [r1]\n"
        "  adds r1, #1\n"
        "  eors r0, r4\n"
        "  movs r4, #8\n"
        "2:lsrs r0, r0, #1\n"
        "  bcc 3f\n"
        "  eors r0, r3\n"
        "3:subs r4, #1\n"
        "  bne 2b\n"
        "  b 1b\n"
        "4:mvns r0, r0\n"
        "  pop {r4, pc}\n"
        "  .p2align 2\n"
        "  .ltorg\n"
        "  .size mrt_crc32, . - mrt_crc32\n");
#else
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
#endif
