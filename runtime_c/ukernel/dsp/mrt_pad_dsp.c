/* int8 rows padded to whole words, for Arm's DSP targets (Cortex-M4, M7, M33).
 *
 * Called by generated dispatches (toolchain/codegen/pad_rows.py) for the `pad` that
 * schedule/pad_channels.py puts before a pointwise int8 layer whose input channels C are
 * not a multiple of 4: every pixel's C bytes copied to a row of C4 = C rounded up to 4,
 * the last C4 - C bytes set to the pad value. The generated loop stored one byte at a
 * time with a bounds test (about 5 instructions a byte: 37 K instructions for a 19x6x61
 * input); here a row is its whole words read with LDR (the source rows start at any
 * byte: Armv7-M and Armv8-M Mainline load words from unaligned addresses, the firmware
 * leaves CCR.UNALIGN_TRP clear) and stored aligned, 4 at a time with STM, and its last
 * word is the word ending at the row's last byte shifted down, the pad value ORed into
 * the lanes it vacates: no byte is read outside the row, none stored outside the
 * output. Every byte of a row is read before any of its output row is stored, and
 * rows (and a bordered map's border, pad_rows.py) go front to back, so each load is at
 * or before the generated loop's and each store at or after it: an output the arena
 * plan placed over its input for that loop (schedule/overlap.py, which pad_rows.py
 * only accepts run forward) stays safe.
 */
#include <stdint.h>

/* For each of `rows` rows: dst[0 .. 4*(c/4)) = src[0 .. 4*(c/4)), then the word
 * (src[c-r .. c) in its low r lanes | pad_hi), r = c % 4; dst advances 4*(c/4 + 1)
 * bytes, src c. c >= 4 and c % 4 != 0; rows >= 1; dst word-aligned. pad_hi: the pad
 * value in the bytes from lane r on, 0 below (pad_rows.py computes it). */
__attribute__((naked, used)) void mrt_pad_rows_s8(int8_t *dst, const int8_t *src,
                                                  uint32_t rows, uint32_t c,
                                                  uint32_t pad_hi)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "ldr    r4, [sp, #36]\n"          /* pad_hi (the fifth argument) */
        "and    lr, r3, #3\n"             /* r: the row's bytes past its whole words */
        "rsb    r5, lr, #4\n"
        "lsl    r5, r5, #3\n"             /* the tail word's shift down: 8 (4 - r) */
        "sub    r12, r3, #4\n"            /* where the tail word starts: c - 4 */
        "lsr    r6, r3, #2\n"             /* whole words a row (>= 1) */
        "0:\n"
        "ldr    r3, [r1, r12]\n"          /* the word ending at the row's last byte, */
        "lsr    r3, r3, r5\n"             /* read before any of the row is stored */
        "orr    r3, r3, r4\n"
        "lsrs   r7, r6, #2\n"             /* passes of 4 words */
        "beq    2f\n"
        "1:\n"
        "ldr    r8, [r1], #4\n"
        "ldr    r9, [r1], #4\n"
        "ldr    r10, [r1], #4\n"
        "ldr    r11, [r1], #4\n"
        "stm    r0!, {r8-r11}\n"
        "subs   r7, r7, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r7, r6, #3\n"             /* the words past the last pass */
        "beq    4f\n"
        "3:\n"
        "ldr    r8, [r1], #4\n"
        "str    r8, [r0], #4\n"
        "subs   r7, r7, #1\n"
        "bne    3b\n"
        "4:\n"
        "str    r3, [r0], #4\n"
        "add    r1, r1, lr\n"             /* the next row */
        "subs   r2, r2, #1\n"
        "bne    0b\n"
        "pop    {r4-r11, pc}\n");
}

/* dst[0 .. words) = word: the border of a padded map (pad_rows.py fills the whole
 * output first, then copies the rows inside it), 4 words a store. dst word-aligned. */
__attribute__((naked, used)) void mrt_fill_words(uint32_t *dst, uint32_t word,
                                                 uint32_t words)
{
    __asm__ volatile(
        "push   {r4, r5}\n"
        "mov    r4, r1\n"
        "mov    r5, r1\n"
        "mov    r12, r1\n"
        "lsrs   r3, r2, #2\n"
        "beq    2f\n"
        "1:\n"
        "stm    r0!, {r1, r4, r5, r12}\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r2, r2, #3\n"
        "beq    4f\n"
        "3:\n"
        "str    r1, [r0], #4\n"
        "subs   r2, r2, #1\n"
        "bne    3b\n"
        "4:\n"
        "pop    {r4, r5}\n"
        "bx     lr\n");
}

/* dst[0 .. n) = the pad byte (each of word's four lanes holds it), dst at any byte:
 * a SAME border of a map whose channels are no multiple of 4 and stay so (its rows
 * merged instead: schedule/pad_channels.py `_rows_merge_instead`). STR writes an
 * unaligned word on these cores (STM would fault); the last n % 4 bytes by STRB. */
__attribute__((naked, used)) void mrt_fill_bytes_s8(int8_t *dst, uint32_t word, uint32_t n)
{
    __asm__ volatile(
        "lsrs   r3, r2, #2\n"
        "beq    2f\n"
        "1:\n"
        "str    r1, [r0], #4\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r2, r2, #3\n"
        "beq    4f\n"
        "3:\n"
        "strb   r1, [r0], #1\n"
        "subs   r2, r2, #1\n"
        "bne    3b\n"
        "4:\n"
        "bx     lr\n");
}

/* dst[0 .. n) = src[0 .. n), both at any byte, front to back a word at a time (LDR
 * and STR of unaligned words), the last n % 4 bytes by LDRB and STRB: a row of such a
 * map inside its border. Each word is loaded before it is stored, so every byte is
 * loaded at or before, and stored at or after, the generated loop would (pad_rows.py's
 * order for an output the arena plan placed over its input). */
__attribute__((naked, used)) void mrt_copy_bytes_s8(int8_t *dst, const int8_t *src,
                                                    uint32_t n)
{
    __asm__ volatile(
        "lsrs   r3, r2, #2\n"
        "beq    2f\n"
        "1:\n"
        "ldr    r12, [r1], #4\n"
        "str    r12, [r0], #4\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r2, r2, #3\n"
        "beq    4f\n"
        "3:\n"
        "ldrb   r12, [r1], #1\n"
        "strb   r12, [r0], #1\n"
        "subs   r2, r2, #1\n"
        "bne    3b\n"
        "4:\n"
        "bx     lr\n");
}

/* dst[0 .. 4*words) = src's, dst word-aligned, src at any byte: a row of a map whose
 * channels are whole words inside its SAME border (pad_rows.py; the border by
 * mrt_fill_words). Four words a pass, each loaded by LDR (unaligned is fine) and stored
 * 4 at a time by STM: 7 instructions per 16 bytes where mrt_copy_bytes_s8 takes 12.
 * Front to back, each word loaded before it is stored (mrt_copy_bytes_s8's order
 * argument). words >= 0. */
__attribute__((naked, used)) void mrt_copy_words_s8(int8_t *dst, const int8_t *src,
                                                    uint32_t words)
{
    __asm__ volatile(
        "push   {r4-r7}\n"
        "lsrs   r3, r2, #2\n"
        "beq    2f\n"
        "1:\n"
        "ldr    r4, [r1], #4\n"       /* STM stores the lowest register first */
        "ldr    r5, [r1], #4\n"
        "ldr    r6, [r1], #4\n"
        "ldr    r7, [r1], #4\n"
        "stm    r0!, {r4-r7}\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r2, r2, #3\n"
        "beq    4f\n"
        "3:\n"
        "ldr    r12, [r1], #4\n"
        "str    r12, [r0], #4\n"
        "subs   r2, r2, #1\n"
        "bne    3b\n"
        "4:\n"
        "pop    {r4-r7}\n"
        "bx     lr\n");
}
