/* int8 depthwise 5x5 microkernel for Arm's DSP extension (Cortex-M4, M7, M33).
 *
 * Called by generated dispatches (toolchain/codegen/depthwise5.py) for a 5x5 depthwise
 * convolution of stride 1, two output rows at a time. SMLAD adds two products to one
 * accumulator, so its halves must be two taps of one output: two rows of the window
 * (loops/depthwise.py says why for 3x3). Output rows y and y + 1 read input rows
 * y - 2 .. y + 3, staged as three 16-bit pairs of rows A = (y-2, y-1), B = (y, y+1),
 * C = (y+2, y+3), one word per column and channel (the 3-slot layout of the 3x3 4-row
 * kernel, staged by its mrt_dw_stage_pairs3_s8, which the dispatch calls). Per window column and channel the
 * records hold W01 = (w0, w1), W23 = (w2, w3), W12 = (w1, w2) and W34 = (w3, w4), and
 *
 *   row y   = SMLAD(A, W01) + SMLAD(B, W23) + SMLABT(C, W34)   (C's low half: row y+2, x w4)
 *   row y+1 = SMLATB(A, W01) + SMLAD(B, W12) + SMLAD(C, W34)   (A's high half: row y-1, x w0)
 *
 * 6 multiplies for 2 outputs per window column, 15 an output of 25 MACs. A window
 * column costs its staged words (one LDM of the three slots, and an ADD to reach the
 * column), two LDRDs of weights and the 6 multiplies: 62 instructions for 2 outputs
 * with the requantization (mrt_dw_dsp.c's doubled form: ADD, SMMLAR, ASR, SSAT, STRB),
 * the bias coming with the first column's weights in one LDM.
 *
 * Registers: r0 the staged words of window column 0 (moves 12 bytes a channel), r1 the
 * staged column distance S, r2 the records, r3 the output (row y), r4 the distance to
 * row y+1's output, r5-r7 the three slots (then M, K_hi, s), r8-r9 weight words (then
 * temporaries), r10 the window column's staged words, r11 the channels left, r12 and lr
 * the sums of rows y and y+1. The sums are SMLAD's exact 32-bit sums of int8 products,
 * so the results are the reference's.
 */
#include <stdint.h>

/* What one call computes (offsets used by the assembly below). */
struct mrt_dw5_pair {
    int8_t *out;             /* 0: output row y, column 0, the group's first channel */
    const int32_t *stage;    /* 4: the staged words of window column 0 of column 0 */
    const int32_t *records;  /* 8: the group's first channel's record (24 words: W01,
                                W23, the bias, W12, W34 of window column 0, then W01,
                                W23, W12, W34 of columns 1-4, M, K_hi, s - 1; doubled:
                                2 x w, 2 x bias, M, 2 x K_hi, s) */
    uint32_t channels;       /* 12: output channels of the group (x2: even) */
    uint32_t width;          /* 16: output columns, >= 1 */
    int32_t row2;            /* 20: bytes from an output to the one below (0: row y alone,
                                row y+1 stored first and over by it) */
    uint32_t flags;          /* 24: bits 0-1: the slot of A (B, C in the next ones mod 3);
                                bit 2: the records are doubled */
    uint32_t column_bytes;   /* 28: S, from a staged column to the next: 12 x group input
                                channels */
    uint32_t out_skip;       /* 32: output bytes from a column's group to the next's */
    uint32_t stage_skip;     /* 36: mrt_dw5_row_s8: staged bytes from a column's words
                                past the group to the next output column's: S x (stride
                                - 1) */
};

/* Window column 0's staged words, and column 1 and the others at S further, for a tile
 * that moves r0 past column 0 (LDMDB from S + 12 on), and one that does not (the first
 * output channel of a depth multiplier of 2). */
#define MRT_DW5_LD0 "ldm    r0!, {r5, r6, r7}\n"
#define MRT_DW5_LD1 "add    r10, r0, r1\n" "ldmdb  r10, {r5, r6, r7}\n"
#define MRT_DW5_LDN "add    r10, r10, r1\n" "ldmdb  r10, {r5, r6, r7}\n"
#define MRT_DW5_LD0_STAY "ldm    r0, {r5, r6, r7}\n"
#define MRT_DW5_LD1_STAY "add    r10, r0, r1\n" "ldm    r10, {r5, r6, r7}\n"
#define MRT_DW5_LDN_STAY "add    r10, r10, r1\n" "ldm    r10, {r5, r6, r7}\n"

/* One window column (after the first) into both sums. */
#define MRT_DW5_MACS(A, B, C) \
  "ldrd   r8, r9, [r2], #8\n"        /* W01, W23 */ \
  "smlad  r12, " A ", r8, r12\n" \
  "smlatb lr, " A ", r8, lr\n" \
  "smlad  r12, " B ", r9, r12\n" \
  "ldrd   r8, r9, [r2], #8\n"        /* W12, W34 */ \
  "smlabt r12, " C ", r9, r12\n" \
  "smlad  lr, " B ", r8, lr\n" \
  "smlad  lr, " C ", r9, lr\n"

/* A sum (in place) -> int8 with M (r5), K_hi (r6) and s (r7): mrt_dw_dsp.c's doubled
 * form (twice the sum: SMMLAR's rounding is the folded form's 2**30), and its folded
 * one for records that are not doubled. */
#define MRT_DW5_FAST(ACC) \
  "add    r8, r6, " ACC ", asr #31\n" \
  "smmlar " ACC ", " ACC ", r5, r8\n" \
  "asr    " ACC ", " ACC ", r7\n" \
  "ssat   " ACC ", #8, " ACC "\n"
#define MRT_DW5_SLOW(ACC) \
  "and    r8, " ACC ", #0x80000000\n" \
  "orr    r8, r8, #0x40000000\n" \
  "add    r9, r6, " ACC ", asr #31\n" \
  "smlal  r8, r9, " ACC ", r5\n" \
  "asr    r9, r9, r7\n" \
  "ssat   " ACC ", #8, r9\n"

/* One output channel, both rows: row y+1 stored first, so that at a distance of 0 row y
 * lands over it (an odd last row). */
#define MRT_DW5_TILE(LD0, LD1, LDN, A, B, C, REQUANT) \
  "ldm    r2!, {r8, r9, r12}\n"      /* W01, W23, the bias */ \
  LD0 \
  "smlatb lr, " A ", r8, r12\n" \
  "smlad  r12, " A ", r8, r12\n" \
  "smlad  r12, " B ", r9, r12\n" \
  "ldrd   r8, r9, [r2], #8\n"        /* W12, W34 */ \
  "smlabt r12, " C ", r9, r12\n" \
  "smlad  lr, " B ", r8, lr\n" \
  "smlad  lr, " C ", r9, lr\n" \
  LD1 \
  MRT_DW5_MACS(A, B, C) \
  LDN \
  MRT_DW5_MACS(A, B, C) \
  LDN \
  MRT_DW5_MACS(A, B, C) \
  LDN \
  MRT_DW5_MACS(A, B, C) \
  "ldm    r2!, {r5, r6, r7}\n"       /* M, K_hi, s */ \
  REQUANT("r12") \
  REQUANT("lr") \
  "strb   lr, [r3, r4]\n" \
  "strb   r12, [r3], #1\n"

/* A tile of one output channel, and of the two of one input channel (a depth
 * multiplier of 2: the first reads the staged words without moving r0). */
#define MRT_DW5_X1(A, B, C, REQUANT) \
  MRT_DW5_TILE(MRT_DW5_LD0, MRT_DW5_LD1, MRT_DW5_LDN, A, B, C, REQUANT)
#define MRT_DW5_X2(A, B, C, REQUANT) \
  MRT_DW5_TILE(MRT_DW5_LD0_STAY, MRT_DW5_LD1_STAY, MRT_DW5_LDN_STAY, A, B, C, REQUANT) \
  MRT_DW5_TILE(MRT_DW5_LD0, MRT_DW5_LD1, MRT_DW5_LDN, A, B, C, REQUANT)

/* The column loop over the group's channel loop ([sp]: the records, [sp, #4] the
 * columns left, [sp, #8] the channels, [sp, #12] the output skip). After a column's
 * channels r0 is at the next column's staged words (AFTER moves it on for a stride of
 * 2). */
#define MRT_DW5_COLUMNS(MULT, STEP, AFTER, A, B, C, REQUANT) \
  "10:\n" \
  "ldr    r2, [sp]\n" \
  "ldr    r11, [sp, #8]\n" \
  "11:\n" \
  MULT(A, B, C, REQUANT) \
  "subs   r11, r11, #" STEP "\n" \
  "bne    11b\n" \
  AFTER \
  "ldr    r8, [sp, #12]\n" \
  "add    r3, r3, r8\n" \
  "ldr    r8, [sp, #4]\n" \
  "subs   r8, r8, #1\n" \
  "str    r8, [sp, #4]\n" \
  "bne    10b\n" \
  "b      9f\n"

/* The three slot rotations (r12: A's slot) of one requantization. */
#define MRT_DW5_ROTATIONS(MULT, STEP, AFTER, REQUANT, L1, L2) \
  "cmp    r12, #1\n" \
  "beq    " L1 "f\n" \
  "bhi    " L2 "f\n" \
  MRT_DW5_COLUMNS(MULT, STEP, AFTER, "r5", "r6", "r7", REQUANT) \
  L1 ":\n" \
  MRT_DW5_COLUMNS(MULT, STEP, AFTER, "r6", "r7", "r5", REQUANT) \
  L2 ":\n" \
  MRT_DW5_COLUMNS(MULT, STEP, AFTER, "r7", "r5", "r6", REQUANT)

/* EXTRA: the field a kernel keeps in a register (the row distance in r4, or the row
 * kernel's staged column skip in lr). */
#define MRT_DW5_BODY(MULT, STEP, EXTRA, AFTER) \
  "push   {r4-r11, lr}\n" \
  "sub    sp, sp, #16\n" \
  "ldr    r3, [r0, #0]\n" \
  EXTRA \
  "ldr    r2, [r0, #8]\n" \
  "str    r2, [sp]\n" \
  "ldr    r1, [r0, #16]\n" \
  "str    r1, [sp, #4]\n" \
  "ldr    r1, [r0, #12]\n" \
  "str    r1, [sp, #8]\n" \
  "ldr    r1, [r0, #32]\n" \
  "str    r1, [sp, #12]\n" \
  "ldr    r7, [r0, #24]\n" \
  "ldr    r1, [r0, #28]\n" \
  "ldr    r0, [r0, #4]\n" \
  "and    r12, r7, #3\n" \
  "tst    r7, #4\n" \
  "beq    30f\n" \
  MRT_DW5_ROTATIONS(MULT, STEP, AFTER, MRT_DW5_FAST, "21", "22") \
  "30:\n" \
  MRT_DW5_ROTATIONS(MULT, STEP, AFTER, MRT_DW5_SLOW, "31", "32") \
  "9:\n" \
  "add    sp, sp, #16\n" \
  "pop    {r4-r11, pc}\n"

/* Both output rows of a row pair, every column and the group's channels (>= 1). */
__attribute__((naked, used, aligned(4))) void mrt_dw5_pair_s8(const struct mrt_dw5_pair *a)
{
    __asm__ volatile(MRT_DW5_BODY(MRT_DW5_X1, "1", "ldr    r4, [r0, #20]\n", ""));
}

/* The same for a depth multiplier of 2 (output channels 2c and 2c + 1 read input
 * channel c's staged words). Its own function, so that --gc-sections drops it from
 * images without such a layer. */
__attribute__((naked, used, aligned(4))) void mrt_dw5_pair_x2_s8(const struct mrt_dw5_pair *a)
{
    __asm__ volatile(MRT_DW5_BODY(MRT_DW5_X2, "2", "ldr    r4, [r0, #20]\n", ""));
}

/* ---- Stride 2, two output rows a call (mrt_dw5_s2_s8) ----
 *
 * Output row y of a stride of 2 reads input rows 2y - 2 .. 2y + 2 (SAME): with pair m =
 * rows (2m - 2, 2m - 1), that is pairs y, y + 1 and the low half of y + 2, and row y + 1
 * reads pairs y + 1, y + 2 and y + 3's low half, against the same weight words:
 *
 *   row y   = SMLAD(P0, W01) + SMLAD(P1, W23) + SMLABT(P2, W34)
 *   row y+1 = SMLAD(P1, W01) + SMLAD(P2, W23) + SMLABT(P3, W34)
 *
 * so a tile of two rows reads 4 staged words and 3 weight words (one LDM each) per
 * window column for 6 multiplies: 58 instructions for 2 outputs. The staged layout has
 * 4 slots (pair m in slot m mod 4; a tile's P0 in slot 0 or 2, its rotation), staged by
 * mrt_dw5_stage_pairs4_s8, two pairs a tile. The records (19 words a channel: W01, W23,
 * W34 and the bias of window column 0, W01, W23, W34 of columns 1-4, M, K_hi, s) mark a
 * group's last channel in the shift word (bit 8; ASR reads the low byte), which ends the
 * channel loop: with 4 staged words, 3 weight words and 2 sums there is no register for
 * a count, nor for the window column's address, so r0 walks the five columns and comes
 * back (a SUB). Registers: r0 staged words, r1 S, r2 records, r3 output (row y), r4 the
 * distance to row y + 1, r5-r8 the 4 slots (then M, K_hi, s and a temporary), r9-r11
 * the weight words, r12 and lr the sums. The output columns are two staged columns
 * apart (the skip on the stack). */

/* dst[4*i] (16 bytes apart) = (row0[i], row1[i]) for i < n: the 4-slot layout. 4 values
 * a pass (2 LDR: ARMv7-M and v8-M Mainline load unaligned words; PKHBT / PKHTB put two
 * values of each row in a word, whose SXTB16 and SXTB16 ROR #8 are two pairs), then one
 * by one. */
__attribute__((naked, used)) void mrt_dw5_stage_pairs4_s8(int32_t *dst, const int8_t *row0,
                                                           const int8_t *row1, uint32_t n)
{
    __asm__ volatile(
        "push   {r4-r7, lr}\n"
        "lsrs   r12, r3, #2\n"
        "beq    2f\n"
        "1:\n"
        "ldr    r4, [r1], #4\n"
        "ldr    r5, [r2], #4\n"
        "pkhbt  r6, r4, r5, lsl #16\n"   /* values 0, 1 of row0, then of row1 */
        "pkhtb  r7, r5, r4, asr #16\n"   /* values 2, 3 */
        "sxtb16 r4, r6\n"
        "sxtb16 r5, r6, ror #8\n"
        "str    r4, [r0], #16\n"
        "str    r5, [r0], #16\n"
        "sxtb16 r4, r7\n"
        "sxtb16 r5, r7, ror #8\n"
        "str    r4, [r0], #16\n"
        "str    r5, [r0], #16\n"
        "subs   r12, r12, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r3, r3, #3\n"
        "beq    4f\n"
        "3:\n"
        "ldrsb  r4, [r1], #1\n"
        "ldrsb  r5, [r2], #1\n"
        "pkhbt  r4, r4, r5, lsl #16\n"
        "str    r4, [r0], #16\n"
        "subs   r3, r3, #1\n"
        "bne    3b\n"
        "4:\n"
        "pop    {r4-r7, pc}\n");
}

/* The five window columns' staged words: r0 moved past column 0 (the next channel's
 * words) or not (the first output channel of a depth multiplier of 2). */
#define MRT_DW5_S2_LD0 "ldm    r0!, {r5, r6, r7, r8}\n"
#define MRT_DW5_S2_LDN "add    r0, r0, r1\n" "ldmdb  r0, {r5, r6, r7, r8}\n"
#define MRT_DW5_S2_LD0_STAY "ldm    r0, {r5, r6, r7, r8}\n"
#define MRT_DW5_S2_LDN_STAY "add    r0, r0, r1\n" "ldm    r0, {r5, r6, r7, r8}\n"

#define MRT_DW5_S2_MACS(LDN, P0, P1, P2, P3) \
  LDN \
  "ldm    r2!, {r9, r10, r11}\n"     /* W01, W23, W34 */ \
  "smlad  r12, " P0 ", r9, r12\n" \
  "smlad  r12, " P1 ", r10, r12\n" \
  "smlabt r12, " P2 ", r11, r12\n" \
  "smlad  lr, " P1 ", r9, lr\n" \
  "smlad  lr, " P2 ", r10, lr\n" \
  "smlabt lr, " P3 ", r11, lr\n"
/* One output channel, both rows: row y+1 stored first (a distance of 0: row y alone). */
#define MRT_DW5_S2_TILE(LD0, LDN, P0, P1, P2, P3, REQUANT) \
  "ldm    r2!, {r9, r10, r11, r12}\n" /* W01, W23, W34, the bias */ \
  LD0 \
  "smlad  lr, " P1 ", r9, r12\n" \
  "smlad  r12, " P0 ", r9, r12\n" \
  "smlad  r12, " P1 ", r10, r12\n" \
  "smlabt r12, " P2 ", r11, r12\n" \
  "smlad  lr, " P2 ", r10, lr\n" \
  "smlabt lr, " P3 ", r11, lr\n" \
  MRT_DW5_S2_MACS(LDN, P0, P1, P2, P3) \
  MRT_DW5_S2_MACS(LDN, P0, P1, P2, P3) \
  MRT_DW5_S2_MACS(LDN, P0, P1, P2, P3) \
  MRT_DW5_S2_MACS(LDN, P0, P1, P2, P3) \
  "sub    r0, r0, r1, lsl #2\n"      /* back to column 0 (past it, moved) */ \
  "ldm    r2!, {r5, r6, r7}\n"       /* M, K_hi, s (bit 8: the group's last channel) */ \
  REQUANT("r12") \
  REQUANT("lr") \
  "strb   lr, [r3, r4]\n" \
  "strb   r12, [r3], #1\n"
/* One row (an odd last row, flags bit 3): row y's multiplies, the same loads; P3 is
 * not read (its pair is not staged). */
#define MRT_DW5_S2_ROW1_MACS(LDN, P0, P1, P2) \
  LDN \
  "ldm    r2!, {r9, r10, r11}\n" \
  "smlad  r12, " P0 ", r9, r12\n" \
  "smlad  r12, " P1 ", r10, r12\n" \
  "smlabt r12, " P2 ", r11, r12\n"
#define MRT_DW5_S2_ROW1_TILE(LD0, LDN, P0, P1, P2, P3, REQUANT) \
  "ldm    r2!, {r9, r10, r11, r12}\n" \
  LD0 \
  "smlad  r12, " P0 ", r9, r12\n" \
  "smlad  r12, " P1 ", r10, r12\n" \
  "smlabt r12, " P2 ", r11, r12\n" \
  MRT_DW5_S2_ROW1_MACS(LDN, P0, P1, P2) \
  MRT_DW5_S2_ROW1_MACS(LDN, P0, P1, P2) \
  MRT_DW5_S2_ROW1_MACS(LDN, P0, P1, P2) \
  MRT_DW5_S2_ROW1_MACS(LDN, P0, P1, P2) \
  "sub    r0, r0, r1, lsl #2\n" \
  "ldm    r2!, {r5, r6, r7}\n" \
  REQUANT("r12") \
  "strb   r12, [r3], #1\n"

#define MRT_DW5_S2_X1(TILE, P0, P1, P2, P3, REQUANT) \
  TILE(MRT_DW5_S2_LD0, MRT_DW5_S2_LDN, P0, P1, P2, P3, REQUANT)
#define MRT_DW5_S2_X2(TILE, P0, P1, P2, P3, REQUANT) \
  TILE(MRT_DW5_S2_LD0_STAY, MRT_DW5_S2_LDN_STAY, P0, P1, P2, P3, REQUANT) \
  TILE(MRT_DW5_S2_LD0, MRT_DW5_S2_LDN, P0, P1, P2, P3, REQUANT)

/* The column loop over the group's channel loop ([sp]: the records, [sp, #4] the
 * columns left, [sp, #12] the output skip, [sp, #16] the staged column skip). */
#define MRT_DW5_S2_COLUMNS(MULT, TILE, P0, P1, P2, P3, REQUANT) \
  "10:\n" \
  "ldr    r2, [sp]\n" \
  "11:\n" \
  MULT(TILE, P0, P1, P2, P3, REQUANT) \
  "tst    r7, #256\n" \
  "beq    11b\n" \
  "ldr    r8, [sp, #16]\n" \
  "add    r0, r0, r8\n" \
  "ldr    r8, [sp, #12]\n" \
  "add    r3, r3, r8\n" \
  "ldr    r8, [sp, #4]\n" \
  "subs   r8, r8, #1\n" \
  "str    r8, [sp, #4]\n" \
  "bne    10b\n" \
  "b      9f\n"

/* The two rotations (r12: P0's slot, 0 or 2) of one tile and requantization. */
#define MRT_DW5_S2_ROTATIONS(MULT, TILE, REQUANT, L) \
  "cmp    r12, #0\n" \
  "bne    " L "f\n" \
  MRT_DW5_S2_COLUMNS(MULT, TILE, "r5", "r6", "r7", "r8", REQUANT) \
  L ":\n" \
  MRT_DW5_S2_COLUMNS(MULT, TILE, "r7", "r8", "r5", "r6", REQUANT)

#define MRT_DW5_S2_BODY(MULT) \
  "push   {r4-r11, lr}\n" \
  "sub    sp, sp, #24\n" \
  "ldr    r3, [r0, #0]\n" \
  "ldr    r4, [r0, #20]\n" \
  "ldr    r2, [r0, #8]\n" \
  "str    r2, [sp]\n" \
  "ldr    r1, [r0, #16]\n" \
  "str    r1, [sp, #4]\n" \
  "ldr    r1, [r0, #32]\n" \
  "str    r1, [sp, #12]\n" \
  "ldr    r1, [r0, #36]\n" \
  "str    r1, [sp, #16]\n" \
  "ldr    r7, [r0, #24]\n" \
  "ldr    r1, [r0, #28]\n" \
  "ldr    r0, [r0, #4]\n" \
  "and    r12, r7, #3\n" \
  "tst    r7, #8\n" \
  "bne    40f\n" \
  "tst    r7, #4\n" \
  "beq    30f\n" \
  MRT_DW5_S2_ROTATIONS(MULT, MRT_DW5_S2_TILE, MRT_DW5_FAST, "21") \
  "30:\n" \
  MRT_DW5_S2_ROTATIONS(MULT, MRT_DW5_S2_TILE, MRT_DW5_SLOW, "31") \
  "40:\n" \
  "tst    r7, #4\n" \
  "beq    50f\n" \
  MRT_DW5_S2_ROTATIONS(MULT, MRT_DW5_S2_ROW1_TILE, MRT_DW5_FAST, "41") \
  "50:\n" \
  MRT_DW5_S2_ROTATIONS(MULT, MRT_DW5_S2_ROW1_TILE, MRT_DW5_SLOW, "51") \
  "9:\n" \
  "add    sp, sp, #24\n" \
  "pop    {r4-r11, pc}\n"

/* Output rows y and y + 1 of a stride of 2, every column and the group's channels:
 * mrt_dw5_pair's fields (flags bits 0-1: P0's slot, 0 or 2; bit 2: doubled records;
 * bit 3: row y alone, row2 unused; stage_skip: S). */
__attribute__((naked, used, aligned(4))) void mrt_dw5_s2_s8(const struct mrt_dw5_pair *a)
{
    __asm__ volatile(MRT_DW5_S2_BODY(MRT_DW5_S2_X1));
}

/* The same for a depth multiplier of 2. */
__attribute__((naked, used, aligned(4))) void mrt_dw5_s2_x2_s8(const struct mrt_dw5_pair *a)
{
    __asm__ volatile(MRT_DW5_S2_BODY(MRT_DW5_S2_X2));
}
