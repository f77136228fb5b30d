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

/* ---- One output row a call, any column stride (mrt_dw5_row_s8) ----
 *
 * A stride of 2: output row y reads input rows 2y - 2 .. 2y + 2 (SAME), which are the
 * stride-1 kernel's A, B and C of pairs y, y + 1 and y + 2 (pair m = rows 2m - 2, 2m - 1),
 * so the staged layout and its 3 slots are the same, one pair staged per output row, and
 * a call computes row y's sum of that kernel alone: per window column SMLAD(A, W01) +
 * SMLAD(B, W23) + SMLABT(C, W34). Its records have no W12 (19 words a channel: W01,
 * W23, W34 and the bias of window column 0, W01, W23, W34 of columns 1-4, M, K_hi, s),
 * so a window column's weights are one LDM: 6 instructions a column, 37 an output with
 * the requantization and the loop. The output columns are 2 staged columns apart: lr
 * holds the skip of the second; r4, r8, r9 the weight words. */
#define MRT_DW5_ROW_MACS(A, B, C) \
  "ldm    r2!, {r4, r8, r9}\n"       /* W01, W23, W34 */ \
  "smlad  r12, " A ", r4, r12\n" \
  "smlad  r12, " B ", r8, r12\n" \
  "smlabt r12, " C ", r9, r12\n"
#define MRT_DW5_ROW_TILE(LD0, LD1, LDN, A, B, C, REQUANT) \
  "ldm    r2!, {r4, r8, r9, r12}\n"  /* W01, W23, W34, the bias */ \
  LD0 \
  "smlad  r12, " A ", r4, r12\n" \
  "smlad  r12, " B ", r8, r12\n" \
  "smlabt r12, " C ", r9, r12\n" \
  LD1 \
  MRT_DW5_ROW_MACS(A, B, C) \
  LDN \
  MRT_DW5_ROW_MACS(A, B, C) \
  LDN \
  MRT_DW5_ROW_MACS(A, B, C) \
  LDN \
  MRT_DW5_ROW_MACS(A, B, C) \
  "ldm    r2!, {r5, r6, r7}\n" \
  REQUANT("r12") \
  "strb   r12, [r3], #1\n"
#define MRT_DW5_ROW_X1(A, B, C, REQUANT) \
  MRT_DW5_ROW_TILE(MRT_DW5_LD0, MRT_DW5_LD1, MRT_DW5_LDN, A, B, C, REQUANT)
#define MRT_DW5_ROW_X2(A, B, C, REQUANT) \
  MRT_DW5_ROW_TILE(MRT_DW5_LD0_STAY, MRT_DW5_LD1_STAY, MRT_DW5_LDN_STAY, A, B, C, REQUANT) \
  MRT_DW5_ROW_TILE(MRT_DW5_LD0, MRT_DW5_LD1, MRT_DW5_LDN, A, B, C, REQUANT)

/* Output row y, every column and the group's channels: mrt_dw5_pair's fields (row2
 * unused, stage_skip read), the records of 19 words. */
__attribute__((naked, used, aligned(4))) void mrt_dw5_row_s8(const struct mrt_dw5_pair *a)
{
    __asm__ volatile(MRT_DW5_BODY(MRT_DW5_ROW_X1, "1", "ldr    lr, [r0, #36]\n",
                                  "add    r0, r0, lr\n"));
}

/* The same for a depth multiplier of 2. */
__attribute__((naked, used, aligned(4))) void mrt_dw5_row_x2_s8(const struct mrt_dw5_pair *a)
{
    __asm__ volatile(MRT_DW5_BODY(MRT_DW5_ROW_X2, "2", "ldr    lr, [r0, #36]\n",
                                  "add    r0, r0, lr\n"));
}
