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

/* A row's weights for two steps into r8-r11 (one step: r8, r9) from the row pointer R,
 * which moves on: paired (kernel/paired.py: the two words SXTB16 would make, stored) one
 * LDM; int8 as stored (weights left unpaired by the flash budget) an LDRD and 4 SXTB16. */
#define MRT_W2_PAIRED(R) "ldm    " R "!, {r8-r11}\n"
#define MRT_W1_PAIRED(R) "ldrd   r8, r9, [" R "], #8\n"
#define MRT_W2_S8(R) \
  "ldrd   r8, r10, [" R "], #8\n" \
  "sxtb16 r9, r8, ror #8\n" \
  "sxtb16 r8, r8\n" \
  "sxtb16 r11, r10, ror #8\n" \
  "sxtb16 r10, r10\n"
#define MRT_W1_S8(R) \
  "ldr    r8, [" R "], #4\n" \
  "sxtb16 r9, r8, ror #8\n" \
  "sxtb16 r8, r8\n"

/* Two steps of a row pair: r1 the paired input, r2 and r3 the rows, r12 and lr their
 * sums; r4-r7 the input's 4 words, r8-r11 a row's. */
#define MRT_DENSE_PAIR_2STEPS(W2) \
  "ldm    r1!, {r4-r7}\n" \
  W2("r2") \
  "smlad  r12, r4, r8, r12\n" \
  "smlad  r12, r5, r9, r12\n" \
  "smlad  r12, r6, r10, r12\n" \
  "smlad  r12, r7, r11, r12\n" \
  W2("r3") \
  "smlad  lr, r4, r8, lr\n" \
  "smlad  lr, r5, r9, lr\n" \
  "smlad  lr, r6, r10, lr\n" \
  "smlad  lr, r7, r11, lr\n"

/* Two steps of a lone row: r2 the row, r12 its sum. */
#define MRT_DENSE_ROW_2STEPS(W2) \
  "ldm    r1!, {r4-r7}\n" \
  W2("r2") \
  "smlad  r12, r4, r8, r12\n" \
  "smlad  r12, r5, r9, r12\n" \
  "smlad  r12, r6, r10, r12\n" \
  "smlad  r12, r7, r11, r12\n"

/* One step of a row pair (an odd step count's first): r1 the paired input, r2 and r3
 * the rows, r12 and lr their sums. */
#define MRT_DENSE_PAIR_STEP(W1) \
  "ldrd   r4, r5, [r1], #8\n" \
  W1("r2") \
  "smlad  r12, r4, r8, r12\n" \
  "smlad  r12, r5, r9, r12\n" \
  W1("r3") \
  "smlad  lr, r4, r8, lr\n" \
  "smlad  lr, r5, r9, lr\n"

/* A pair's end: its sums stored, the next pair's first row the row after its second
 * (r3), back to the pair's start (30) while the next sums are at most the last pair's. */
#define MRT_DENSE_PAIR_END \
  "ldrd   r0, r4, [sp, #16]\n" \
  "strd   r12, lr, [r0], #8\n" \
  "str    r0, [sp, #16]\n" \
  "mov    r2, r3\n" \
  "cmp    r0, r4\n" \
  "bls    30b\n"

#define MRT_DENSE_ROWS_BODY(W2, W1, SHIFT) \
  "push   {r4-r11, lr}\n" \
  "sub    sp, sp, #32\n" \
  "ldr    r4, [sp, #68]\n"            /* rows */ \
  "add    r4, r0, r4, lsl #2\n" \
  "subs   r4, r4, #8\n" \
  "strd   r0, r4, [sp, #16]\n"        /* the next sums; the last pair's */ \
  "ldr    r12, [sp, #72]\n"           /* buf */ \
  "and    r5, r3, #3\n"               /* steps mod 4 (+ 4 with no pass of 4): the entry */ \
  "lsr    r4, r3, #2\n" \
  "subs   r4, r4, #1\n"               /* the passes of 4 after the first */ \
  "it     mi\n" \
  "addmi  r5, r5, #4\n" \
  "strd   r4, r12, [sp, #0]\n"        /* the passes; buf */ \
  "lsl    r6, r3, #" SHIFT "\n"       /* a row's bytes */ \
  "adr.w  r7, 90f\n" \
  "ldr    r7, [r7, r5, lsl #2]\n"     /* Thumb state: bit 0 set in the table */ \
  "strd   r6, r7, [sp, #8]\n"         /* a row's bytes; the entry */ \
  "str    r3, [sp, #24]\n" \
  "cbz    r1, 20f\n"                  /* already paired */ \
  /* The input paired into buf: 4 steps (16 values) a pass, then the others one by \
  * one. */ \
  "lsrs   r0, r3, #2\n" \
  "beq    12f\n" \
  "11:\n" \
  "ldm    r1!, {r4, r6, r8, r10}\n" \
  "sxtb16 r5, r4, ror #8\n" \
  "sxtb16 r4, r4\n" \
  "sxtb16 r7, r6, ror #8\n" \
  "sxtb16 r6, r6\n" \
  "sxtb16 r9, r8, ror #8\n" \
  "sxtb16 r8, r8\n" \
  "sxtb16 r11, r10, ror #8\n" \
  "sxtb16 r10, r10\n" \
  "stm    r12!, {r4-r11}\n" \
  "subs   r0, r0, #1\n" \
  "bne    11b\n" \
  /* The 1-3 words left: C bit 1 of steps (two words), N bit 0 (one); neither LDRD, \
  * SXTB16 nor STM sets the flags. */ \
  "12:\n" \
  "lsls   r0, r3, #31\n" \
  "bcc    13f\n" \
  "ldrd   r4, r6, [r1], #8\n" \
  "sxtb16 r5, r4, ror #8\n" \
  "sxtb16 r4, r4\n" \
  "sxtb16 r7, r6, ror #8\n" \
  "sxtb16 r6, r6\n" \
  "stm    r12!, {r4-r7}\n" \
  "13:\n" \
  "bpl    14f\n" \
  "ldr    r4, [r1], #4\n" \
  "sxtb16 r5, r4, ror #8\n" \
  "sxtb16 r4, r4\n" \
  "strd   r4, r5, [r12], #8\n" \
  /* A padded last word: its bytes past the real ones (tail: their mask, made at build \
  * time) cleared, the pad value 0, paired again. */ \
  "14:\n" \
  "ldr    r0, [sp, #76]\n" \
  "cbz    r0, 20f\n" \
  "ldr    r4, [r1, #-4]\n" \
  "bic    r4, r4, r0\n" \
  "sxtb16 r5, r4, ror #8\n" \
  "sxtb16 r4, r4\n" \
  "strd   r4, r5, [r12, #-8]\n" \
  "20:\n" \
  "ldrd   r0, r4, [sp, #16]\n" \
  "cmp    r0, r4\n" \
  "bhi    40f\n"                      /* a lone row */ \
  /* Row pairs: r0 the pair's sums at the top, its passes of 4 steps inside. One LDM \
  * from the frame gives the passes (r0), buf (r1), a row's bytes (r3) and jumps to \
  * the pair's entry (pc), chosen once a call by steps mod 4 and whether a pass of 4 \
  * follows (the table at 90); each entry makes r3 the second row (the first's \
  * pointer + a row) and, but steps mod 4 = 3 and steps 3, falls through into its \
  * passes (three copies). */ \
  "30:\n" \
  "ldrd   r12, lr, [r0]\n" \
  "ldm    sp, {r0, r1, r3, pc}\n" \
  "60:\n"                             /* steps mod 4 = 0 */ \
  "add    r3, r2, r3\n" \
  "61:\n" \
  MRT_DENSE_PAIR_2STEPS(W2) \
  MRT_DENSE_PAIR_2STEPS(W2) \
  "subs   r0, r0, #1\n" \
  "bpl    61b\n" \
  MRT_DENSE_PAIR_END \
  "b      40f\n" \
  "31:\n"                             /* 1: a step, then passes (steps >= 5) */ \
  "add    r3, r2, r3\n" \
  MRT_DENSE_PAIR_STEP(W1) \
  "62:\n" \
  MRT_DENSE_PAIR_2STEPS(W2) \
  MRT_DENSE_PAIR_2STEPS(W2) \
  "subs   r0, r0, #1\n" \
  "bpl    62b\n" \
  MRT_DENSE_PAIR_END \
  "b      40f\n" \
  "47:\n"                             /* steps 3 */ \
  "add    r3, r2, r3\n" \
  MRT_DENSE_PAIR_STEP(W1) \
  "b      48f\n" \
  "46:\n"                             /* steps 2 */ \
  "add    r3, r2, r3\n" \
  "48:\n" \
  MRT_DENSE_PAIR_2STEPS(W2) \
  "b      36f\n" \
  "33:\n"                             /* 3: a step, 2 steps, then passes */ \
  "add    r3, r2, r3\n" \
  MRT_DENSE_PAIR_STEP(W1) \
  "b      34f\n" \
  "32:\n"                             /* 2: 2 steps, then passes */ \
  "add    r3, r2, r3\n" \
  "34:\n" \
  MRT_DENSE_PAIR_2STEPS(W2) \
  "35:\n" \
  MRT_DENSE_PAIR_2STEPS(W2) \
  MRT_DENSE_PAIR_2STEPS(W2) \
  "subs   r0, r0, #1\n" \
  "bpl    35b\n" \
  "36:\n" \
  MRT_DENSE_PAIR_END \
  /* A lone last row, if any: the next sums are the last pair's + 8 (none) or + 4. */ \
  "40:\n" \
  "ldr    r4, [sp, #20]\n" \
  "subs   r4, r0, r4\n" \
  "cmp    r4, #4\n" \
  "bne    50f\n" \
  "ldr    r12, [r0]\n" \
  "ldr    r1, [sp, #4]\n" \
  "ldr    r0, [sp, #24]\n" \
  "lsrs   r0, r0, #1\n"               /* C: an odd step; Z: no pass of 2 */ \
  "bcc    41f\n" \
  "ldrd   r4, r5, [r1], #8\n" \
  W1("r2") \
  "smlad  r12, r4, r8, r12\n" \
  "smlad  r12, r5, r9, r12\n" \
  "41:\n" \
  "beq    43f\n" \
  "42:\n" \
  MRT_DENSE_ROW_2STEPS(W2) \
  "subs   r0, r0, #1\n" \
  "bne    42b\n" \
  "43:\n" \
  "ldr    r0, [sp, #16]\n" \
  "str    r12, [r0]\n" \
  "50:\n" \
  "add    sp, sp, #32\n" \
  "pop    {r4-r11, pc}\n" \
  /* A pair's entry by steps mod 4, + 4 for steps 2 and 3 (no pass of 4; 4, 5 unused), \
  * + 1: LDR PC needs bit 0 set for Thumb (the assembler does not set it for local \
  * labels). */ \
  ".p2align 2\n" \
  "90:\n" \
  ".word  60b + 1\n" \
  ".word  31b + 1\n" \
  ".word  32b + 1\n" \
  ".word  33b + 1\n" \
  ".word  60b + 1\n" \
  ".word  60b + 1\n" \
  ".word  46b + 1\n" \
  ".word  47b + 1\n"

/* sums[r] += sum over k < 4*steps of x[k] * w_r[k] for r < rows, where w_r, row r of the
 * weights in the paired layout (kernel/paired.py), starts at w + 8*steps*r bytes (the
 * rows follow one another). x: the int8 input (word-aligned), paired into buf (8*steps
 * bytes, word-aligned) first; or NULL when buf already holds it paired (a later tile of
 * the same pixel). tail: 0, or the mask of the last word's bytes past the input's
 * (a dense layer's inputs padded to whole words with 0: 0xff000000 for 3 real bytes,
 * 0xffffff00 for 1), which are taken as 0 (the word is read whole: it is aligned, so
 * never past the memory the input's last byte is in). Made at build time, the fixup is
 * 5 instructions where computing it from the count and pad value took 15. steps >= 2 (dense_rows_dim: 8 inputs; a window: 2
 * taps), rows >= 1; w and sums word-aligned.
 *
 * Frame: r4-r11 and lr pushed, then 32 bytes: sp+0 the passes of 4 steps a pair runs but
 * one, sp+4 buf, sp+8 a row's bytes, sp+12 a pair's entry (one LDM takes the four and
 * jumps), sp+16 the next sums, sp+20 the last pair's sums (sums + 4*rows - 8: pairs run
 * while the next sums are at most there), sp+24 steps; the arguments rows, buf and tail
 * at sp+68, 72 and 76.
 * A pair's steps are an odd step count's first step alone, then 2 steps where steps mod
 * 4 is 2 or 3, then passes of 4 (two of MRT_DENSE_PAIR_2STEPS). Its setup and end are 9
 * instructions (10 where steps mod 4 is 3 or steps is 3), 16 when each pair tested
 * steps' bits and read its frame word by word. */
__attribute__((naked, used)) void mrt_dense_s8_paired_rows(int32_t *sums, const int8_t *x,
                                                           const int16_t *w, uint32_t steps,
                                                           uint32_t rows, int16_t *buf,
                                                           uint32_t tail)
{
    __asm__ volatile(MRT_DENSE_ROWS_BODY(MRT_W2_PAIRED, MRT_W1_PAIRED, "3"));
}

/* The same with the weights int8 as stored (rows of 4*steps bytes, w + 4*steps*r): where
 * the flash budget leaves them unpaired (--optimize size), each word pair unpacked by 2
 * SXTB16 as it is read, 16 MACs in 2 LDM/LDRD... + 8 SXTB16 + 8 SMLAD per row pair. */
__attribute__((naked, used)) void mrt_dense_s8_rows(int32_t *sums, const int8_t *x,
                                                    const int8_t *w, uint32_t steps,
                                                    uint32_t rows, int16_t *buf, uint32_t tail)
{
    __asm__ volatile(MRT_DENSE_ROWS_BODY(MRT_W2_S8, MRT_W1_S8, "2"));
}

/* dst[0 .. words) = src[0 .. words), both word-aligned: 8 words an LDM / STM, then 4, 2, 1
 * by the bits of words (5 instructions and the call's 4 or so for 16 words a pass, 17
 * for 16). A dense-rows call of 12 or more rows whose sums start from a table (a bias)
 * gets them copied so (codegen/dense_rows.py INIT_ROWS): the generated code's copy of
 * 16 values went through the registers and spilled, ~45 instructions. */
__attribute__((naked, used)) void mrt_copy_words(uint32_t *dst, const uint32_t *src,
                                                 uint32_t words)
{
    __asm__ volatile(
        "push   {r4-r9, lr}\n"
        "lsrs   lr, r2, #3\n"
        "beq    2f\n"
        "1:\n"
        "ldm    r1!, {r3-r9, r12}\n"
        "stm    r0!, {r3-r9, r12}\n"
        "subs   lr, lr, #1\n"
        "bne    1b\n"
        "2:\n"
        "lsls   r3, r2, #30\n"             /* C: 4 words more; N: 2 */
        "bcc    3f\n"
        "ldm    r1!, {r3-r6}\n"
        "stm    r0!, {r3-r6}\n"
        "3:\n"
        "bpl    4f\n"
        "ldrd   r3, r4, [r1], #8\n"
        "strd   r3, r4, [r0], #8\n"
        "4:\n"
        "tst    r2, #1\n"
        "beq    5f\n"
        "ldr    r3, [r1]\n"
        "str    r3, [r0]\n"
        "5:\n"
        "pop    {r4-r9, pc}\n");
}

/* dst[0 .. 4*words) = src's 4*words int8 values in the paired layout (kernel/paired.py),
 * as mrt_pair_s8 (mrt_dot_dsp.c) makes them: 4 words a pass (an LDM, 8 SXTB16, an STM:
 * 3 instructions a word where a word at a time takes 6), then the others one by one
 * (and fewer than 4 words with no registers saved: as fast as mrt_pair_s8). src at any
 * byte (a first layer's window rows of 3 channels start at odd bytes): LDR reads it
 * unaligned on these cores, LDM would fault, so an unaligned src goes word by word.
 * The staging of a window for its microkernel calls (codegen/dot_ukernel.py
 * stage_input, loops/tables.py UKERNELS' pair_symbol). words >= 1; dst word-aligned. */
__attribute__((naked, used)) void mrt_pair4_s8(int16_t *dst, const int8_t *src, uint32_t words)
{
    __asm__ volatile(
        "cmp    r2, #4\n"
        "blo    2f\n"                       /* fewer than 4 words: one by one */
        "tst    r1, #3\n"
        "bne    2f\n"                       /* src unaligned: LDR takes it, LDM faults */
        "lsrs   r3, r2, #2\n"
        "push   {r4-r11}\n"
        "1:\n"
        "ldm    r1!, {r4, r6, r8, r10}\n"
        "sxtb16 r5, r4, ror #8\n"
        "sxtb16 r4, r4\n"
        "sxtb16 r7, r6, ror #8\n"
        "sxtb16 r6, r6\n"
        "sxtb16 r9, r8, ror #8\n"
        "sxtb16 r8, r8\n"
        "sxtb16 r11, r10, ror #8\n"
        "sxtb16 r10, r10\n"
        "stm    r0!, {r4-r11}\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "pop    {r4-r11}\n"
        "ands   r2, r2, #3\n"
        "beq    4f\n"
        "2:\n"
        "ldr    r3, [r1], #4\n"
        "sxtb16 r12, r3, ror #8\n"
        "sxtb16 r3, r3\n"
        "strd   r3, r12, [r0], #8\n"
        "subs   r2, r2, #1\n"
        "bne    2b\n"
        "4:\n"
        "bx     lr\n");
}
