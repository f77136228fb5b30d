/* int8 dot-product microkernels for Arm's DSP extension (Cortex-M4, M7, M33).
 *
 * Called by generated dispatches (toolchain/codegen/dot_ukernel.py) for the packed
 * reduction of a tile of one input word against four weight rows: an int8 dense layer
 * or a 1x1 / 3x3 convolution tap, four output channels at a time. They are written in
 * assembly because the point is the register allocation: LLVM, given the same loop as
 * intrinsics, pulls the four rows' loads together to pair them into LDRDs, runs out of
 * registers for the accumulators and keeps one on the stack (28 instructions per 16
 * MACs on ad01's dense layers). Here every value has its register, and a step of 16
 * MACs is 1 LDR + 2 SXTB16 + 4 LDRD + 8 SMLAD = 15 instructions, plus SUBS + BNE per
 * two steps (the loop is unrolled once: 16 per step, for 60 bytes of code). The
 * arithmetic is that of the generated intrinsic loop (the same SXTB16 halves, SMLAD's
 * exact 32-bit wrap-around sums), so results are bit-identical to it and the reference.
 */
#include <stdint.h>

/* The 4 rows' part of a step: each row's two paired words (one LDRD) against the input's
 * two words of 16-bit pairs in r12 and r11, into its accumulator. r2-r5: the rows,
 * r6-r9: the accumulators. */
#define MRT_DSP_ROWS_MAC \
  "ldrd   r0, lr, [r2], #8\n" \
  "smlad  r6, r12, r0, r6\n" \
  "smlad  r6, r11, lr, r6\n" \
  "ldrd   r0, lr, [r3], #8\n" \
  "smlad  r7, r12, r0, r7\n" \
  "smlad  r7, r11, lr, r7\n" \
  "ldrd   r0, lr, [r4], #8\n" \
  "smlad  r8, r12, r0, r8\n" \
  "smlad  r8, r11, lr, r8\n" \
  "ldrd   r0, lr, [r5], #8\n" \
  "smlad  r9, r12, r0, r9\n" \
  "smlad  r9, r11, lr, r9\n"

/* One step: 4 int8 inputs (one word, split into two 16-bit pairs) against the 4 rows' paired
 * words, 16 MACs. r1: x. */
#define MRT_DSP_STEP_1X4 \
  "ldr    r11, [r1], #4\n" \
  "sxtb16 r12, r11\n"                /* x bytes 0 and 2 */ \
  "sxtb16 r11, r11, ror #8\n"        /* x bytes 1 and 3 */ \
  MRT_DSP_ROWS_MAC

/* r2: row 0 and r3: the bytes between rows -> r2-r5: rows 0-3; r6-r9: acc[0..3] from r0. */
#define MRT_DSP_ROWS_1X4 \
  "add    r4, r2, r3, lsl #1\n" \
  "add    r5, r4, r3\n" \
  "add    r3, r2, r3\n" \
  "ldm    r0, {r6-r9}\n"

/* r10 steps of STEP, two per pass: an odd count enters the first pass at its second. */
#define MRT_DSP_STEPS(STEP) \
  "lsrs   r10, r10, #1\n"  /* passes; carry: steps odd */ \
  "bcc    1f\n" \
  "adds   r10, r10, #1\n" \
  "b      2f\n" \
  "1:\n" \
  STEP \
  "2:\n" \
  STEP \
  "subs   r10, r10, #1\n" \
  "bne    1b\n"
#define MRT_DSP_STEPS_1X4 MRT_DSP_STEPS(MRT_DSP_STEP_1X4)

/* r10 steps of STEP, four per pass: a count of 4n + m (m > 0) enters the first pass at
 * its (5 - m)th step. Uses r0 before the loop. */
#define MRT_DSP_STEPS4(STEP) \
  "ands   r0, r10, #3\n"  /* m */ \
  "lsr    r10, r10, #2\n"  /* whole passes */ \
  "beq    5f\n" \
  "adds   r10, r10, #1\n" \
  "cmp    r0, #2\n" \
  "blo    8f\n" \
  "beq    7f\n" \
  "b      6f\n" \
  "5:\n" \
  STEP \
  "6:\n" \
  STEP \
  "7:\n" \
  STEP \
  "8:\n" \
  STEP \
  "subs   r10, r10, #1\n" \
  "bne    5b\n"

/* A whole 1x4 microkernel: the arguments (steps the 5th, on the stack), the rows and the
 * accumulators, STEPS, the accumulators stored back. r0 (acc) carries weights in the
 * loop, so it waits on the stack. */
#define MRT_DSP_1X4_BODY(STEPS) \
  "push   {r4-r11, lr}\n" \
  "ldr    r10, [sp, #36]\n" \
  "push   {r0}\n" \
  MRT_DSP_ROWS_1X4 \
  STEPS \
  "pop    {r0}\n" \
  "stm    r0, {r6-r9}\n" \
  "pop    {r4-r11, pc}\n"

/* acc[r] += sum over k < 4*steps of x[k] * w_r[k], r = 0..3, where w_r is row r of the
 * weights in the paired layout (kernel/paired.py: every 4 int8 weights stored as the two
 * words SXTB16 would make of them, 8 bytes) starting at w + r*row_bytes. steps >= 1;
 * x word-aligned, w and row_bytes multiples of 4. */
__attribute__((naked, used)) void mrt_dot_s8_paired_1x4(int32_t acc[4], const int8_t *x,
                                                         const int16_t *w,
                                                         uint32_t row_bytes,
                                                         uint32_t steps)
{
    __asm__ volatile(MRT_DSP_1X4_BODY(MRT_DSP_STEPS_1X4));
}

/* The same over `runs` runs of 4*steps inputs each, the input pointer moved on by
 * x_jump bytes after each run while the weights continue: a tile's whole 3x3 window in
 * one call, a run per window row (the columns of a row follow one another along the
 * channels, and so do the weights over ky, kx and the channels). runs >= 1. */
__attribute__((naked, used)) void mrt_dot_s8_paired_1x4_runs(int32_t acc[4], const int8_t *x,
                                                              const int16_t *w,
                                                              uint32_t row_bytes,
                                                              uint32_t steps, uint32_t runs,
                                                              int32_t x_jump)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "push   {r0}\n"                    /* acc; steps, runs, x_jump at sp + 40, 44, 48 */
        MRT_DSP_ROWS_1X4
        "3:\n"
        "ldr    r10, [sp, #40]\n"
        MRT_DSP_STEPS_1X4
        "ldr    r0, [sp, #48]\n"
        "add    r1, r1, r0\n"
        "ldr    r0, [sp, #44]\n"          /* runs left: the callee's own argument slot */
        "subs   r0, r0, #1\n"
        "str    r0, [sp, #44]\n"
        "bne    3b\n"
        "pop    {r0}\n"
        "stm    r0, {r6-r9}\n"
        "pop    {r4-r11, pc}\n");
}

/* One step of the same with the input already paired (mrt_pair_s8): its two words of
 * 16-bit pairs in one LDRD instead of a word and two SXTB16, 13 instructions for 16
 * MACs. r1: x (paired). */
#define MRT_DSP_STEP_1X4_PAIRED_X \
  "ldrd   r12, r11, [r1], #8\n"      /* x bytes 0 and 2, then 1 and 3 */ \
  MRT_DSP_ROWS_MAC

/* mrt_dot_s8_paired_1x4 for an input in the paired layout too (4*steps int8 values as
 * 2*steps words of 16-bit pairs, 8-byte steps): a pixel's channels paired once by
 * mrt_pair_s8 and read by every group of 4 output channels. x word-aligned. */
__attribute__((naked, used)) void mrt_dot_s16_paired_1x4(int32_t acc[4], const int16_t *x,
                                                          const int16_t *w,
                                                          uint32_t row_bytes,
                                                          uint32_t steps)
{
    __asm__ volatile(MRT_DSP_1X4_BODY(MRT_DSP_STEPS4(MRT_DSP_STEP_1X4_PAIRED_X)));
}

/* dst[0 .. 4*words) = src's 4*words int8 values in the paired layout (kernel/paired.py:
 * each word as SXTB16 of it, then of it rotated by 8): 4 instructions a word. words >= 1;
 * src and dst word-aligned. */
__attribute__((naked, used)) void mrt_pair_s8(int16_t *dst, const int8_t *src, uint32_t words)
{
    __asm__ volatile(
        "push   {r4, r5}\n"
        "1:\n"
        "ldr    r3, [r1], #4\n"
        "sxtb16 r4, r3\n"
        "sxtb16 r5, r3, ror #8\n"
        "strd   r4, r5, [r0], #8\n"
        "subs   r2, r2, #1\n"
        "bne    1b\n"
        "pop    {r4, r5}\n"
        "bx     lr\n");
}

/* Half a step of a 2x4 tile (two pixels x four output channels): the pixels' words of
 * this half (one LDRD of the interleaved staged input, mrt_pair2_s8) against the four
 * rows' words of this half (two LDRDs of the rows-interleaved weights, kernel/paired.py
 * `to_paired_rows`), 16 MACs in 11 instructions. r1: x, r2: w; r4-r7: pixel A's rows
 * 0-3, r8-r11: pixel B's; r0 and r12: the pixels' words, r3 and lr: two rows' words. */
#define MRT_DSP_HALF_2X4 \
  "ldrd   r0, r12, [r1], #8\n" \
  "ldrd   r3, lr, [r2], #8\n" \
  "smlad  r4, r0, r3, r4\n" \
  "smlad  r5, r0, lr, r5\n" \
  "smlad  r8, r12, r3, r8\n" \
  "smlad  r9, r12, lr, r9\n" \
  "ldrd   r3, lr, [r2], #8\n" \
  "smlad  r6, r0, r3, r6\n" \
  "smlad  r7, r0, lr, r7\n" \
  "smlad  r10, r12, r3, r10\n" \
  "smlad  r11, r12, lr, r11\n"
#define MRT_DSP_STEP_2X4 MRT_DSP_HALF_2X4 MRT_DSP_HALF_2X4

/* acc[p*4 + r] += sum over k < 4*steps of x_p[k] * w_r[k], p = 0, 1 (two pixels), r = 0..3
 * (four output channels): the input of both pixels staged by mrt_pair2_s8, the four
 * weight rows in the rows-interleaved paired layout (kernel/paired.py `to_paired_rows`:
 * per step the rows' first words, then their second words, 32 bytes). Every register
 * holds an accumulator or an operand, so the loop ends when the weight pointer reaches
 * its end, kept on the stack (3 instructions a pass): 16 steps (512 MACs) a pass, one
 * pass for 64 input channels, where passes of 4 spent 12 instructions a call on ends.
 * A count of 16n + m (m > 0) enters the first pass at its (17 - m)th step, through a
 * table of halfword offsets (TBH). steps >= 1; x 8-byte and w word aligned. */
#define MRT_DSP_S(N) #N ":\n" MRT_DSP_STEP_2X4
#define MRT_DSP_H(N) ".hword (" #N "f - 0b) / 2\n"
__attribute__((naked, used)) void mrt_dot_s16_paired_2x4(int32_t acc[8], const int16_t *x,
                                                          const int16_t *w, uint32_t steps)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "add    r12, r2, r3, lsl #5\n"      /* the weights' end */
        "push   {r0, r12}\n"
        "ldm    r0, {r4-r11}\n"
        "rsbs   r3, r3, #0\n"
        "and    r3, r3, #15\n"              /* the first pass's steps skipped */
        "tbh    [pc, r3, lsl #1]\n"
        "0:\n"
        MRT_DSP_H(10) MRT_DSP_H(11) MRT_DSP_H(12) MRT_DSP_H(13)
        MRT_DSP_H(14) MRT_DSP_H(15) MRT_DSP_H(16) MRT_DSP_H(17)
        MRT_DSP_H(18) MRT_DSP_H(19) MRT_DSP_H(20) MRT_DSP_H(21)
        MRT_DSP_H(22) MRT_DSP_H(23) MRT_DSP_H(24) MRT_DSP_H(25)
        MRT_DSP_S(10) MRT_DSP_S(11) MRT_DSP_S(12) MRT_DSP_S(13)
        MRT_DSP_S(14) MRT_DSP_S(15) MRT_DSP_S(16) MRT_DSP_S(17)
        MRT_DSP_S(18) MRT_DSP_S(19) MRT_DSP_S(20) MRT_DSP_S(21)
        MRT_DSP_S(22) MRT_DSP_S(23) MRT_DSP_S(24) MRT_DSP_S(25)
        "ldr    r0, [sp, #4]\n"
        "cmp    r2, r0\n"
        "bne    10b\n"
        "pop    {r0, r3}\n"
        "stm    r0, {r4-r11}\n"
        "pop    {r4-r11, pc}\n");
}

/* dst = two pixels' 4*words int8 values (a and b) staged for mrt_dot_s16_paired_2x4:
 * per 4 values, a's SXTB16 word, b's, then a's and b's of the word rotated by 8. Two
 * words a pass (an LDRD of each pixel, 8 SXTB16, 2 STMs: 7 instructions a word, where
 * one word a pass took 10); an odd count does one word first. words >= 1; a and b
 * word-aligned, dst 8-byte aligned. */
__attribute__((naked, used)) void mrt_pair2_s8(int16_t *dst, const int8_t *a, const int8_t *b,
                                                uint32_t words)
{
    __asm__ volatile(
        "push   {r4-r11}\n"
        "lsrs   r3, r3, #1\n"             /* passes; carry: words odd, Z: no pass */
        "bcc    2f\n"
        "ldr    r4, [r1], #4\n"
        "ldr    r5, [r2], #4\n"
        "sxtb16 r8, r4\n"
        "sxtb16 r9, r5\n"
        "sxtb16 r10, r4, ror #8\n"
        "sxtb16 r11, r5, ror #8\n"
        "stm    r0!, {r8-r11}\n"          /* the flags are still lsrs's */
        "2:\n"
        "beq    3f\n"
        "1:\n"
        "ldrd   r4, r5, [r1], #8\n"
        "ldrd   r6, r7, [r2], #8\n"
        "sxtb16 r8, r4\n"
        "sxtb16 r9, r6\n"
        "sxtb16 r10, r4, ror #8\n"
        "sxtb16 r11, r6, ror #8\n"
        "stm    r0!, {r8-r11}\n"
        "sxtb16 r8, r5\n"
        "sxtb16 r9, r7\n"
        "sxtb16 r10, r5, ror #8\n"
        "sxtb16 r11, r7, ror #8\n"
        "stm    r0!, {r8-r11}\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "3:\n"
        "pop    {r4-r11}\n"
        "bx     lr\n");
}

/* mrt_pair2_s8 for a whole window whose taps hold two words each (8 channels) and do not
 * follow one another (a dilated window: schedule/window_rows.py merges no taps): `rows`
 * rows of `cols` taps, the sources moving on by `col_jump` bytes from tap to tap and by
 * `row_next` more from a row's last tap to the next row's first. One call a window where
 * a call a tap spent ~26 instructions on 16 values (3x3 dilation 2 over 8 channels on
 * cortex-m4), here 16 a tap and 5 a row. Each tap's words are split in place (r4-r7)
 * with their rotated halves in r8, r9, so r10-r12 and lr are left for the counts and
 * jumps. cols, rows >= 1; a, b, col_jump and row_next multiples of 4; dst 8-byte
 * aligned. */
__attribute__((naked, used)) void mrt_pair2w2_s8(int16_t *dst, const int8_t *a,
                                                  const int8_t *b, uint32_t cols,
                                                  uint32_t rows, int32_t col_jump,
                                                  int32_t row_next)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "ldr    r12, [sp, #36]\n"          /* rows */
        "ldr    lr, [sp, #40]\n"           /* col_jump */
        "ldr    r11, [sp, #44]\n"          /* row_next */
        "1:\n"
        "mov    r10, r3\n"
        "2:\n"
        "ldrd   r4, r6, [r1]\n"
        "ldrd   r5, r7, [r2]\n"
        "add    r1, r1, lr\n"
        "add    r2, r2, lr\n"
        "sxtb16 r8, r4, ror #8\n"
        "sxtb16 r9, r5, ror #8\n"
        "sxtb16 r4, r4\n"
        "sxtb16 r5, r5\n"
        "stm    r0!, {r4, r5, r8, r9}\n"
        "sxtb16 r8, r6, ror #8\n"
        "sxtb16 r9, r7, ror #8\n"
        "sxtb16 r6, r6\n"
        "sxtb16 r7, r7\n"
        "stm    r0!, {r6-r9}\n"
        "subs   r10, r10, #1\n"
        "bne    2b\n"
        "add    r1, r1, r11\n"
        "add    r2, r2, r11\n"
        "subs   r12, r12, #1\n"
        "bne    1b\n"
        "pop    {r4-r11, pc}\n");
}

/* One word of each pixel (r_a, r_b) split in place into the staged layout's four words
 * (a's SXTB16, b's, then a's and b's of the word rotated by 8, through r10 and r11) and
 * stored. */
#define MRT_DSP_SPLIT2(RA, RB) \
  "sxtb16 r10, " RA ", ror #8\n" \
  "sxtb16 r11, " RB ", ror #8\n" \
  "sxtb16 " RA ", " RA "\n" \
  "sxtb16 " RB ", " RB "\n" \
  "stm    r0!, {" RA ", " RB ", r10, r11}\n"

/* mrt_pair2w2_s8 for taps of 16 channels whose last 3 meet zero weights (13 input
 * channels padded to 16: schedule/tap_rest.py, Nest.tap_rest): per tap its first 3
 * words (12 channels, 3 steps), then the 13th channel of every tap, 4 a step (3 steps
 * for 9-12 taps, the lanes past the last tap 0). A 3x3 window is 30 steps where all 16
 * channels took 36, 3/16 of them zero lanes. The 13th values are gathered as bytes on
 * the stack (a's at 0-11, b's at 12-23, zeroed first) and split like a tap's words at
 * the end. 25 instructions a tap. 9 <= cols * rows <= 12; cols, rows >= 1; a, b,
 * col_jump and row_next multiples of 4; dst 8-byte aligned. */
__attribute__((naked, used)) void mrt_pair2w3r_s8(int16_t *dst, const int8_t *a,
                                                   const int8_t *b, uint32_t cols,
                                                   uint32_t rows, int32_t col_jump,
                                                   int32_t row_next)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "sub    sp, sp, #40\n"
        "ldr    r4, [sp, #76]\n"           /* rows */
        "ldr    r5, [sp, #84]\n"           /* row_next */
        "strd   r4, r5, [sp, #24]\n"
        "str    r3, [sp, #32]\n"           /* cols, again each row */
        "ldr    r12, [sp, #80]\n"          /* col_jump */
        "movs   r4, #0\n"
        "movs   r5, #0\n"
        "movs   r6, #0\n"
        "movs   r7, #0\n"
        "movs   r8, #0\n"
        "movs   r9, #0\n"
        "stm    sp, {r4-r9}\n"             /* the gathered bytes: lanes past the taps 0 */
        "mov    lr, sp\n"
        "1:\n"
        "ldr    r3, [sp, #32]\n"
        "2:\n"
        "ldm    r1, {r4-r6}\n"
        "ldm    r2, {r7-r9}\n"
        "ldrb   r10, [r1, #12]\n"
        "ldrb   r11, [r2, #12]\n"
        "strb   r11, [lr, #12]\n"
        "strb   r10, [lr], #1\n"
        "add    r1, r1, r12\n"
        "add    r2, r2, r12\n"
        MRT_DSP_SPLIT2("r4", "r7")
        MRT_DSP_SPLIT2("r5", "r8")
        MRT_DSP_SPLIT2("r6", "r9")
        "subs   r3, r3, #1\n"
        "bne    2b\n"
        "ldrd   r10, r11, [sp, #24]\n"     /* rows left, row_next */
        "add    r1, r1, r11\n"
        "add    r2, r2, r11\n"
        "subs   r10, r10, #1\n"
        "str    r10, [sp, #24]\n"
        "bne    1b\n"
        "ldm    sp, {r4-r9}\n"             /* a's 13th values, then b's */
        MRT_DSP_SPLIT2("r4", "r7")
        MRT_DSP_SPLIT2("r5", "r8")
        MRT_DSP_SPLIT2("r6", "r9")
        "add    sp, sp, #40\n"
        "pop    {r4-r11, pc}\n");
}

/* mrt_pair2_s8 for sources at any byte: a window row of channels that are no multiple
 * of 4, merged with its columns (schedule/window_rows.py: 3x3 over 13 channels, a row
 * of 39 values staged as 40), starts where its first pixel does. LDR reads an unaligned
 * word on these cores (the firmware leaves CCR.UNALIGN_TRP clear), LDRD would fault, so
 * each pixel's two words of a pass are two LDRs: 8 instructions a word (mrt_pair2_s8's
 * 7). A separate function so that mrt_pair2_s8's callers pay no alignment test.
 * words >= 1; dst 8-byte aligned. */
__attribute__((naked, used)) void mrt_pair2u_s8(int16_t *dst, const int8_t *a,
                                                 const int8_t *b, uint32_t words)
{
    __asm__ volatile(
        "push   {r4-r11}\n"
        "lsrs   r3, r3, #1\n"             /* passes; carry: words odd, Z: no pass */
        "bcc    2f\n"
        "ldr    r4, [r1], #4\n"
        "ldr    r5, [r2], #4\n"
        "sxtb16 r8, r4\n"
        "sxtb16 r9, r5\n"
        "sxtb16 r10, r4, ror #8\n"
        "sxtb16 r11, r5, ror #8\n"
        "stm    r0!, {r8-r11}\n"          /* the flags are still lsrs's */
        "2:\n"
        "beq    3f\n"
        "1:\n"
        "ldr    r4, [r1], #4\n"
        "ldr    r6, [r2], #4\n"
        "ldr    r5, [r1], #4\n"
        "ldr    r7, [r2], #4\n"
        "sxtb16 r8, r4\n"
        "sxtb16 r9, r6\n"
        "sxtb16 r10, r4, ror #8\n"
        "sxtb16 r11, r6, ror #8\n"
        "stm    r0!, {r8-r11}\n"
        "sxtb16 r8, r5\n"
        "sxtb16 r9, r7\n"
        "sxtb16 r10, r5, ror #8\n"
        "sxtb16 r11, r7, ror #8\n"
        "stm    r0!, {r8-r11}\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "3:\n"
        "pop    {r4-r11}\n"
        "bx     lr\n");
}

/* One step of a 1x4 tile against the rows-interleaved weights: the pixel's two words of
 * 16-bit pairs (one LDRD of its input staged by mrt_pair_s8), the four rows' first words
 * (one LDM), then their second words (another), 8 SMLADs: 11 instructions per 16 MACs,
 * as the 2x4 tile's. r1: x, r2: w; r4-r7: the accumulators; r0 and r12: the pixel's
 * words; r8, r9, r11, lr: the rows' words (r10 counts). */
#define MRT_DSP_STEP_1X4I \
  "ldrd   r0, r12, [r1], #8\n" \
  "ldm    r2!, {r8, r9, r11, lr}\n" \
  "smlad  r4, r0, r8, r4\n" \
  "smlad  r5, r0, r9, r5\n" \
  "smlad  r6, r0, r11, r6\n" \
  "smlad  r7, r0, lr, r7\n" \
  "ldm    r2!, {r8, r9, r11, lr}\n" \
  "smlad  r4, r12, r8, r4\n" \
  "smlad  r5, r12, r9, r5\n" \
  "smlad  r6, r12, r11, r6\n" \
  "smlad  r7, r12, lr, r7\n"

/* acc[r] += sum over k < 4*steps of x[k] * w_r[k], r = 0..3, for one pixel staged alone
 * (mrt_pair_s8) against the weights mrt_dot_s16_paired_2x4 reads (four rows interleaved,
 * kernel/paired.py `to_paired_rows`): the last pixel of an odd dim of two-pixel tiles,
 * which the 2x4 call took twice and dropped half of. 4 steps a pass; a count of 4n + m
 * (m > 0) enters the first pass at its (5 - m)th step. steps >= 1; x 8-byte and w word
 * aligned. */
__attribute__((naked, used)) void mrt_dot_s16_paired_1x4i(int32_t acc[4], const int16_t *x,
                                                           const int16_t *w, uint32_t steps)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "mov    r10, r3\n"
        "push   {r0}\n"
        "ldm    r0, {r4-r7}\n"
        MRT_DSP_STEPS4(MRT_DSP_STEP_1X4I)
        "pop    {r0}\n"
        "stm    r0, {r4-r7}\n"
        "pop    {r4-r11, pc}\n");
}

/* One step of one output channel of two pixels against the rows-interleaved weights:
 * both pixels' words of each half (two LDRDs of the input mrt_pair2_s8 staged), the
 * row's word of each half (at 0 and 16 bytes of the group's 32-byte step: two LDRs), 4
 * SMLADs: 8 instructions per 8 MACs. r1: x, r2: w (the row's first word); r4, r5: the
 * pixels' accumulators; r6-r9: the input's words; r12, lr: the row's. */
#define MRT_DSP_STEP_2X1I \
  "ldrd   r6, r7, [r1], #8\n" \
  "ldr    r12, [r2], #16\n" \
  "ldrd   r8, r9, [r1], #8\n" \
  "ldr    lr, [r2], #16\n" \
  "smlad  r4, r6, r12, r4\n" \
  "smlad  r5, r7, r12, r5\n" \
  "smlad  r4, r8, lr, r4\n" \
  "smlad  r5, r9, lr, r5\n"

/* acc[p] += sum over k < 4*steps of x_p[k] * w_r[k], p = 0, 1, for the one row r of a
 * group of four interleaved rows (kernel/paired.py `to_paired_rows`) that w points into
 * (the group's start + 4*r bytes): an output channel past the last whole group of a
 * two-pixel tile (codegen/dot_ukernel.py _two_pixel_call), where the 2x4 call over a
 * group padded with zero rows would spend 22 instructions a step on 8 MACs. 4 steps a
 * pass, entered as mrt_dot_s16_paired_1x4i's. steps >= 1; x 8-byte and w word aligned. */
__attribute__((naked, used)) void mrt_dot_s16_paired_2x1i(int32_t acc[2], const int16_t *x,
                                                           const int16_t *w, uint32_t steps)
{
    __asm__ volatile(
        "push   {r4-r10, lr}\n"
        "mov    r10, r3\n"
        "push   {r0}\n"
        "ldm    r0, {r4, r5}\n"
        MRT_DSP_STEPS4(MRT_DSP_STEP_2X1I)
        "pop    {r0}\n"
        "stm    r0, {r4, r5}\n"
        "pop    {r4-r10, pc}\n");
}

/* One step of one output channel of one pixel (staged by mrt_pair_s8) against the
 * rows-interleaved weights: 5 instructions per 4 MACs. */
#define MRT_DSP_STEP_1X1I \
  "ldrd   r6, r7, [r1], #8\n" \
  "ldr    r12, [r2], #16\n" \
  "ldr    lr, [r2], #16\n" \
  "smlad  r4, r6, r12, r4\n" \
  "smlad  r4, r7, lr, r4\n"

/* mrt_dot_s16_paired_2x1i for the last pixel of an odd dim of two-pixel tiles, staged
 * alone: acc[0] += sum over k < 4*steps of x[k] * w_r[k]. */
__attribute__((naked, used)) void mrt_dot_s16_paired_1x1i(int32_t acc[1], const int16_t *x,
                                                           const int16_t *w, uint32_t steps)
{
    __asm__ volatile(
        "push   {r4-r10, lr}\n"
        "mov    r10, r3\n"
        "push   {r0}\n"
        "ldr    r4, [r0]\n"
        MRT_DSP_STEPS4(MRT_DSP_STEP_1X1I)
        "pop    {r0}\n"
        "str    r4, [r0]\n"
        "pop    {r4-r10, pc}\n");
}

/* One step of two adjacent output channels of two pixels against the rows-interleaved
 * weights: per half both pixels' words (one LDRD of the mrt_pair2_s8 staging), the two
 * rows' words (adjacent in the group's half: one LDRD), 4 SMLADs: 12 instructions per
 * 16 MACs. r1: x, r2: w (the first row's word); r4, r5: pixel A's rows, r8, r9: pixel
 * B's; r6, r7: the input's words; r12, lr: the rows'. */
#define MRT_DSP_HALF_2X2I \
  "ldrd   r6, r7, [r1], #8\n" \
  "ldrd   r12, lr, [r2], #16\n" \
  "smlad  r4, r6, r12, r4\n" \
  "smlad  r5, r6, lr, r5\n" \
  "smlad  r8, r7, r12, r8\n" \
  "smlad  r9, r7, lr, r9\n"
#define MRT_DSP_STEP_2X2I MRT_DSP_HALF_2X2I MRT_DSP_HALF_2X2I

/* acc[p*2 + i] += sum over k < 4*steps of x_p[k] * w_{r+i}[k], p, i = 0, 1: rows r and
 * r + 1 of a group of four interleaved rows (w: the group's start + 4*r bytes, r = 0 or
 * 2), two pixels staged by mrt_pair2_s8. Two output channels past the last whole group.
 * 4 steps a pass, entered as mrt_dot_s16_paired_1x4i's. steps >= 1. */
__attribute__((naked, used)) void mrt_dot_s16_paired_2x2i(int32_t acc[4], const int16_t *x,
                                                           const int16_t *w, uint32_t steps)
{
    __asm__ volatile(
        "push   {r4-r10, lr}\n"
        "mov    r10, r3\n"
        "push   {r0}\n"
        "ldm    r0, {r4, r5, r8, r9}\n"
        MRT_DSP_STEPS4(MRT_DSP_STEP_2X2I)
        "pop    {r0}\n"
        "stm    r0, {r4, r5, r8, r9}\n"
        "pop    {r4-r10, pc}\n");
}

/* One step of two adjacent rows for one pixel (staged by mrt_pair_s8): the pixel's two
 * words (one LDRD), each half's two rows' words (one LDRD each), 4 SMLADs: 7 per 8 MACs. */
#define MRT_DSP_STEP_1X2I \
  "ldrd   r6, r7, [r1], #8\n" \
  "ldrd   r12, lr, [r2], #16\n" \
  "smlad  r4, r6, r12, r4\n" \
  "smlad  r5, r6, lr, r5\n" \
  "ldrd   r12, lr, [r2], #16\n" \
  "smlad  r4, r7, r12, r4\n" \
  "smlad  r5, r7, lr, r5\n"

/* mrt_dot_s16_paired_2x2i for the last pixel of an odd dim, staged alone:
 * acc[i] += sum over k < 4*steps of x[k] * w_{r+i}[k], i = 0, 1. */
__attribute__((naked, used)) void mrt_dot_s16_paired_1x2i(int32_t acc[2], const int16_t *x,
                                                           const int16_t *w, uint32_t steps)
{
    __asm__ volatile(
        "push   {r4-r10, lr}\n"
        "mov    r10, r3\n"
        "push   {r0}\n"
        "ldm    r0, {r4, r5}\n"
        MRT_DSP_STEPS4(MRT_DSP_STEP_1X2I)
        "pop    {r0}\n"
        "stm    r0, {r4, r5}\n"
        "pop    {r4-r10, pc}\n");
}
