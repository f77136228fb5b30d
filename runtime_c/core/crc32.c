/*
 * crc32.c - CRC-32/IEEE (reflected, polynomial 0xEDB88320), bit-compatible with zlib's
 * crc32() so the Python packer can compute it with zlib.crc32.
 *
 * Three ways to the same value, chosen at build time (docs/module-format.md, "The boot
 * check"):
 * - the default, table-less, one bit per step: 40 bytes of Thumb code, ~44 instructions
 *   per byte. The seed firmware has to fit in 1 KB, and its module is 84 bytes to check.
 * - MRT_CRC32_SLICE4: slicing-by-4, a word per step through four 256-entry tables
 *   (4 KB of .rodata, crc32_slice4.h), ~3.2 instructions per byte in the Thumb-2
 *   assembly below. The compiler picks it for modules of at least MRT_CRC32_SLICE4's
 *   table size (toolchain/module/format.py, crc_cflags), where the check would
 *   otherwise cost more than a large model's inference.
 * - MRT_CRC32_NIBBLE_TABLE: a 16-entry table (64 bytes), about 4x faster than bit-wise.
 */
#include "minirt.h"

#if defined(MRT_CRC32_SLICE4)
#include "crc32_slice4.h"
#elif defined(MRT_CRC32_NIBBLE_TABLE)
/* crc of each 4-bit value shifted through 4 steps; two lookups per byte. */
static const uint32_t mrt_crc32_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
    0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};
#endif

#if defined(MRT_CRC32_SLICE4) && defined(__thumb2__)
/* Slicing-by-4 in Thumb-2 (Armv7-M and up): 12 instructions per word (xor the CRC in,
 * four extract-load-xor lookups less the first xor) and an ldm of four words per turn,
 * 51 per 16 bytes. clang's -Oz loop from the C below takes 19 per word: it adds each
 * table's offset to the index instead of keeping four table bases in registers. Bytes
 * before the first aligned word and after the last whole block go one at a time. */
__asm__("  .section .text.mrt_crc32, \"ax\", %progbits\n"
        "  .global mrt_crc32\n"
        "  .p2align 1\n"
        "  .type mrt_crc32, %function\n"
        "  .thumb_func\n"
        "  .macro mrt_crc32_byte\n" /* r0 = (r0 >> 8) ^ T0[(r0 ^ *r1++) & 255] */
        "  ldrb r7, [r1], #1\n"
        "  eors r7, r0\n"
        "  uxtb r7, r7\n"
        "  ldr r7, [r3, r7, lsl #2]\n"
        "  eor r0, r7, r0, lsr #8\n"
        "  .endm\n"
        "  .macro mrt_crc32_word w\n" /* r0 = T3[x0] ^ T2[x1] ^ T1[x2] ^ T0[x3], x = r0 ^ w */
        "  eor \\w, \\w, r0\n"
        "  uxtb r0, \\w\n"
        "  ldr r0, [r6, r0, lsl #2]\n"
        "  uxtb r11, \\w, ror #8\n"
        "  ldr r11, [r5, r11, lsl #2]\n"
        "  eor r0, r0, r11\n"
        "  uxtb r11, \\w, ror #16\n"
        "  ldr r11, [r4, r11, lsl #2]\n"
        "  eor r0, r0, r11\n"
        "  lsr \\w, \\w, #24\n"
        "  ldr \\w, [r3, \\w, lsl #2]\n"
        "  eor r0, r0, \\w\n"
        "  .endm\n"
        "mrt_crc32:\n" /* r0 = crc, r1 = data, r2 = size */
        "  push {r4-r11, lr}\n"
        "  mvns r0, r0\n"
        "  ldr r3, =mrt_crc32_slice\n"
        "  add r4, r3, #1024\n"
        "  add r5, r3, #2048\n"
        "  add r6, r3, #3072\n"
        "1:tst r1, #3\n" /* bytes up to the first aligned word */
        "  beq 2f\n"
        "  subs r2, #1\n"
        "  bcc 9f\n"
        "  mrt_crc32_byte\n"
        "  b 1b\n"
        "2:subs r2, #16\n" /* whole 16-byte blocks */
        "  bcc 4f\n"
        "3:ldm r1!, {r7, r8, r9, r10}\n"
        "  mrt_crc32_word r7\n"
        "  mrt_crc32_word r8\n"
        "  mrt_crc32_word r9\n"
        "  mrt_crc32_word r10\n"
        "  subs r2, #16\n"
        "  bcs 3b\n"
        "4:adds r2, #16\n" /* the last 0..15 bytes */
        "5:subs r2, #1\n"
        "  bcc 9f\n"
        "  mrt_crc32_byte\n"
        "  b 5b\n"
        "9:mvns r0, r0\n"
        "  pop {r4-r11, pc}\n"
        "  .p2align 2\n"
        "  .ltorg\n"
        "  .size mrt_crc32, . - mrt_crc32\n"
        "  .purgem mrt_crc32_byte\n"
        "  .purgem mrt_crc32_word\n");
#elif defined(__thumb__) && !defined(MRT_CRC32_NIBBLE_TABLE) && !defined(MRT_CRC32_SLICE4)
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
#ifdef MRT_CRC32_SLICE4
  /* Word loads need an aligned address (Cortex-M0+ faults otherwise). */
  for (; size && ((uintptr_t)p & 3u); --size)
    crc = (crc >> 8) ^ mrt_crc32_slice[0][(crc ^ *p++) & 0xFFu];
  for (; size >= 4; size -= 4, p += 4) {
    crc ^= *(const uint32_t *)(const void *)p;
    crc = mrt_crc32_slice[3][crc & 0xFFu] ^ mrt_crc32_slice[2][(crc >> 8) & 0xFFu] ^
          mrt_crc32_slice[1][(crc >> 16) & 0xFFu] ^ mrt_crc32_slice[0][crc >> 24];
  }
#endif
  while (size--) {
    crc ^= *p++;
#if defined(MRT_CRC32_SLICE4)
    crc = (crc >> 8) ^ mrt_crc32_slice[0][crc & 0xFFu];
#elif defined(MRT_CRC32_NIBBLE_TABLE)
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
