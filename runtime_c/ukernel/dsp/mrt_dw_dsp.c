/* int8 depthwise 3x3 microkernels for Arm's DSP extension (Cortex-M4, M7, M33).
 *
 * Called by generated dispatches (toolchain/codegen/depthwise_pairs.py) for a 3x3
 * depthwise convolution of stride 1, two output rows at a time. SMLAD adds two products
 * to one accumulator, so its halves must be two taps of one output: two rows of the
 * window. The input rows are staged as 16-bit pairs of rows, A = rows (y-1, y) and
 * B = rows (y+1, y+2), one word per column and channel (mrt_dw_stage_pairs_s8), and the
 * weights as (w0, w1) and (w1, w2) per window column and channel. Per window column, row
 * y's output takes SMLAD(A, (w0, w1)) and SMLABT(B, (w1, w2)) (row y+1 times w2), row
 * y+1's SMLAD(B, (w1, w2)) and SMLATB(A, (w0, w1)) (row y times w0): 6 multiplies per
 * output of 9 MACs. The requantization is the folded form of kernel/requant.py, with
 * the clamp to int8 (SSAT): hi32(acc * M + ((K_hi + sign) << 32 | (2**30 | top bit))) >>
 * (s - 1), per channel M, K_hi and s - 1. Written in assembly for the same reason as
 * mrt_dot_dsp.c: every value has its register; LLVM, given the tile, spilled a third of
 * its instructions (docs/architecture.md, "Depthwise tiles"). The sums are SMLAD's exact
 * 32-bit wrap-around sums of int8 products, so the results are the reference's.
 */
#include <stdint.h>

/* dst[8*i] (a word every 8 bytes; mrt_dw_stage_pairs3_s8: 12) = row0[i] in the low half, row1[i] in the high half
 * (a null row: the pad value, MRT_DW_STAGE_PAD),
 * both sign-extended, for i < n: two input rows' values (a row's columns and channels,
 * contiguous in NHWC) as the 16-bit pairs the row-pair kernel reads, into one of the two
 * slots of the staged layout (column, channel, slot). 16 values per pass (4 LDRD, or 8
 * LDR where a row is not word-aligned; 8 PKHBT / PKHTB, 16 SXTB16, 16 STR): the packs first put
 * two values of each row in one word, (row0[i], row0[i+1], row1[i], row1[i+1]) as bytes,
 * whose SXTB16 and SXTB16 ROR #8 are the pairs of i and i+1, 3 ALU instructions for 2
 * pairs where extending each row first took 4 (and unaligned rows went value by value,
 * 6 instructions a pair); then passes of 8 and 4, then one by one. */
#define MRT_DW_STAGE4(R0, R1, AT, S) \
        "pkhbt  r8, " R0 ", " R1 ", lsl #16\n"  /* row0 values 0, 1; row1 values 0, 1 */ \
        "pkhtb  r9, " R1 ", " R0 ", asr #16\n"  /* values 2, 3 of both */ \
        "sxtb16 r10, r8\n"                      /* value 0: (row0, row1) */ \
        "sxtb16 r11, r8, ror #8\n"              /* value 1 */ \
        "str    r10, [r0, #" AT "0*" S "]\n" \
        "str    r11, [r0, #" AT "1*" S "]\n" \
        "sxtb16 r10, r9\n" \
        "sxtb16 r11, r9, ror #8\n" \
        "str    r10, [r0, #" AT "2*" S "]\n" \
        "str    r11, [r0, #" AT "3*" S "]\n"
#define MRT_DW_STAGE8(S) \
        MRT_DW_STAGE4("r4", "r6", "", S) \
        MRT_DW_STAGE4("r5", "r7", "4*" S "+", S) \
        "adds   r0, r0, #8*" S "\n"
/* The first 4 values of a pass of 16, value 0 kept in lr: the pass's last store writes
 * it and moves r0 on (post-indexed), where an ADD did. */
#define MRT_DW_STAGE4_FIRST(R0, R1, S) \
        "pkhbt  r8, " R0 ", " R1 ", lsl #16\n" \
        "pkhtb  r9, " R1 ", " R0 ", asr #16\n" \
        "sxtb16 lr, r8\n" \
        "sxtb16 r11, r8, ror #8\n" \
        "str    r11, [r0, #1*" S "]\n" \
        "sxtb16 r10, r9\n" \
        "sxtb16 r11, r9, ror #8\n" \
        "str    r10, [r0, #2*" S "]\n" \
        "str    r11, [r0, #3*" S "]\n"
/* 16 values from r4-r7 (values 0-7) and LOAD's next words (8-15): 46 instructions with
 * the loop's SUBS and BNE (8 a pass took 25). */
#define MRT_DW_STAGE16(S, LOAD) \
        MRT_DW_STAGE4_FIRST("r4", "r6", S) \
        MRT_DW_STAGE4("r5", "r7", "4*" S "+", S) \
        LOAD \
        MRT_DW_STAGE4("r4", "r6", "8*" S "+", S) \
        MRT_DW_STAGE4("r5", "r7", "12*" S "+", S) \
        "str    lr, [r0], #16*" S "\n" \
        "subs   r12, r12, #1\n"
#define MRT_DW_LOAD_ALIGNED \
        "ldrd   r4, r5, [r1], #8\n" \
        "ldrd   r6, r7, [r2], #8\n"
/* A row not word-aligned (channels not a multiple of 4): single-word LDRs, which ARMv7-M
 * and v8-M Mainline do unaligned (LDRD would fault). Where a row is 2 mod 4 bytes long
 * (an odd number of channels over 6 or 10 columns) one row of a pair is aligned: its
 * LDRD and the other's two LDRs, 48 instructions for 16 values where 4 LDRs took 50. */
#define MRT_DW_LOAD_UNALIGNED \
        "ldr    r4, [r1], #4\n" \
        "ldr    r5, [r1], #4\n" \
        "ldr    r6, [r2], #4\n" \
        "ldr    r7, [r2], #4\n"
#define MRT_DW_LOAD_ALIGNED0 \
        "ldrd   r4, r5, [r1], #8\n" \
        "ldr    r6, [r2], #4\n" \
        "ldr    r7, [r2], #4\n"
#define MRT_DW_LOAD_ALIGNED1 \
        "ldr    r4, [r1], #4\n" \
        "ldr    r5, [r1], #4\n" \
        "ldrd   r6, r7, [r2], #8\n"
/* Passes of 16 then one of 8 with LOAD; L, E: the pass loop's and the 8's labels. */
#define MRT_DW_STAGE_PASSES(S, LOAD, L, E) \
        "lsrs   r12, r3, #4\n" \
        "beq    " E "f\n" \
        L ":\n" \
        LOAD \
        MRT_DW_STAGE16(S, LOAD) \
        "bne    " L "b\n" \
        E ":\n" \
        "tst    r3, #8\n" \
        "beq    2f\n" \
        LOAD \
        MRT_DW_STAGE8(S) \
        "b      2f\n"
/* A row outside the input (a null pointer): its values are the pad value, whose pair the
 * staged buffer's right pad column already holds at dst + n*S (PADPAIR loads it into
 * r11), so no row of pad values is needed. Pairs (pad, row1) and (row0, pad), 4 values a
 * pass (LDR, 2 SXTB16, 4 PKHBT / PKHTB, 4 STR), or (pad, pad) everywhere: only the pairs
 * at the map's top and bottom (4 STRs a pass with the loop's SUBS and BNE, where a value
 * a pass took 12 for 4: a 19x6 map's last pair, 19x6 over 4 channels -33). */
/* 4 values of ROW into r7-r10 (P0-P3 the packs of values 0-3 with the pad pair r11),
 * stored at AT (value 0 by STORE0: into lr, kept for a pass's last store). */
#define MRT_DW_PAD4_AT(ROW, P0, P1, P2, P3, AT, S, V0, STORE0) \
        "ldr    r4, [" ROW "], #4\n" \
        "sxtb16 r5, r4\n"                       /* values 0, 2 */ \
        "sxtb16 r6, r4, ror #8\n"               /* values 1, 3 */ \
        P0(V0) P1 P2 P3 \
        STORE0 \
        "str    r8, [r0, #" AT "1*" S "]\n" \
        "str    r9, [r0, #" AT "2*" S "]\n" \
        "str    r10, [r0, #" AT "3*" S "]\n"
/* Passes of 16 values (46 instructions, as the rows' own), then of 4, then one by one. */
#define MRT_DW_PAD_LOOPS(ROW, P0, P1, P2, P3, S, L) \
        "lsrs   r12, r3, #4\n" \
        "beq    " L "1f\n" \
        L "0:\n" \
        MRT_DW_PAD4_AT(ROW, P0, P1, P2, P3, "", S, "lr", "") \
        MRT_DW_PAD4_AT(ROW, P0, P1, P2, P3, "4*" S "+", S, "r7", \
                       "str    r7, [r0, #4*" S "]\n") \
        MRT_DW_PAD4_AT(ROW, P0, P1, P2, P3, "8*" S "+", S, "r7", \
                       "str    r7, [r0, #8*" S "]\n") \
        MRT_DW_PAD4_AT(ROW, P0, P1, P2, P3, "12*" S "+", S, "r7", \
                       "str    r7, [r0, #12*" S "]\n") \
        "str    lr, [r0], #16*" S "\n" \
        "subs   r12, r12, #1\n" \
        "bne    " L "0b\n" \
        L "1:\n" \
        "ubfx   r12, r3, #2, #2\n" \
        "cmp    r12, #0\n" \
        "beq    " L "3f\n" \
        L "2:\n" \
        MRT_DW_PAD4_AT(ROW, P0, P1, P2, P3, "", S, "r7", "str    r7, [r0]\n") \
        "adds   r0, r0, #4*" S "\n" \
        "subs   r12, r12, #1\n" \
        "bne    " L "2b\n" \
        L "3:\n" \
        "ands   r3, r3, #3\n" \
        "beq    29f\n"
/* (row0, pad) and (pad, row1): value 0's pack names its destination register. */
#define MRT_DW_PACK_R0(D) "pkhbt  " D ", r5, r11\n"
#define MRT_DW_PACK_R1(D) "pkhbt  " D ", r11, r5, lsl #16\n"
#define MRT_DW_STAGE_PAD(S, PADPAIR) \
        PADPAIR \
        "cmp    r1, #0\n" \
        "beq    21f\n" \
        /* row1 outside: (row0, pad) */ \
        MRT_DW_PAD_LOOPS("r1", MRT_DW_PACK_R0, "pkhbt  r8, r6, r11\n", \
                         "pkhtb  r9, r11, r5, asr #16\n", "pkhtb  r10, r11, r6, asr #16\n", \
                         S, "4") \
        "26:\n" \
        "ldrsb  r4, [r1], #1\n" \
        "pkhbt  r4, r4, r11\n" \
        "str    r4, [r0], #" S "\n" \
        "subs   r3, r3, #1\n" \
        "bne    26b\n" \
        "b      29f\n" \
        "21:\n" \
        "cmp    r2, #0\n" \
        "beq    28f\n" \
        /* row0 outside: (pad, row1) */ \
        MRT_DW_PAD_LOOPS("r2", MRT_DW_PACK_R1, "pkhbt  r8, r11, r6, lsl #16\n", \
                         "pkhtb  r9, r5, r11\n", "pkhtb  r10, r6, r11\n", S, "5") \
        "27:\n" \
        "ldrsb  r4, [r2], #1\n" \
        "pkhbt  r4, r11, r4, lsl #16\n" \
        "str    r4, [r0], #" S "\n" \
        "subs   r3, r3, #1\n" \
        "bne    27b\n" \
        "b      29f\n" \
        "28:\n"                                 /* both outside: 4 values a pass */ \
        "cmp    r3, #4\n" \
        "blo    30f\n" \
        "lsrs   r12, r3, #2\n" \
        "31:\n" \
        "str    r11, [r0, #" S "]\n" \
        "str    r11, [r0, #2*" S "]\n" \
        "str    r11, [r0, #3*" S "]\n" \
        "str    r11, [r0], #4*" S "\n" \
        "subs   r12, r12, #1\n" \
        "bne    31b\n" \
        "ands   r3, r3, #3\n" \
        "beq    29f\n" \
        "30:\n"                                 /* (n >= 1: a row is not empty) */ \
        "str    r11, [r0], #" S "\n" \
        "subs   r3, r3, #1\n" \
        "bne    30b\n" \
        "29:\n" \
        "pop    {r4-r11, pc}\n"
#define MRT_DW_PADPAIR8 "ldr    r11, [r0, r3, lsl #3]\n"
#define MRT_DW_PADPAIR12 "add    r12, r3, r3, lsl #1\n" "ldr    r11, [r0, r12, lsl #2]\n"

/* The staging of 2-slot (S "8") or 3-slot (S "12") layouts: passes of 16 values, then
 * one of 8, one of 4, then one by one. */
#define MRT_DW_STAGE_BODY(S, PADPAIR) \
        "push   {r4-r11, lr}\n" \
        "cmp    r1, #0\n" \
        "it     ne\n" \
        "cmpne  r2, #0\n" \
        "beq    20f\n" \
        "tst    r1, #3\n" \
        "bne    7f\n" \
        "tst    r2, #3\n" \
        "bne    4f\n" \
        MRT_DW_STAGE_PASSES(S, MRT_DW_LOAD_ALIGNED, "1", "8") \
        "4:\n" \
        MRT_DW_STAGE_PASSES(S, MRT_DW_LOAD_ALIGNED0, "10", "11") \
        "7:\n" \
        "tst    r2, #3\n" \
        "bne    9f\n" \
        MRT_DW_STAGE_PASSES(S, MRT_DW_LOAD_ALIGNED1, "12", "13") \
        "9:\n" \
        MRT_DW_STAGE_PASSES(S, MRT_DW_LOAD_UNALIGNED, "14", "15") \
        "2:\n" \
        "tst    r3, #4\n" \
        "beq    3f\n" \
        "ldr    r4, [r1], #4\n" \
        "ldr    r6, [r2], #4\n" \
        MRT_DW_STAGE4("r4", "r6", "", S) \
        "adds   r0, r0, #4*" S "\n" \
        "3:\n" \
        "ands   r3, r3, #3\n" \
        "beq    6f\n" \
        "5:\n" \
        "ldrsb  r4, [r1], #1\n" \
        "ldrsb  r5, [r2], #1\n" \
        "pkhbt  r4, r4, r5, lsl #16\n" \
        "str    r4, [r0], #" S "\n" \
        "subs   r3, r3, #1\n" \
        "bne    5b\n" \
        "6:\n" \
        "pop    {r4-r11, pc}\n" \
        "20:\n" \
        MRT_DW_STAGE_PAD(S, PADPAIR)

__attribute__((naked, used)) void mrt_dw_stage_pairs_s8(int32_t *dst, const int8_t *row0,
                                                         const int8_t *row1, uint32_t n)
{
    __asm__ volatile(MRT_DW_STAGE_BODY("8", MRT_DW_PADPAIR8));
}

/* dst[i] = word for i < n: the dispatch's row of pad values and the pad columns of its
 * staged rows, 8 words an STM. Written as a loop of word stores in the dispatch, LLVM
 * made it a call of the runtime's memset, which stores a byte at a time (6 instructions
 * a byte: 0.3-0.5 of the 16-17 instructions an output of a layer over 64 channels). */
__attribute__((naked, used)) void mrt_dw_fill_words(uint32_t *dst, uint32_t word, uint32_t n)
{
    __asm__ volatile(
        "push   {r4-r9}\n"
        "mov    r3, r1\n"
        "mov    r4, r1\n"
        "mov    r5, r1\n"
        "mov    r6, r1\n"
        "mov    r7, r1\n"
        "mov    r8, r1\n"
        "mov    r9, r1\n"
        "lsrs   r12, r2, #3\n"
        "beq    2f\n"
        "1:\n"
        "stm    r0!, {r1, r3, r4, r5, r6, r7, r8, r9}\n"
        "subs   r12, r12, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r2, r2, #7\n"
        "beq    4f\n"
        "3:\n"
        "str    r1, [r0], #4\n"
        "subs   r2, r2, #1\n"
        "bne    3b\n"
        "4:\n"
        "pop    {r4-r9}\n"
        "bx     lr\n");
}

/* dst0[i] = dst1[i] = word for i < n: the two pad columns of the row-pair dispatches'
 * staged rows by one call, both stores in one loop (8 words an STM each, then 4, then
 * one by one): 26 instructions for 24 words a column (8 channels, 3 slots) where two
 * calls of mrt_dw_fill_words took 46 and the dispatch's set-up of a second call, and 22
 * for 12 words (4 channels) where they took 58, which layers of few channels (10x10
 * over 1-8) do not earn back. */
__attribute__((naked, used)) void mrt_dw_fill_two_words(uint32_t *dst0, uint32_t *dst1,
                                                         uint32_t word, uint32_t n)
{
    __asm__ volatile(
        "push   {r4-r10}\n"
        "mov    r4, r2\n"
        "mov    r5, r2\n"
        "mov    r6, r2\n"
        "mov    r7, r2\n"
        "mov    r8, r2\n"
        "mov    r9, r2\n"
        "mov    r10, r2\n"
        "lsrs   r12, r3, #3\n"
        "beq    2f\n"
        "1:\n"
        "stm    r0!, {r2, r4, r5, r6, r7, r8, r9, r10}\n"
        "stm    r1!, {r2, r4, r5, r6, r7, r8, r9, r10}\n"
        "subs   r12, r12, #1\n"
        "bne    1b\n"
        "2:\n"
        "tst    r3, #4\n"
        "beq    5f\n"
        "stm    r0!, {r2, r4, r5, r6}\n"
        "stm    r1!, {r2, r4, r5, r6}\n"
        "5:\n"
        "ands   r3, r3, #3\n"
        "beq    4f\n"
        "3:\n"
        "str    r2, [r0], #4\n"
        "str    r2, [r1], #4\n"
        "subs   r3, r3, #1\n"
        "bne    3b\n"
        "4:\n"
        "pop    {r4-r10}\n"
        "bx     lr\n");
}

/* The same for n < 16 (pad columns of 1-5 channels' 3 slots): 4 copies of the word
 * where 8 took 4 more MOVs, a pass of 8 as two STMs a column: 18 instructions for 12
 * words (4 channels) where the above takes 22. */
__attribute__((naked, used)) void mrt_dw_fill_two_words_small(uint32_t *dst0, uint32_t *dst1,
                                                              uint32_t word, uint32_t n)
{
    __asm__ volatile(
        "push   {r4-r6}\n"
        "mov    r4, r2\n"
        "mov    r5, r2\n"
        "mov    r6, r2\n"
        "tst    r3, #8\n"
        "beq    1f\n"
        "stm    r0!, {r2, r4, r5, r6}\n"
        "stm    r0!, {r2, r4, r5, r6}\n"
        "stm    r1!, {r2, r4, r5, r6}\n"
        "stm    r1!, {r2, r4, r5, r6}\n"
        "1:\n"
        "tst    r3, #4\n"
        "beq    2f\n"
        "stm    r0!, {r2, r4, r5, r6}\n"
        "stm    r1!, {r2, r4, r5, r6}\n"
        "2:\n"
        "ands   r3, r3, #3\n"
        "beq    4f\n"
        "3:\n"
        "str    r2, [r0], #4\n"
        "str    r2, [r1], #4\n"
        "subs   r3, r3, #1\n"
        "bne    3b\n"
        "4:\n"
        "pop    {r4-r6}\n"
        "bx     lr\n");
}

/* The same into one of the three slots of the 4-row kernel's layout: dst[12*i]. */
__attribute__((naked, used)) void mrt_dw_stage_pairs3_s8(int32_t *dst, const int8_t *row0,
                                                          const int8_t *row1, uint32_t n)
{
    __asm__ volatile(MRT_DW_STAGE_BODY("12", MRT_DW_PADPAIR12));
}

/* Two pairs of rows at once into two adjacent slots of the 4-row kernel's layout (the
 * first argument is dst - 3 words, the base of the pre-indexed stores): dst[12*i]
 * = (a[i], b[i]) and dst[12*i + 1] = (c[i], d[i]), halves as mrt_dw_stage_pairs3_s8's, for
 * i < n, every row inside the input (no null row; the _pad_a and _pad_d variants below
 * read a pad row's 8 bytes in place). The 4-row dispatch stages a tile's two new pairs in
 * slot 1 and slot 0 or 2 (codegen/depthwise_pairs.py: odd pairs in slot 1, even ones
 * alternating 0 and 2; a map of 4q + 2 rows run two rows first the other way round), so
 * a value's two words are adjacent and one STRD stores both,
 * where each pair's own call stored a word at a time: 8 values a pass (LDRD of a and b
 * where both are word-aligned, else LDRs, which ARMv7-M and v8-M Mainline do unaligned;
 * LDRs of c and d, 8 PKHBT / PKHTB, 16 SXTB16, 8 STRD) in 40 instructions with the loop's
 * SUBS and BNE for 16 staged words (42 unaligned) against 46 for 16 by pairs, and one
 * call where there were two; then a pass of 4, then one by one. */
/* Row a's and row d's post-increments (A4, A8, A1; D4, D1): "" where the row is a pad
 * row, an 8-byte word pair of pad values read again and again (the _pad_a and _pad_d
 * stagers: the pairs at a 10x10-like map's top and bottom, codegen/depthwise_pairs.py). */
#define MRT_DW_TWO_AB_ALIGNED(A8, A4) \
        "ldrd   r5, r6, [r1]" A8 "\n" \
        "ldrd   r7, r8, [r2], #8\n"
#define MRT_DW_TWO_AB_UNALIGNED(A8, A4) \
        "ldr    r5, [r1]" A4 "\n" \
        "ldr    r6, [r1]" A4 "\n" \
        "ldr    r7, [r2], #4\n" \
        "ldr    r8, [r2], #4\n"
/* Values 0-3 (AB: the packs of a and b, CD: of c and d) as 4 STRDs from AT (LAST: the last
 * one, whose pre-indexed writeback moves r0 on: r0 stays 12 bytes before the next value
 * to store, so no ADD). */
#define MRT_DW_TWO_STORE4(AB0, AB1, CD0, CD1, AT, LAST) \
        "sxtb16 r6, " AB0 "\n" \
        "sxtb16 lr, " CD0 "\n" \
        "strd   r6, lr, [r0, #" AT "]\n" \
        "sxtb16 r6, " AB0 ", ror #8\n" \
        "sxtb16 lr, " CD0 ", ror #8\n" \
        "strd   r6, lr, [r0, #" AT "+12]\n" \
        "sxtb16 r6, " AB1 "\n" \
        "sxtb16 lr, " CD1 "\n" \
        "strd   r6, lr, [r0, #" AT "+24]\n" \
        "sxtb16 r6, " AB1 ", ror #8\n" \
        "sxtb16 lr, " CD1 ", ror #8\n" \
        LAST
#define MRT_DW_TWO_PASS8(LOADAB, A8, A4, C4, D4, L) \
        L ":\n" \
        LOADAB(A8, A4) \
        "pkhbt  r9, r5, r7, lsl #16\n"          /* a and b, values 0, 1 */ \
        "pkhtb  r7, r7, r5, asr #16\n"          /* values 2, 3 */ \
        "pkhbt  r5, r6, r8, lsl #16\n"          /* values 4, 5 */ \
        "pkhtb  r8, r8, r6, asr #16\n"          /* values 6, 7 */ \
        "ldr    r6, [r3]" C4 "\n" \
        "ldr    r10, [r4]" D4 "\n" \
        "pkhbt  r11, r6, r10, lsl #16\n"        /* c and d, values 0, 1 */ \
        "pkhtb  r10, r10, r6, asr #16\n"        /* values 2, 3 */ \
        MRT_DW_TWO_STORE4("r9", "r7", "r11", "r10", "12", "strd   r6, lr, [r0, #48]\n") \
        "ldr    r6, [r3]" C4 "\n" \
        "ldr    r9, [r4]" D4 "\n" \
        "pkhbt  r11, r6, r9, lsl #16\n"         /* values 4, 5 */ \
        "pkhtb  r9, r9, r6, asr #16\n"          /* values 6, 7 */ \
        MRT_DW_TWO_STORE4("r5", "r8", "r11", "r9", "60", "strd   r6, lr, [r0, #96]!\n") \
        "subs   r12, r12, #1\n" \
        "bne    " L "b\n"
/* One value of each row (the last 1-3, unrolled: the flags of n's low bits choose, where
 * a loop of them took 2 more a value and its count 2 more a call). */
#define MRT_DW_TWO_ONE(A1, C1, D1) \
        "ldrsb  r5, [r1]" A1 "\n" \
        "ldrsb  r6, [r2], #1\n" \
        "ldrsb  r7, [r3]" C1 "\n" \
        "ldrsb  r8, [r4]" D1 "\n" \
        "pkhbt  r5, r5, r6, lsl #16\n" \
        "pkhbt  r7, r7, r8, lsl #16\n" \
        "strd   r5, r7, [r0, #12]!\n"
#define MRT_DW_TWO_BODY(A8, A4, A1, C4, C1, D4, D1) \
        "push   {r4-r11, lr}\n" \
        "ldrd   r4, r11, [sp, #36]\n"           /* d, n (r0: dst - 12, the caller's) */ \
        "lsrs   r12, r11, #3\n" \
        "beq    3f\n" \
        "orr    r5, r1, r2\n" \
        "tst    r5, #3\n" \
        "bne    2f\n" \
        MRT_DW_TWO_PASS8(MRT_DW_TWO_AB_ALIGNED, A8, A4, C4, D4, "1") \
        "b      3f\n" \
        MRT_DW_TWO_PASS8(MRT_DW_TWO_AB_UNALIGNED, A8, A4, C4, D4, "2") \
        "3:\n" \
        "ldr    r11, [sp, #40]\n"             /* n again (the passes' register) */ \
        "lsls   r12, r11, #30\n"              /* C: n & 4, N: n & 2, Z: none of n & 3 */ \
        "bcc    4f\n" \
        "ldr    r5, [r1]" A4 "\n" \
        "ldr    r7, [r2], #4\n" \
        "ldr    r6, [r3]" C4 "\n" \
        "ldr    r10, [r4]" D4 "\n" \
        "pkhbt  r9, r5, r7, lsl #16\n" \
        "pkhtb  r7, r7, r5, asr #16\n" \
        "pkhbt  r8, r6, r10, lsl #16\n" \
        "pkhtb  r10, r10, r6, asr #16\n" \
        MRT_DW_TWO_STORE4("r9", "r7", "r8", "r10", "12", "strd   r6, lr, [r0, #48]!\n") \
        "4:\n"                                 /* (the pass of 4 keeps the flags) */ \
        "beq    6f\n" \
        "bpl    5f\n" \
        MRT_DW_TWO_ONE(A1, C1, D1) \
        MRT_DW_TWO_ONE(A1, C1, D1) \
        "5:\n" \
        "tst    r11, #1\n" \
        "beq    6f\n" \
        MRT_DW_TWO_ONE(A1, C1, D1) \
        "6:\n" \
        "pop    {r4-r11, pc}\n"

__attribute__((naked, used)) void mrt_dw_stage_two_pairs3_s8(int32_t *dst_less_3, const int8_t *a,
                                                              const int8_t *b, const int8_t *c,
                                                              const int8_t *d, uint32_t n)
{
    __asm__ volatile(MRT_DW_TWO_BODY(", #8", ", #4", ", #1", ", #4", ", #1", ", #4", ", #1"));
}

/* The same where row a is a pad row (a: 8 bytes of the pad value, read in place). */
__attribute__((naked, used)) void mrt_dw_stage_two_pairs3_pad_a_s8(
    int32_t *dst_less_3, const int8_t *a, const int8_t *b, const int8_t *c, const int8_t *d,
    uint32_t n)
{
    __asm__ volatile(MRT_DW_TWO_BODY("", "", "", ", #4", ", #1", ", #4", ", #1"));
}

/* The same where row d is a pad row. */
__attribute__((naked, used)) void mrt_dw_stage_two_pairs3_pad_d_s8(
    int32_t *dst_less_3, const int8_t *a, const int8_t *b, const int8_t *c, const int8_t *d,
    uint32_t n)
{
    __asm__ volatile(MRT_DW_TWO_BODY(", #8", ", #4", ", #1", ", #4", ", #1", "", ""));
}

/* The same where rows c and d are pad rows (both read in place from the 8 bytes of the
 * pad value): the last pair of a SAME map of 4q + 3 rows, rows (h, h + 1), staged with
 * the pair before it (the 3-row remainder's two new pairs) by one call, where two calls
 * of mrt_dw_stage_pairs3_s8 each paid their entry, set-up and exit. */
__attribute__((naked, used)) void mrt_dw_stage_two_pairs3_pad_cd_s8(
    int32_t *dst_less_3, const int8_t *a, const int8_t *b, const int8_t *c, const int8_t *d,
    uint32_t n)
{
    __asm__ volatile(MRT_DW_TWO_BODY(", #8", ", #4", ", #1", "", "", "", ""));
}

/* One output column and channel, both rows: A and B are the registers the staged
 * words' slots were loaded into (r9: slot 0, r10: slot 1). r0-r2: the three window
 * columns' staged words, r3: the channel's record, r4: the output (row y), r5: the
 * distance to row y+1's output; r7, r8: the two sums. */
#define MRT_DW_COLUMN(P, A, B) MRT_DW_COLUMN_AT("[" P "], #8", A, B)
/* The same without moving the column's pointer: the first of two output channels that
 * read one input channel (a depth multiplier of 2). */
#define MRT_DW_COLUMN_STAY(P, A, B) MRT_DW_COLUMN_AT("[" P "]", A, B)
/* The first window column: the bias comes with its weights in one LDM (into lr), and
 * both sums start from it. */
#define MRT_DW_COLUMN_FIRST(P, A, B) MRT_DW_FIRST_AT("[" P "], #8", A, B)
#define MRT_DW_COLUMN_STAY_FIRST(P, A, B) MRT_DW_FIRST_AT("[" P "]", A, B)
#define MRT_DW_FIRST_AT(ADDRESS, A, B) \
  "ldm    r3!, {r11, r12, lr}\n"    /* (w0, w1), (w1, w2), the bias */ \
  "ldrd   r9, r10, " ADDRESS "\n" \
  "smlatb r8, " A ", r11, lr\n" \
  "smlad  r7, " A ", r11, lr\n" \
  "smlabt r7, " B ", r12, r7\n" \
  "smlad  r8, " B ", r12, r8\n"
#define MRT_DW_COLUMN_AT(ADDRESS, A, B) \
  "ldrd   r9, r10, " ADDRESS "\n" \
  "ldrd   r11, r12, [r3], #8\n"      /* (w0, w1), (w1, w2) of this window column */ \
  "smlad  r7, " A ", r11, r7\n" \
  "smlabt r7, " B ", r12, r7\n" \
  "smlad  r8, " B ", r12, r8\n" \
  "smlatb r8, " A ", r11, r8\n"

/* acc -> int8 with the channel's M (r9), K_hi (r10) and s - 1 (r11), into lr: the folded
 * form of kernel/requant.py, 7 instructions with the store. */
#define MRT_DW_REQUANT(ACC) \
  "and    r12, " ACC ", #0x80000000\n" \
  "orr    r12, r12, #0x40000000\n" \
  "add    lr, r10, " ACC ", asr #31\n" \
  "smlal  r12, lr, " ACC ", r9\n" \
  "asr    lr, lr, r11\n" \
  "ssat   lr, #8, lr\n"

/* The same of a sum that is twice the layer's (weights and bias doubled in the records,
 * codegen/depthwise_pairs.py, where the sum stays within +-2**30): with x' = 2x the
 * folded form's numerator doubles into 2xM + 2**31 + (2 K_hi + sign) 2**32, whose high
 * word is SMMLAR's (it adds 2**31 before taking it), then >> s; the record holds 2 K_hi
 * (r10) and s (r11). 5 instructions with the store. */
#define MRT_DW_REQUANT_FAST(ACC) \
  "add    lr, r10, " ACC ", asr #31\n" \
  "smmlar lr, " ACC ", r9, lr\n" \
  "asr    lr, lr, r11\n" \
  "ssat   lr, #8, lr\n"

#define MRT_DW_TILE(A, B, REQUANT) MRT_DW_TILE_OF(MRT_DW_COLUMN, A, B, REQUANT)
#define MRT_DW_TILE_STAY(A, B, REQUANT) MRT_DW_TILE_OF(MRT_DW_COLUMN_STAY, A, B, REQUANT)
/* Two output channels of one input channel (a depth multiplier of 2). */
#define MRT_DW_TILE_X2(A, B, REQUANT) MRT_DW_TILE_STAY(A, B, REQUANT) MRT_DW_TILE(A, B, REQUANT)
#define MRT_DW_TILE_OF(COLUMN, A, B, REQUANT) \
  COLUMN##_FIRST("r0", A, B) \
  COLUMN("r1", A, B) \
  COLUMN("r2", A, B) \
  "ldm    r3!, {r9, r10, r11}\n" \
  REQUANT("r8") \
  "strb   lr, [r4, r5]\n" \
  REQUANT("r7") \
  "strb   lr, [r4], #1\n"

/* Row y alone (an odd last row, flags bit 2): per window column the SMLAD and the
 * SMLABT of row y's sum, the same records; 20 instructions an output where the pair's
 * 31 computed a row stored over by it. */
#define MRT_DW_ROW1_COLUMN(P, A, B) MRT_DW_ROW1_AT("[" P "], #8", A, B)
#define MRT_DW_ROW1_COLUMN_STAY(P, A, B) MRT_DW_ROW1_AT("[" P "]", A, B)
#define MRT_DW_ROW1_COLUMN_FIRST(P, A, B) MRT_DW_ROW1_FIRST_AT("[" P "], #8", A, B)
#define MRT_DW_ROW1_COLUMN_STAY_FIRST(P, A, B) MRT_DW_ROW1_FIRST_AT("[" P "]", A, B)
#define MRT_DW_ROW1_FIRST_AT(ADDRESS, A, B) \
  "ldm    r3!, {r11, r12, lr}\n" \
  "ldrd   r9, r10, " ADDRESS "\n" \
  "smlad  r7, " A ", r11, lr\n" \
  "smlabt r7, " B ", r12, r7\n"
#define MRT_DW_ROW1_AT(ADDRESS, A, B) \
  "ldrd   r9, r10, " ADDRESS "\n" \
  "ldrd   r11, r12, [r3], #8\n" \
  "smlad  r7, " A ", r11, r7\n" \
  "smlabt r7, " B ", r12, r7\n"
#define MRT_DW_ROW1_OF(COLUMN, A, B, REQUANT) \
  COLUMN##_FIRST("r0", A, B) \
  COLUMN("r1", A, B) \
  COLUMN("r2", A, B) \
  "ldm    r3!, {r9, r10, r11}\n" \
  REQUANT("r7") \
  "strb   lr, [r4], #1\n"
#define MRT_DW_ROW1(A, B, REQUANT) MRT_DW_ROW1_OF(MRT_DW_ROW1_COLUMN, A, B, REQUANT)
#define MRT_DW_ROW1_X2(A, B, REQUANT) \
  MRT_DW_ROW1_OF(MRT_DW_ROW1_COLUMN_STAY, A, B, REQUANT) \
  MRT_DW_ROW1_OF(MRT_DW_ROW1_COLUMN, A, B, REQUANT)

/* The column loop over the channel loop of one slot order. r6: the records' end. */
#define MRT_DW_COLUMNS(L, A, B, REQUANT) MRT_DW_COLUMNS_OF(L, MRT_DW_TILE, A, B, REQUANT)
#define MRT_DW_COLUMNS_OF(L, TILE, A, B, REQUANT) \
  L "0:\n" \
  "ldr    r3, [sp]\n" \
  "ldr    r3, [r3, #8]\n"            /* the records, from the first channel */ \
  L "1:\n" \
  TILE(A, B, REQUANT) \
  "cmp    r3, r6\n" \
  "bne    " L "1b\n" \
  "ldr    r12, [sp, #4]\n" \
  "subs   r12, r12, #1\n" \
  "str    r12, [sp, #4]\n" \
  "bne    " L "0b\n"
/* The same channel loop two channels a pass (one compare and branch for 4 outputs), an
 * odd count entering at the second (the entry, set once per call, at [sp, #12]). */
#define MRT_DW_COLUMNS_BY2(L, A, B, REQUANT) \
  "adr    r7, " L "1f\n" \
  "adr    r12, " L "2f\n" \
  "ldr    lr, [sp, #8]\n"            /* channels odd */ \
  "cmp    lr, #0\n" \
  "it     ne\n" \
  "movne  r7, r12\n" \
  "orr    r7, r7, #1\n"             /* a Thumb address */ \
  "str    r7, [sp, #12]\n" \
  L "0:\n" \
  "ldr    r3, [sp]\n" \
  "ldr    r3, [r3, #8]\n" \
  "ldr    pc, [sp, #12]\n" \
  L "1:\n" \
  MRT_DW_TILE(A, B, REQUANT) \
  L "2:\n" \
  MRT_DW_TILE(A, B, REQUANT) \
  "cmp    r3, r6\n" \
  "bne    " L "1b\n" \
  "ldr    r12, [sp, #4]\n" \
  "subs   r12, r12, #1\n" \
  "str    r12, [sp, #4]\n" \
  "bne    " L "0b\n"
#define MRT_DW_COLUMNS_X2(L, A, B, REQUANT) \
  MRT_DW_COLUMNS_OF(L, MRT_DW_TILE_X2, A, B, REQUANT)
#define MRT_DW_COLUMNS_ROW1(L, A, B, REQUANT) MRT_DW_COLUMNS_OF(L, MRT_DW_ROW1, A, B, REQUANT)
#define MRT_DW_COLUMNS_ROW1_X2(L, A, B, REQUANT) \
  MRT_DW_COLUMNS_OF(L, MRT_DW_ROW1_X2, A, B, REQUANT)

/* What one call computes (offsets used by the assembly below). */
/* The 4-row kernels' (mrt_dw3_quad_s8, mrt_dw3_quad_tails_s8 and their x2 forms) call:
 * mrt_dw_rowpair's fields in the order the tails kernel's LDM puts them in registers. */
struct mrt_dw_quad {
    const int32_t *stage;    /* 0 */
    const int32_t *records;  /* 4 */
    int8_t *out;             /* 8 */
    int32_t row2;            /* 12 */
    uint32_t width;          /* 16 */
    uint32_t channels;       /* 20 */
    uint32_t flags;          /* 24 */
    uint32_t column_bytes;   /* 28 */
};

struct mrt_dw_rowpair {
    int8_t *out;             /* 0: output row y, column 0, channel 0 */
    const int32_t *stage;    /* 4: the staged words of the first window column of column 0 */
    const int32_t *records;  /* 8: per channel (w0, w1) and (w1, w2) of window column
                                0, the bias, those of columns 1 and 2, then M, K_hi,
                                s - 1 (doubled ones: 2 x w, 2 x bias, M, 2 x K_hi, s;
                                the last channel's with bit 8 set): 10 words */
    uint32_t channels;       /* 12 */
    uint32_t width;          /* 16: output columns, >= 1 */
    int32_t row2;            /* 20: bytes from an output to the one below it */
    uint32_t flags;          /* 24: bit 0: slot 1 holds A (rows y-1, y), else slot 0;
                                bit 1: the records are doubled (MRT_DW_REQUANT_FAST);
                                bit 2: row y alone (row2 unused) */
    uint32_t column_bytes;   /* 28: from a staged column to the next: 8 x input channels */
};

/* Both output rows of a row pair, every column and channel (channels >= 1): per column
 * and channel 35 instructions for 2 outputs (31 with doubled records). The staged words
 * of a column are 8 bytes per input channel (two slots), so a column's words are
 * column_bytes after the previous column's, which the three window columns' pointers
 * reach by walking the channels. */
/* The loops for flags & 3 (bit 0: which slot holds A, bit 1: doubled records) in r7:
 * SLOW's with the plain requantization for 0 and 1, FAST's with the doubled records' for
 * 2 and 3; LA-LC are the local labels between them, N0-N3 the loops' own label bases. */
#define MRT_DW_FOUR_WAYS(LA, LB, LC, SLOW, FAST, N0, N1, N2, N3) \
        "cmp    r7, #1\n" \
        "beq    " LA "f\n" \
        "bhi    " LB "f\n" \
        SLOW(N0, "r9", "r10", MRT_DW_REQUANT) \
        "b      9f\n" \
        LA ":\n" \
        SLOW(N1, "r10", "r9", MRT_DW_REQUANT) \
        "b      9f\n" \
        LB ":\n" \
        "cmp    r7, #3\n" \
        "beq    " LC "f\n" \
        FAST(N2, "r9", "r10", MRT_DW_REQUANT_FAST) \
        "b      9f\n" \
        LC ":\n" \
        FAST(N3, "r10", "r9", MRT_DW_REQUANT_FAST)

/* The body of a row-pair kernel whose column loops are COLUMNS with the doubled records'
 * requantization, SLOW with the other (one output channel a tile, or two of one input
 * channel); the doubled records are the common case, the slow loops kept short. */
#define MRT_DW_ROWPAIR_BODY(COLUMNS, SLOW, ROW1) \
        "push   {r4-r11, lr}\n" \
        "sub    sp, sp, #16\n" \
        "str    r0, [sp]\n" \
        "ldr    r1, [r0, #16]\n" \
        "str    r1, [sp, #4]\n"            /* columns left */ \
        "ldr    r4, [r0, #0]\n" \
        "ldr    r5, [r0, #20]\n" \
        "ldr    r3, [r0, #8]\n" \
        "ldr    r12, [r0, #12]\n"          /* channels */ \
        "add    r6, r12, r12, lsl #2\n" \
        "add    r6, r3, r6, lsl #3\n"      /* records + 40 * channels */ \
        "and    r12, r12, #1\n" \
        "str    r12, [sp, #8]\n"           /* channels odd */ \
        "ldr    r7, [r0, #24]\n" \
        "ldr    r12, [r0, #28]\n"          /* column bytes */ \
        "ldr    r0, [r0, #4]\n" \
        "add    r1, r0, r12\n" \
        "add    r2, r1, r12\n" \
        "tst    r7, #4\n" \
        "bne    94f\n" \
        MRT_DW_FOUR_WAYS("91", "92", "93", SLOW, COLUMNS, "1", "3", "5", "7") \
        "b      9f\n" \
        "94:\n"                           /* row y alone */ \
        "and    r7, r7, #3\n" \
        MRT_DW_FOUR_WAYS("95", "96", "97", ROW1, ROW1, "2", "4", "6", "8") \
        "9:\n" \
        "add    sp, sp, #16\n" \
        "pop    {r4-r11, pc}\n"

/* aligned(4): MRT_DW_COLUMNS_BY2's ADRs are resolved by the assembler against a word-
 * aligned section start (Thumb ADR adds to the PC rounded down to a word), so a section
 * placed at 2 mod 4 sent the channel loop's entry 2 bytes off, into an instruction's
 * second half (vww_96_int8 hard-faulted once the link moved this function). */
__attribute__((naked, used, aligned(4))) void mrt_dw3_rowpair_s8(const struct mrt_dw_rowpair *a)
{
    __asm__ volatile(MRT_DW_ROWPAIR_BODY(MRT_DW_COLUMNS_BY2, MRT_DW_COLUMNS, MRT_DW_COLUMNS_ROW1));
}

/* The same for a depth multiplier of 2: output channels 2c and 2c + 1 both read input
 * channel c's staged words (channels even). Its own function, so that --gc-sections
 * drops it from images without such a layer. */
__attribute__((naked, used, aligned(4))) void mrt_dw3_rowpair_x2_s8(const struct mrt_dw_rowpair *a)
{
    __asm__ volatile(MRT_DW_ROWPAIR_BODY(MRT_DW_COLUMNS_X2, MRT_DW_COLUMNS_X2, MRT_DW_COLUMNS_ROW1_X2));
}

/* ---- Four output rows a tile (mrt_dw3_quad_s8) ----
 *
 * Output rows y .. y+3 read input rows y-1 .. y+4, staged as three pairs P0 = (y-1, y),
 * P1 = (y+1, y+2), P2 = (y+3, y+4), whose weight words are the same two per window
 * column: row y takes SMLAD(P0, (w0, w1)) + SMLABT(P1, (w1, w2)), row y+1 SMLATB(P0,
 * (w0, w1)) + SMLAD(P1, (w1, w2)), rows y+2 and y+3 the same with P1 and P2. A tile's
 * loads (its 9 staged words, 6 weight words, the bias and the requantization's three
 * values) serve 4 outputs where the row pair's serve 2: 56 instructions for 4 outputs
 * with doubled records (24 multiplies, 16 of requantization, 4 stores, 7 loads, 5 of
 * addresses and loop), against 2 x 30 for the row pairs. The staged layout is (column,
 * channel, slot) with three slots, odd pairs in slot 1 and even ones in slots 0 and 2 by
 * turns, so a tile's P2 is the next tile's P0 and a tile's two new pairs are adjacent
 * words (one STRD a value, mrt_dw_stage_two_pairs3_s8); a tile whose P0 is slot r (0 or
 * 2) reads (P0, P1, P2) from slots (0, 1, 2) or (2, 1, 0), a variant of the code per r. The staged columns are S =
 * column_bytes apart, two pointers (r0, r1) walk the channels of window columns 0 and 1
 * and the third column is read at 2 r1 - r0 (LDMDB from 12 past it, r0 and r1 having
 * moved on), so the three window columns take two registers where they took three
 * pointers; with the tile's 4 sums, 3 staged and 2 weight words, the records, the output
 * and its row distance, that is the 14 registers. The channel loop ends at the channel
 * whose s has bit 8 set (ASR reads the shift's low byte only), so no register holds its
 * end. The rows' remainder (1-3 rows) runs as a tile of that many rows in the same
 * layout (flags bits 3-5), from fixed slots. Registers: r0 and r1 staged words (window columns 0 and 1), r2 records, r3 output
 * (row y), r4 output row distance, r5-r7 staged slots 0-2 then M, K_hi, s, r8-r9 weight
 * words then temporaries, r10-r12 and lr the sums of rows y .. y+3.
 */

/* The three window columns' staged words: r0 walks window column 0's, r1 column 1's (S
 * bytes on, moving in step: both LDMs write back), and column 2's are at r0 + 2S =
 * 2 r1 - r0 (one RSB, LDMDB from 12 past them where r0 and r1 moved on). r1 as a second
 * pointer, where it held S and column 1 took an ADD as column 2 does, saves an
 * instruction a tile (52 -> 51 for 4 outputs). The _STAY forms do not move r0 or r1 (the
 * first output channel of a depth multiplier of 2). */
#define MRT_DW4_LD0 "ldm    r0!, {r5, r6, r7}\n"
#define MRT_DW4_LD1 "ldm    r1!, {r5, r6, r7}\n"
#define MRT_DW4_LD2 "rsb    r8, r0, r1, lsl #1\n" "ldmdb  r8, {r5, r6, r7}\n"
#define MRT_DW4_LD0_STAY "ldm    r0, {r5, r6, r7}\n"
#define MRT_DW4_LD1_STAY "ldm    r1, {r5, r6, r7}\n"
#define MRT_DW4_LD2_STAY "rsb    r8, r0, r1, lsl #1\n" "ldm    r8, {r5, r6, r7}\n"

/* One window column's 8 multiplies into the 4 sums (r8: (w0, w1), r9: (w1, w2)). */
#define MRT_DW4_MACS(P0, P1, P2) \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlatb r11, " P0 ", r8, r11\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  "smlad  r12, " P1 ", r8, r12\n" \
  "smlabt r12, " P2 ", r9, r12\n" \
  "smlatb lr, " P1 ", r8, lr\n" \
  "smlad  lr, " P2 ", r9, lr\n"
#define MRT_DW2_MACS(P0, P1) \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlatb r11, " P0 ", r8, r11\n" \
  "smlad  r11, " P1 ", r9, r11\n"

/* A sum (in place) -> int8 with M (r5), K_hi (r6) and s (r7): MRT_DW_REQUANT_FAST's
 * doubled form, and MRT_DW_REQUANT's folded one. r8 (and r9) are free. */
#define MRT_DW4_FAST(ACC) \
  "add    r8, r6, " ACC ", asr #31\n" \
  "smmlar " ACC ", " ACC ", r5, r8\n" \
  "asr    " ACC ", " ACC ", r7\n" \
  "ssat   " ACC ", #8, " ACC "\n"
#define MRT_DW4_SLOW(ACC) \
  "and    r8, " ACC ", #0x80000000\n" \
  "orr    r8, r8, #0x40000000\n" \
  "add    r9, r6, " ACC ", asr #31\n" \
  "smlal  r8, r9, " ACC ", r5\n" \
  "asr    r9, r9, r7\n" \
  "ssat   " ACC ", #8, r9\n"

/* One output channel, four rows: the first window column's weights and the bias in one
 * LDM; every sum starts from the bias. */
#define MRT_DW4_TILE(LD0, LD1, LD2, P0, P1, P2, REQUANT) \
  "ldm    r2!, {r8, r9, r10}\n"      /* (w0, w1), (w1, w2), the bias */ \
  LD0 \
  "smlatb r11, " P0 ", r8, r10\n" \
  "smlad  r12, " P1 ", r8, r10\n" \
  "smlatb lr, " P1 ", r8, r10\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  "smlabt r12, " P2 ", r9, r12\n" \
  "smlad  lr, " P2 ", r9, lr\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW4_MACS(P0, P1, P2) \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW4_MACS(P0, P1, P2) \
  "ldm    r2!, {r5, r6, r7, r8, r9}\n" /* M, K_hi, s (and the tail kernel's two words) */ \
  REQUANT("r11") \
  REQUANT("r12") \
  REQUANT("lr") \
  REQUANT("r10") \
  "add    r9, r3, r4, lsl #1\n" \
  "strb   r11, [r3, r4]\n" \
  "strb   r12, [r9]\n" \
  "strb   lr, [r9, r4]\n" \
  "strb   r10, [r3], #1\n"
/* Three rows (the remainder of 3). */
#define MRT_DW3_MACS(P0, P1, P2) \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlatb r11, " P0 ", r8, r11\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  "smlad  r12, " P1 ", r8, r12\n" \
  "smlabt r12, " P2 ", r9, r12\n"
#define MRT_DW3_TILE(LD0, LD1, LD2, P0, P1, P2, REQUANT) \
  "ldm    r2!, {r8, r9, r10}\n" \
  LD0 \
  "smlatb r11, " P0 ", r8, r10\n" \
  "smlad  r12, " P1 ", r8, r10\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  "smlabt r12, " P2 ", r9, r12\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW3_MACS(P0, P1, P2) \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW3_MACS(P0, P1, P2) \
  "ldm    r2!, {r5, r6, r7, r8, r9}\n" \
  REQUANT("r11") \
  REQUANT("r12") \
  REQUANT("r10") \
  "add    r9, r3, r4, lsl #1\n" \
  "strb   r11, [r3, r4]\n" \
  "strb   r12, [r9]\n" \
  "strb   r10, [r3], #1\n"
/* Two rows (P2 unused): row y+1 stored first, so that at a distance of 0 row y lands
 * over it (one row). */
#define MRT_DW2_TILE(LD0, LD1, LD2, P0, P1, P2, REQUANT) \
  "ldm    r2!, {r8, r9, r10}\n" \
  LD0 \
  "smlatb r11, " P0 ", r8, r10\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW2_MACS(P0, P1) \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW2_MACS(P0, P1) \
  "ldm    r2!, {r5, r6, r7, r8, r9}\n" \
  REQUANT("r11") \
  REQUANT("r10") \
  "strb   r11, [r3, r4]\n" \
  "strb   r10, [r3], #1\n"

/* One row (P2 unused; an odd last row, or one after a pair). */
#define MRT_DW1_TILE(LD0, LD1, LD2, P0, P1, P2, REQUANT) \
  "ldm    r2!, {r8, r9, r10}\n" \
  LD0 \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "ldm    r2!, {r5, r6, r7, r8, r9}\n" \
  REQUANT("r10") \
  "strb   r10, [r3], #1\n"

/* A tile of one output channel, and of the two of one input channel (depth multiplier
 * 2: the first reads the staged words without moving r0). */
#define MRT_DW4_X1(TILE, P0, P1, P2, REQUANT) \
  TILE(MRT_DW4_LD0, MRT_DW4_LD1, MRT_DW4_LD2, P0, P1, P2, REQUANT)
#define MRT_DW4_X2(TILE, P0, P1, P2, REQUANT) \
  TILE(MRT_DW4_LD0_STAY, MRT_DW4_LD1_STAY, MRT_DW4_LD2_STAY, P0, P1, P2, REQUANT) \
  TILE(MRT_DW4_LD0, MRT_DW4_LD1, MRT_DW4_LD2, P0, P1, P2, REQUANT)

/* The column loop over the channel loop. After a column's channels r0 and r3 are at the
 * next column's words and outputs; the records restart ([sp]). */
#define MRT_DW4_COLUMNS(MULT, TILE, P0, P1, P2, REQUANT) \
  "10:\n" \
  "ldr    r2, [sp]\n" \
  "11:\n" \
  MULT(TILE, P0, P1, P2, REQUANT) \
  "tst    r7, #256\n"                /* the last channel */ \
  "beq    11b\n" \
  "ldr    r8, [sp, #4]\n" \
  "subs   r8, r8, #1\n" \
  "str    r8, [sp, #4]\n" \
  "bne    10b\n" \
  "b      9f\n"

/* The two slot orders (flags bits 0-1: P0's slot, 0 or 2): the dispatch stages odd pairs
 * in slot 1 and even ones in slots 0 and 2 by turns, so that a tile's two new pairs are
 * adjacent words (mrt_dw_stage_two_pairs3_s8); (P0, P1, P2) in slots (0, 1, 2) or
 * (2, 1, 0). */
#define MRT_DW4_ROTATIONS(MULT, TILE, REQUANT) \
  "tst    r7, #2\n" \
  "bne    22f\n" \
  MRT_DW4_COLUMNS(MULT, TILE, "r5", "r6", "r7", REQUANT) \
  "22:\n" \
  MRT_DW4_COLUMNS(MULT, TILE, "r7", "r6", "r5", REQUANT)

/* flags: bits 0-1 the rotation (P0's slot, 0 or 2), bit 2 doubled records, bit 3 two rows (P0, P1 in slots
 * 0 and 1), bit 4 one row (P0, P1 in slots 0 and 1), bit 5 three rows (slots 0-2), bit 6
 * two rows from slots 1 and 2 (a map's first two rows, before its 4-row tiles), else
 * four. Without doubled records
 * two rows only (one: at a row distance of 0), from slots 0 and 1; the dispatch runs
 * such a layer as pairs (codegen/depthwise_pairs.py). Rows outside 4-row tiles are few,
 * so their code has one slot order, the dispatch staging their pairs into it. */
#define MRT_DW4_BODY(MULT) \
  "push   {r4-r11, lr}\n" \
  "sub    sp, sp, #8\n" \
  "ldr    r3, [r0, #8]\n"             /* struct mrt_dw_quad */ \
  "ldr    r4, [r0, #12]\n" \
  "ldr    r2, [r0, #4]\n" \
  "str    r2, [sp]\n"                /* the records */ \
  "ldr    r1, [r0, #16]\n" \
  "str    r1, [sp, #4]\n"            /* columns left */ \
  "ldr    r7, [r0, #24]\n" \
  "ldr    r1, [r0, #28]\n" \
  "ldr    r0, [r0, #0]\n" \
  "add    r1, r0, r1\n"             /* window column 1's staged words */ \
  "tst    r7, #4\n" \
  "beq    33f\n" \
  "tst    r7, #8\n" \
  "bne    30f\n" \
  "tst    r7, #16\n" \
  "bne    31f\n" \
  "tst    r7, #32\n" \
  "bne    34f\n" \
  "tst    r7, #64\n" \
  "bne    35f\n" \
  MRT_DW4_ROTATIONS(MULT, MRT_DW4_TILE, MRT_DW4_FAST) \
  "30:\n" \
  MRT_DW4_COLUMNS(MULT, MRT_DW2_TILE, "r5", "r6", "r7", MRT_DW4_FAST) \
  "31:\n" \
  MRT_DW4_COLUMNS(MULT, MRT_DW1_TILE, "r5", "r6", "r7", MRT_DW4_FAST) \
  "34:\n" \
  MRT_DW4_COLUMNS(MULT, MRT_DW3_TILE, "r5", "r6", "r7", MRT_DW4_FAST) \
  "35:\n" \
  MRT_DW4_COLUMNS(MULT, MRT_DW2_TILE, "r6", "r7", "r5", MRT_DW4_FAST) \
  "33:\n" \
  MRT_DW4_COLUMNS(MULT, MRT_DW2_TILE, "r5", "r6", "r7", MRT_DW4_SLOW) \
  "9:\n" \
  "add    sp, sp, #8\n" \
  "pop    {r4-r11, pc}\n"

/* Four output rows (or the remainder's two or one), every column and channel (channels
 * >= 1), of the staged 3-slot layout: mrt_dw_rowpair's fields, with column_bytes 12 x
 * input channels and the flags above. */
__attribute__((naked, used, aligned(4))) void mrt_dw3_quad_s8(const struct mrt_dw_quad *a)
{
    __asm__ volatile(MRT_DW4_BODY(MRT_DW4_X1));
}

/* The same for a depth multiplier of 2 (output channels 2c and 2c + 1 read input
 * channel c's staged words). */
__attribute__((naked, used, aligned(4))) void mrt_dw3_quad_x2_s8(const struct mrt_dw_quad *a)
{
    __asm__ volatile(MRT_DW4_BODY(MRT_DW4_X2));
}

/* ---- Four output rows, the shift as an immediate (mrt_dw3_quad_tails_s8) ----
 *
 * mrt_dw3_quad_s8's 4-row tile ends each output with ADD (the sum's sign), SMMLAR, ASR
 * by the channel's shift and SSAT, and each channel with TST + BEQ of the loop: 6 of its
 * 56 instructions for 4 outputs are the shift and the loop. SSAT shifts by an immediate
 * (SSAT #8, Rn, ASR #s), so here the tile's multiplies (the same code) end with the
 * requantization's LDM, which also loads the channel's s as an index and the stack
 * offset of where to go next, a TBH on s into one of 31 tails (s = 1 .. 31) that
 * requantize and store the 4 outputs with SSAT's own shift, and an LDR PC from that
 * stack slot: the next channel's tile (head A or B: a depth multiplier of 2 alternates
 * them) or, after the last channel, the column's end. 52 instructions for 4 outputs:
 * 24 multiplies, 12 of requantization, 4 stores, 7 loads, 3 of addresses, the TBH and
 * the LDR PC. The records are mrt_dw3_quad_s8's 12-word ones (codegen/
 * depthwise_pairs.py, schedule/row_pair_records.py: words 10 and 11 are s and that
 * offset); the dispatch calls this for 4-row tiles where every channel's records are
 * doubled and 1 <= s <= 31, the rows' remainder with mrt_dw3_quad_s8.
 * Stack: [sp] the records, [sp, #4] the end of the row's outputs, [sp, #8] head A, [sp, #12] head B,
 * [sp, #16] the column's end, [sp, #20] the return (Thumb addresses). Records repeated
 * for every column of the row (few channels: schedule/row_pair_records.py) send each
 * column's last channel to head A, with r2 running on, and the row's last to the return:
 * no column end (4 instructions a column a call). Registers as mrt_dw3_quad_s8's.
 */
/* The tails of shift S, one chain: row y+3's requantization and store, then y+2's,
 * y+1's and y's, and the jump to the next head; a tile of n rows enters at the chain's
 * n-th last row (P "t" n "_" S). r7 is the sign's temporary, then the address of row y+3. */
#define MRT_DW4T_REQ(ACC, S) \
  "add    r7, r6, " ACC ", asr #31\n" \
  "smmlar " ACC ", " ACC ", r5, r7\n" \
  "ssat   " ACC ", #8, " ACC ", asr #" S "\n"
#define MRT_DW4T_TAIL(P, S) \
  P "t4_" S ":\n" \
  MRT_DW4T_REQ("lr", S) \
  "add    r7, r3, r4, lsl #1\n" \
  "strb   lr, [r7, r4]\n" \
  P "t3_" S ":\n" \
  MRT_DW4T_REQ("r12", S) \
  "strb   r12, [r3, r4, lsl #1]\n" \
  P "t2_" S ":\n" \
  MRT_DW4T_REQ("r11", S) \
  "strb   r11, [r3, r4]\n" \
  P "t1_" S ":\n" \
  MRT_DW4T_REQ("r10", S) \
  "strb   r10, [r3], #1\n" \
  "ldr    pc, [sp, r9]\n"
/* A head's TBH table: entry s (1-31; 0 never taken) to the tails of shift s for N rows. */
#define MRT_DW4T_TABLE(P, N, T) \
  ".hword (" P "t" N "_1 - " T ")/2\n" \
  ".hword (" P "t" N "_1 - " T ")/2\n" \
  ".hword (" P "t" N "_2 - " T ")/2\n" \
  ".hword (" P "t" N "_3 - " T ")/2\n" \
  ".hword (" P "t" N "_4 - " T ")/2\n" \
  ".hword (" P "t" N "_5 - " T ")/2\n" \
  ".hword (" P "t" N "_6 - " T ")/2\n" \
  ".hword (" P "t" N "_7 - " T ")/2\n" \
  ".hword (" P "t" N "_8 - " T ")/2\n" \
  ".hword (" P "t" N "_9 - " T ")/2\n" \
  ".hword (" P "t" N "_10 - " T ")/2\n" \
  ".hword (" P "t" N "_11 - " T ")/2\n" \
  ".hword (" P "t" N "_12 - " T ")/2\n" \
  ".hword (" P "t" N "_13 - " T ")/2\n" \
  ".hword (" P "t" N "_14 - " T ")/2\n" \
  ".hword (" P "t" N "_15 - " T ")/2\n" \
  ".hword (" P "t" N "_16 - " T ")/2\n" \
  ".hword (" P "t" N "_17 - " T ")/2\n" \
  ".hword (" P "t" N "_18 - " T ")/2\n" \
  ".hword (" P "t" N "_19 - " T ")/2\n" \
  ".hword (" P "t" N "_20 - " T ")/2\n" \
  ".hword (" P "t" N "_21 - " T ")/2\n" \
  ".hword (" P "t" N "_22 - " T ")/2\n" \
  ".hword (" P "t" N "_23 - " T ")/2\n" \
  ".hword (" P "t" N "_24 - " T ")/2\n" \
  ".hword (" P "t" N "_25 - " T ")/2\n" \
  ".hword (" P "t" N "_26 - " T ")/2\n" \
  ".hword (" P "t" N "_27 - " T ")/2\n" \
  ".hword (" P "t" N "_28 - " T ")/2\n" \
  ".hword (" P "t" N "_29 - " T ")/2\n" \
  ".hword (" P "t" N "_30 - " T ")/2\n" \
  ".hword (" P "t" N "_31 - " T ")/2\n" \

#define MRT_DW4T_TAILS(P) \
  MRT_DW4T_TAIL(P, "1") \
  MRT_DW4T_TAIL(P, "2") \
  MRT_DW4T_TAIL(P, "3") \
  MRT_DW4T_TAIL(P, "4") \
  MRT_DW4T_TAIL(P, "5") \
  MRT_DW4T_TAIL(P, "6") \
  MRT_DW4T_TAIL(P, "7") \
  MRT_DW4T_TAIL(P, "8") \
  MRT_DW4T_TAIL(P, "9") \
  MRT_DW4T_TAIL(P, "10") \
  MRT_DW4T_TAIL(P, "11") \
  MRT_DW4T_TAIL(P, "12") \
  MRT_DW4T_TAIL(P, "13") \
  MRT_DW4T_TAIL(P, "14") \
  MRT_DW4T_TAIL(P, "15") \
  MRT_DW4T_TAIL(P, "16") \
  MRT_DW4T_TAIL(P, "17") \
  MRT_DW4T_TAIL(P, "18") \
  MRT_DW4T_TAIL(P, "19") \
  MRT_DW4T_TAIL(P, "20") \
  MRT_DW4T_TAIL(P, "21") \
  MRT_DW4T_TAIL(P, "22") \
  MRT_DW4T_TAIL(P, "23") \
  MRT_DW4T_TAIL(P, "24") \
  MRT_DW4T_TAIL(P, "25") \
  MRT_DW4T_TAIL(P, "26") \
  MRT_DW4T_TAIL(P, "27") \
  MRT_DW4T_TAIL(P, "28") \
  MRT_DW4T_TAIL(P, "29") \
  MRT_DW4T_TAIL(P, "30") \
  MRT_DW4T_TAIL(P, "31") \

/* The heads: a tile's multiplies (mrt_dw3_quad_s8's, 4, 3, 2 or 1 rows), the LDM of
 * the requantization's words and the TBH into the tails of its height. */
#define MRT_DW4T_MACS4(LD0, LD1, LD2, P0, P1, P2) \
  "ldm    r2!, {r8, r9, r10}\n" \
  LD0 \
  "smlatb r11, " P0 ", r8, r10\n" \
  "smlad  r12, " P1 ", r8, r10\n" \
  "smlatb lr, " P1 ", r8, r10\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  "smlabt r12, " P2 ", r9, r12\n" \
  "smlad  lr, " P2 ", r9, lr\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW4_MACS(P0, P1, P2) \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW4_MACS(P0, P1, P2)
#define MRT_DW4T_MACS3(LD0, LD1, LD2, P0, P1, P2) \
  "ldm    r2!, {r8, r9, r10}\n" \
  LD0 \
  "smlatb r11, " P0 ", r8, r10\n" \
  "smlad  r12, " P1 ", r8, r10\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  "smlabt r12, " P2 ", r9, r12\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW3_MACS(P0, P1, P2) \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW3_MACS(P0, P1, P2)
#define MRT_DW4T_MACS2(LD0, LD1, LD2, P0, P1, P2) \
  "ldm    r2!, {r8, r9, r10}\n" \
  LD0 \
  "smlatb r11, " P0 ", r8, r10\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlad  r11, " P1 ", r9, r11\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW2_MACS(P0, P1) \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_DW2_MACS(P0, P1)
#define MRT_DW4T_MACS1(LD0, LD1, LD2, P0, P1, P2) \
  "ldm    r2!, {r8, r9, r10}\n" \
  LD0 \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n"
#define MRT_DW4T_HEAD(P, H, N, MACS, LD0, LD1, LD2, P0, P1, P2) \
  P H ":\n" \
  MACS(LD0, LD1, LD2, P0, P1, P2) \
  "ldm    r2!, {r5, r6, r7, r8, r9}\n" /* M, K_hi, s | last, s, the next head's slot */ \
  "tbh    [pc, r8, lsl #1]\n" \
  P H "tb:\n" \
  MRT_DW4T_TABLE(P, N, P H "tb")
/* Window column 2 of the rows' remainder (1-3 rows): lr, the fourth row's sum in a 4-row
 * tile, is free there, so a third pointer (set up at 2 r1 - r0) walks column 2's words
 * in step with r0 and r1, where the 4-row tile takes an RSB: 30 -> 29 instructions for
 * 2 outputs, 40 -> 39 for 3 (10x10's last two rows, 19x6's last three). */
#define MRT_DW4_LD2_LR "ldm    lr!, {r5, r6, r7}\n"
#define MRT_DW4_LD2_LR_STAY "ldm    lr, {r5, r6, r7}\n"
/* Head A of a tile of N rows (MACS) in slot order R (and head B, multiplier 2), LD2 and
 * LD2S window column 2's loads (moving on, and staying). */
#define MRT_DW4T_HEADS_X1_OF(LD2, LD2S, P, R, N, MACS, P0, P1, P2) \
  MRT_DW4T_HEAD(P, "a" R, N, MACS, MRT_DW4_LD0, MRT_DW4_LD1, LD2, P0, P1, P2)
#define MRT_DW4T_HEADS_X2_OF(LD2, LD2S, P, R, N, MACS, P0, P1, P2) \
  MRT_DW4T_HEAD(P, "a" R, N, MACS, MRT_DW4_LD0_STAY, MRT_DW4_LD1_STAY, LD2S, P0, P1, P2) \
  MRT_DW4T_HEAD(P, "b" R, N, MACS, MRT_DW4_LD0, MRT_DW4_LD1, LD2, P0, P1, P2)
#define MRT_DW4T_HEADS_X1(...) MRT_DW4T_HEADS_X1_OF(MRT_DW4_LD2, MRT_DW4_LD2_STAY, __VA_ARGS__)
#define MRT_DW4T_HEADS_X2(...) MRT_DW4T_HEADS_X2_OF(MRT_DW4_LD2, MRT_DW4_LD2_STAY, __VA_ARGS__)
#define MRT_DW4T_REST_X1(...) MRT_DW4T_HEADS_X1_OF(MRT_DW4_LD2_LR, MRT_DW4_LD2_LR_STAY, __VA_ARGS__)
#define MRT_DW4T_REST_X2(...) MRT_DW4T_HEADS_X2_OF(MRT_DW4_LD2_LR, MRT_DW4_LD2_LR_STAY, __VA_ARGS__)
/* Heads A and B of rotation R (head B: head A where the multiplier is 1). */
/* The heads of each call kind (flags bits 12-14: the rotation 0 or 2 of a 4-row call, or
 * 3-5 for the remainder's 2, 1 and 3 rows, 6 for 2 rows from slots 1 and 2): head A, head B (head A where the multiplier
 * is 1) and the column's end, as Thumb addresses, 16 bytes an entry. */
#define MRT_DW4T_ENTRY(P, R, B) \
  ".word  " P "a" R " + 1\n" \
  ".word  " P B R " + 1\n" \
  ".word  " P "end + 1\n" \
  ".word  " P "ret + 1\n"
/* The entry: struct mrt_dw_quad's fields straight into their registers by one LDM (r0
 * the staged words, r2 the records, r3 the output, r4 the row distance; r5 x r6 + r3 the
 * row's end; the call's kind at flags bits 12-14, whose LSR #8 is its entry's offset),
 * the call kind's 4 code addresses pushed over the records and row's end
 * (STRD with writeback): 11 instructions where mrt_dw_rowpair's order took 18 (4 MOVs,
 * the kind's UBFX and the stack's own SUB, ADD and STM), which a 10x10 map pays 3 times a layer. */
#define MRT_DW4T_BODY(P, HEADS, REST, B) \
  "push   {r4-r11, lr}\n" \
  "ldm    r0, {r0, r2, r3, r4, r5, r6, r7, r8}\n" /* the call's fields */ \
  "mla    r5, r5, r6, r3\n"          /* the row's end: out + width x channels */ \
  "add    r1, r0, r8\n"              /* window column 1's staged words */ \
  "add    lr, r1, r8\n"              /* column 2's (the remainder's tiles) */ \
  "adr    r8, " P "heads\n" \
  "add    r8, r8, r7, lsr #8\n"      /* the kind (flags bits 12-14) x 16 */ \
  "ldm    r8, {r8, r9, r10, r11}\n" \
  "push   {r8, r9, r10, r11}\n"       /* [sp, #8] .. [sp, #20] once the STRD is in */ \
  "strd   r2, r5, [sp, #-8]!\n"      /* the records, the row's end */ \
  "bx     r8\n" \
  P "end:\n"                         /* a column done: the next, from the first channel */ \
  "ldrd   r2, r8, [sp]\n"            /* the records, the row's end */ \
  "cmp    r3, r8\n" \
  "it     ne\n" \
  "ldrne  pc, [sp, #8]\n" \
  P "ret:\n"                         /* the row's last output (records over the row) */ \
  "add    sp, sp, #24\n" \
  "pop    {r4-r11, pc}\n" \
  ".p2align 2\n" \
  P "heads:\n" \
  MRT_DW4T_ENTRY(P, "0", B) \
  MRT_DW4T_ENTRY(P, "0", B)          /* never called: no tile's P0 is in slot 1 */ \
  MRT_DW4T_ENTRY(P, "2", B) \
  MRT_DW4T_ENTRY(P, "3", B) \
  MRT_DW4T_ENTRY(P, "4", B) \
  MRT_DW4T_ENTRY(P, "5", B) \
  MRT_DW4T_ENTRY(P, "6", B) \
  ".p2align 2\n" \
  HEADS(P, "0", "4", MRT_DW4T_MACS4, "r5", "r6", "r7") \
  HEADS(P, "2", "4", MRT_DW4T_MACS4, "r7", "r6", "r5") \
  REST(P, "3", "2", MRT_DW4T_MACS2, "r5", "r6", "r7") \
  REST(P, "4", "1", MRT_DW4T_MACS1, "r5", "r6", "r7") \
  REST(P, "5", "3", MRT_DW4T_MACS3, "r5", "r6", "r7") \
  REST(P, "6", "2", MRT_DW4T_MACS2, "r6", "r7", "r5") \
  MRT_DW4T_TAILS(P)

/* Four output rows of the staged 3-slot layout (or the rows' remainder: flags bits 3-5 as
 * mrt_dw3_quad_s8's, from its fixed slots), every column and channel, with the records'
 * tails (above): mrt_dw_quad's fields, flags bits 12-14 the call's kind (the rotation
 * of a 4-row call, 3-5 the remainder's 2, 1 or 3 rows). */
__attribute__((naked, used, aligned(4))) void mrt_dw3_quad_tails_s8(const struct mrt_dw_quad *a)
{
    __asm__ volatile(MRT_DW4T_BODY(".Ldw4t1_", MRT_DW4T_HEADS_X1, MRT_DW4T_REST_X1, "a"));
}

/* The same for a depth multiplier of 2: head A (output channel 2c) reads input channel
 * c's staged words without moving r0, head B (2c + 1) moves on; the records send each
 * to the other. */
__attribute__((naked, used, aligned(4))) void mrt_dw3_quad_tails_x2_s8(const struct mrt_dw_quad *a)
{
    __asm__ volatile(MRT_DW4T_BODY(".Ldw4t2_", MRT_DW4T_HEADS_X2, MRT_DW4T_REST_X2, "b"));
}
