/* int8 dense-layer microkernel for Arm's DSP extension (Cortex-M4, M7, M33).
 *
 * Called by generated dispatches (toolchain/codegen/dense_rows.py) for a tile of output
 * rows of a dense layer (one pixel: every row reads the same input), all of the tile's
 * rows in one call. The 1x4 kernels of mrt_dot_dsp.c read one step (4 inputs) of four
 * rows at a time with an LDRD per row; here a pass takes two rows over two steps, so
 * each row's 4 words (8 weights in the paired layout) are one LDM, and so are the two
 * steps' 4 words of the input, paired once per call into `buf`: 16 MACs in 1 + 2 LDM and
 * 8 SMLAD, against 13 (input paired) or 15 for 1x4. A tile of any number of rows runs
 * in pairs, an odd last row alone, so a layer of 10 outputs is one call and not two
 * calls of 4 and 2 rows of generated code (bench/shapes.py, issue 21). The sums are
 * SMLAD's exact 32-bit wrap-around sums of int8 products, the reference's integers.
 */
#include <stdint.h>

/* Two steps of a row pair: r1 the paired input, r2 and r3 the rows (paired layout),
 * r12 and lr their sums; r4-r7 the input's 4 words, r8-r11 a row's. */
#define MRT_DENSE_PAIR_2STEPS \
  "ldm    r1!, {r4-r7}\n" \
  "ldm    r2!, {r8-r11}\n" \
  "smlad  r12, r4, r8, r12\n" \
  "smlad  r12, r5, r9, r12\n" \
  "smlad  r12, r6, r10, r12\n" \
  "smlad  r12, r7, r11, r12\n" \
  "ldm    r3!, {r8-r11}\n" \
  "smlad  lr, r4, r8, lr\n" \
  "smlad  lr, r5, r9, lr\n" \
  "smlad  lr, r6, r10, lr\n" \
  "smlad  lr, r7, r11, lr\n"

/* Two steps of a lone row: r2 the row, r12 its sum. */
#define MRT_DENSE_ROW_2STEPS \
  "ldm    r1!, {r4-r7}\n" \
  "ldm    r2!, {r8-r11}\n" \
  "smlad  r12, r4, r8, r12\n" \
  "smlad  r12, r5, r9, r12\n" \
  "smlad  r12, r6, r10, r12\n" \
  "smlad  r12, r7, r11, r12\n"

/* sums[r] += sum over k < 4*steps of x[k] * w_r[k] for r < rows, where w_r, row r of the
 * weights in the paired layout (kernel/paired.py), starts at w + 8*steps*r bytes (the
 * rows follow one another). x: the int8 input (word-aligned), paired into buf (8*steps
 * bytes, word-aligned) first; or NULL when buf already holds it paired (a later tile of
 * the same pixel). steps >= 1, rows >= 1; w word-aligned.
 *
 * Frame: r4-r11 and lr pushed, then 16 bytes: sp+0 the next sums, sp+4 the rows left,
 * sp+8 the bytes of a row (8*steps), sp+12 steps; the arguments rows and buf at sp+52
 * and sp+56.
 * Per pair the steps run in passes of 4 (two of MRT_DENSE_PAIR_2STEPS), a count of 2 mod
 * 4 entering the first pass at its second half, then an odd last step alone. */
__attribute__((naked, used)) void mrt_dense_s8_paired_rows(int32_t *sums, const int8_t *x,
                                                           const int16_t *w, uint32_t steps,
                                                           uint32_t rows, int16_t *buf)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "sub    sp, sp, #16\n"
        "str    r0, [sp, #0]\n"
        "str    r3, [sp, #12]\n"
        "lsls   r0, r3, #3\n"
        "str    r0, [sp, #8]\n"             /* bytes a row */
        "ldr    r12, [sp, #56]\n"           /* buf */
        "cbz    r1, 20f\n"                  /* already paired */
        /* The input paired into buf: two steps (8 values) a pass, 4 words stored. */
        "lsrs   r0, r3, #1\n"
        "beq    12f\n"
        "11:\n"
        "ldrd   r4, r6, [r1], #8\n"
        "sxtb16 r5, r4, ror #8\n"
        "sxtb16 r4, r4\n"
        "sxtb16 r7, r6, ror #8\n"
        "sxtb16 r6, r6\n"
        "stm    r12!, {r4-r7}\n"
        "subs   r0, r0, #1\n"
        "bne    11b\n"
        "12:\n"
        "lsls   r0, r3, #31\n"              /* Z: steps even */
        "beq    20f\n"
        "ldr    r4, [r1]\n"
        "sxtb16 r5, r4, ror #8\n"
        "sxtb16 r4, r4\n"
        "strd   r4, r5, [r12]\n"
        "20:\n"
        "ldr    r0, [sp, #52]\n"            /* rows */
        "cmp    r0, #2\n"
        "blo    40f\n"
        /* Row pairs. */
        "30:\n"
        "str    r0, [sp, #4]\n"
        "ldr    r3, [sp, #8]\n"
        "add    r3, r2, r3\n"               /* the pair's second row */
        "ldr    r1, [sp, #56]\n"
        "ldr    r0, [sp, #0]\n"
        "ldrd   r12, lr, [r0]\n"
        "ldr    r0, [sp, #12]\n"
        "lsrs   r0, r0, #2\n"               /* passes of 4 steps; C: 2 steps more */
        "bcs    33f\n"
        "beq    35f\n"
        "31:\n"
        MRT_DENSE_PAIR_2STEPS
        "32:\n"
        MRT_DENSE_PAIR_2STEPS
        "subs   r0, r0, #1\n"
        "bne    31b\n"
        "b      35f\n"
        "33:\n"
        "adds   r0, r0, #1\n"
        "b      32b\n"
        "35:\n"
        "ldr    r0, [sp, #12]\n"
        "lsls   r0, r0, #31\n"              /* Z: steps even */
        "beq    36f\n"
        "ldrd   r4, r5, [r1]\n"
        "ldrd   r8, r9, [r2], #8\n"
        "smlad  r12, r4, r8, r12\n"
        "smlad  r12, r5, r9, r12\n"
        "ldrd   r8, r9, [r3], #8\n"
        "smlad  lr, r4, r8, lr\n"
        "smlad  lr, r5, r9, lr\n"
        "36:\n"
        "ldr    r0, [sp, #0]\n"
        "strd   r12, lr, [r0], #8\n"
        "str    r0, [sp, #0]\n"
        "mov    r2, r3\n"                   /* the next pair: the row after the second */
        "ldr    r0, [sp, #4]\n"
        "subs   r0, r0, #2\n"
        "cmp    r0, #2\n"
        "bhs    30b\n"
        /* A lone last row (r0: 0 or 1 rows left). */
        "40:\n"
        "cbz    r0, 50f\n"
        "ldr    r1, [sp, #56]\n"
        "ldr    r0, [sp, #0]\n"
        "ldr    r12, [r0]\n"
        "ldr    r0, [sp, #12]\n"
        "lsrs   r0, r0, #1\n"               /* passes of 2 steps */
        "beq    42f\n"
        "41:\n"
        MRT_DENSE_ROW_2STEPS
        "subs   r0, r0, #1\n"
        "bne    41b\n"
        "42:\n"
        "ldr    r0, [sp, #12]\n"
        "lsls   r0, r0, #31\n"
        "beq    43f\n"
        "ldrd   r4, r5, [r1]\n"
        "ldrd   r8, r9, [r2]\n"
        "smlad  r12, r4, r8, r12\n"
        "smlad  r12, r5, r9, r12\n"
        "43:\n"
        "ldr    r0, [sp, #0]\n"
        "str    r12, [r0]\n"
        "50:\n"
        "add    sp, sp, #16\n"
        "pop    {r4-r11, pc}\n");
}
