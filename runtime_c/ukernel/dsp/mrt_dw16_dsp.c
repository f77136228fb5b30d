/* 16x8 depthwise 3x3 (int16 activations, int8 weights) for Arm's DSP extension
 * (Cortex-M4, M7, M33, M55): one call a layer, stride 1 or 2, depth multiplier 1 or 2.
 *
 * Called by generated dispatches (toolchain/codegen/depthwise16.py). SMLAD adds two
 * products to one accumulator, so its halves must be two taps of one output: two rows
 * of the window, as the int8 row-pair kernel (mrt_dw_dsp.c) pairs them. The int16
 * input's words already hold two channels' values, so a staged word of pair m (input
 * rows 2m + row and 2m + row + 1 of one column and channel) is one PKHBT (or PKHTB) of
 * two loaded words, no sign extension. The staged layout is (channel, column, slot):
 * a channel's window columns are 8 bytes apart, at immediate offsets of one pointer,
 * and its records stay put while the column loop runs. Output rows y = 2t and y + 1
 * read pairs A = t and B = t + 1 (slots t mod 2 and (t + 1) mod 2); per window column,
 * with the weights W01 = (w0, w1) and W12 = (w1, w2) of its three rows:
 *
 *     row y   += SMLAD(A, W01) + SMLABT(B, W12)   (B's low half: row y + 2, times w2)
 *     row y+1 += SMLATB(A, W01) + SMLAD(B, W12)   (A's high half: row y, times w0)
 *
 * 6 multiplies an output of 9 MACs (at a stride of 2, output row y reads pair y and
 * pair y + 1's low half: SMLAD(A, W01) + SMLABT(B, W12), one row a tile). The sums are exact int32 sums (the dispatch is
 * taken only where |bias| + 32768 x sum |w| < 2**31, checked at build time), and the
 * requantization is TFLite's 16x8 one, the int64 product of the sum plus bias with the
 * multiplier reduced to 15 bits m (at most 0x7FFF), rounded and shifted right by
 * t = 15 - shift:
 * (x * m + 2**(t-1)) >> t. For 16 <= t <= 32, that is SMMULR(x, m << (32 - t)), the
 * record's M (exactly: numerator and denominator both times 2**(32 - t)), then the
 * clamp (SSAT 16, or USAT 15 for a fused ReLU) and STRH. The records are 8 words an
 * output channel: W01, W12 of window columns 0, 1, 2, the bias, M
 * (schedule/depthwise16_records.py).
 */
#include <stdint.h>

#define MRT_DW16_X2 1   /* depth multiplier 2: output channel o reads input channel o/2 */
#define MRT_DW16_RELU 2 /* clamp to [0, 32767] (USAT 15) instead of the int16 range */
#define MRT_DW16_REVERSE 4 /* row pairs bottom-up: the result placed above its input */
#define MRT_DW16_S2 8      /* stride 2 (rows and columns) */
#define MRT_DW16_RECORD 8

struct mrt_dw16_args {
    const int16_t *in;
    int16_t *out;
    const int32_t *records;
    int32_t *staged;   /* 2 slots x channels x staged columns words */
    int32_t h_in, w_in, channels; /* the input's; channels: input channels */
    int32_t h_out, w_out;
    int32_t row, col;  /* output (y, x) reads input rows y + row .., columns x + col .. */
    int32_t flags;
};

/* The staged columns: the output's windows' input columns, col .. col + stride x
 * (w_out - 1) + 2 (those outside the input zeros). */
static inline __attribute__((always_inline)) int32_t mrt_dw16_columns(
    const struct mrt_dw16_args *a)
{
    return ((a->flags & MRT_DW16_S2) ? 2 * (a->w_out - 1) : a->w_out - 1) + 3;
}

/* Both rows inside the input: every staged column of a run of `columns` input columns
 * (contiguous in both rows), one routine where a C loop of calls per column took about
 * 40 instructions of set-up a column. Per column: two channel pairs a pass (LDRD where
 * both rows' words are aligned: an even channel count, or every other column of an odd
 * one; else 4 LDR), 14 (16) instructions for 4 staged words; then an odd pair, then an
 * odd channel (two LDRH), and the next column: about 12 instructions of control a
 * column. `shape` = 2 x pairs + (channels odd). */
struct mrt_dw16_run {
    const int16_t *row0, *row1;
    int32_t *dst;      /* the first column's channel 0 word */
    int32_t bytes;     /* from channel c's word to c + 1's */
    int32_t columns;   /* >= 1 */
    int32_t shape;
};
#define MRT_DW16_RUN_PAIR(A, B) \
        "pkhbt  r12, " A ", " B ", lsl #16\n" \
        "pkhtb  " B ", " B ", " A ", asr #16\n" \
        "str    r12, [r2]\n" \
        "str    " B ", [r2, r3]\n" \
        "add    r2, r2, r4\n"
__attribute__((naked, used)) static void mrt_dw16_stage_columns(const struct mrt_dw16_run *r)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "ldr    r5, [r0, #16]\n"             /* columns */
        "ldr    r6, [r0, #20]\n"             /* shape */
        "ldr    r3, [r0, #12]\n"             /* bytes */
        "ldr    lr, [r0, #8]\n"              /* the column's dst */
        "ldrd   r0, r1, [r0]\n"              /* row0, row1 */
        "lsls   r4, r3, #1\n"                /* 2 x bytes: the next pair */
        "1:\n"
        "mov    r2, lr\n"
        "lsrs   r7, r6, #2\n"                /* passes of two pairs */
        "beq    4f\n"
        "orr    r12, r0, r1\n"
        "tst    r12, #3\n"
        "bne    3f\n"
        "2:\n"
        "ldrd   r8, r9, [r0], #8\n"
        "ldrd   r10, r11, [r1], #8\n"
        MRT_DW16_RUN_PAIR("r8", "r10")
        MRT_DW16_RUN_PAIR("r9", "r11")
        "subs   r7, r7, #1\n"
        "bne    2b\n"
        "b      4f\n"
        "3:\n"
        "ldr    r8, [r0], #4\n"
        "ldr    r9, [r0], #4\n"
        "ldr    r10, [r1], #4\n"
        "ldr    r11, [r1], #4\n"
        MRT_DW16_RUN_PAIR("r8", "r10")
        MRT_DW16_RUN_PAIR("r9", "r11")
        "subs   r7, r7, #1\n"
        "bne    3b\n"
        "4:\n"
        "tst    r6, #2\n"                    /* an odd pair */
        "beq    5f\n"
        "ldr    r8, [r0], #4\n"
        "ldr    r10, [r1], #4\n"
        MRT_DW16_RUN_PAIR("r8", "r10")
        "5:\n"
        "tst    r6, #1\n"                    /* an odd channel: its word alone */
        "beq    6f\n"
        "ldrh   r8, [r0], #2\n"
        "ldrh   r10, [r1], #2\n"
        "pkhbt  r12, r8, r10, lsl #16\n"
        "str    r12, [r2]\n"
        "6:\n"
        "add    lr, lr, #8\n"                /* the next column's dst: 2 words on */
        "subs   r5, r5, #1\n"
        "bne    1b\n"
        "pop    {r4-r11, pc}\n");
}
#undef MRT_DW16_RUN_PAIR

/* One row of the pair inside the input (SAME's first and last pairs), its values in the
 * low halves (LOW) or the high halves (HIGH) of the staged words, the other halves 0:
 * per channel pair LDR, two ALU instructions, two STRs, ADD, 8 with the loop (then an
 * odd channel's LDRH). `row0` is that row; `row1` unused. */
#define MRT_DW16_ONE_ROW_BODY(SPLIT, ODD) \
        "push   {r4-r8, lr}\n" \
        "ldr    r5, [r0, #16]\n" \
        "ldr    r6, [r0, #20]\n" \
        "ldr    r3, [r0, #12]\n" \
        "ldr    lr, [r0, #8]\n" \
        "ldr    r0, [r0]\n" \
        "lsls   r4, r3, #1\n" \
        "1:\n" \
        "mov    r2, lr\n" \
        "lsrs   r7, r6, #1\n" \
        "beq    3f\n" \
        "2:\n" \
        "ldr    r8, [r0], #4\n" \
        SPLIT \
        "str    r12, [r2]\n" \
        "str    r8, [r2, r3]\n" \
        "add    r2, r2, r4\n" \
        "subs   r7, r7, #1\n" \
        "bne    2b\n" \
        "3:\n" \
        "tst    r6, #1\n" \
        "beq    4f\n" \
        "ldrh   r8, [r0], #2\n" \
        ODD \
        "str    r8, [r2]\n" \
        "4:\n" \
        "add    lr, lr, #8\n" \
        "subs   r5, r5, #1\n" \
        "bne    1b\n" \
        "pop    {r4-r8, pc}\n"
__attribute__((naked, used)) static void mrt_dw16_stage_low(const struct mrt_dw16_run *r)
{
    __asm__ volatile(MRT_DW16_ONE_ROW_BODY(
        "uxth   r12, r8\n"          /* channel c: (value, 0) */
        "lsrs   r8, r8, #16\n",     /* c + 1 */
        ""));
}
__attribute__((naked, used)) static void mrt_dw16_stage_high(const struct mrt_dw16_run *r)
{
    __asm__ volatile(MRT_DW16_ONE_ROW_BODY(
        "lsls   r12, r8, #16\n"     /* channel c: (0, value) */
        "bfc    r8, #0, #16\n",     /* c + 1 */
        "lsls   r8, r8, #16\n"));
}

/* Pair m of rows r0 = 2m + row and r1 = r0 + 1 into `slot`: for each staged column j
 * whose input column j + col is inside the input, channel c's word (r0's value in the
 * low half, r1's in the high half). A row outside the input is zeros. */
static void mrt_dw16_stage(const struct mrt_dw16_args *a, int32_t m, int32_t slot)
{
    const int32_t w_s = mrt_dw16_columns(a), c_n = a->channels;
    const int32_t r0 = 2 * m + a->row, r1 = r0 + 1;
    const int inside0 = r0 >= 0 && r0 < a->h_in;
    const int inside1 = r1 >= 0 && r1 < a->h_in;
    const int16_t *row0 = a->in + (inside0 ? r0 : 0) * a->w_in * c_n;
    const int16_t *row1 = a->in + (inside1 ? r1 : 0) * a->w_in * c_n;
    int32_t j0 = a->col < 0 ? -a->col : 0;
    int32_t j1 = a->w_in - a->col; /* one past the last staged column inside */
    if (j1 > w_s)
        j1 = w_s;
    if (j1 <= j0)
        return;
    struct mrt_dw16_run run;
    run.row0 = row0 + (j0 + a->col) * c_n;
    run.row1 = row1 + (j0 + a->col) * c_n;
    run.dst = a->staged + 2 * j0 + slot;
    run.bytes = 8 * w_s; /* from channel c's word to c + 1's */
    run.columns = j1 - j0;
    run.shape = c_n;     /* 2 x pairs + (channels odd) */
    if (inside0 & inside1) {
        mrt_dw16_stage_columns(&run);
    } else if (inside0) {
        mrt_dw16_stage_low(&run);
    } else if (inside1) {
        run.row0 = run.row1;
        mrt_dw16_stage_high(&run);
    } else { /* both rows outside: zeros */
        for (int32_t c = 0; c < c_n; c++)
            for (int32_t j = j0; j < j1; j++)
                a->staged[2 * (c * w_s + j) + slot] = 0;
    }
}

/* A tile's every output channel: rows y and y + 1 (or y alone) of `count` output
 * columns a channel. */
struct mrt_dw16_cols {
    const int32_t *staged; /* channel 0, window column 0 of output column 0 */
    int16_t *out;          /* row y, column 0, channel 0 */
    int32_t below;         /* bytes from row y to row y + 1 (0: row y alone) */
    int32_t step;          /* bytes from an output column to the next */
    int32_t count;         /* output columns, >= 1 */
    const int32_t *record; /* channel 0's 8 words, the others after it */
    int32_t channels;      /* output channels, >= 1 */
    int32_t skip[2];       /* bytes the staged pointer moves after an even / odd output
                            * channel's columns (to the next input channel, or back to
                            * the same one's first column with a depth multiplier of 2) */
};

/* Rows y and y + 1 of every column of one channel (stored at out and out + below, row
 * y + 1 first so that below = 0 leaves row y: an odd last row). Written in assembly
 * for the reason mrt_dw_dsp.c gives: the loop needs 14 registers (the staged pointer,
 * out, below, step, the count, the record pointer, bias, M, two sums, the two staged
 * words and the two weight words of a window column), and clang at -Oz, given the C,
 * spilled the weights and ran 55 instructions for 2 outputs. Here 27: per window column
 * LDRD of its staged (slot 0, slot 1) words, LDRD of (W01, W12) and 4 multiplies; then
 * 2 SMMULR, 2 SSAT (USAT), 2 STRH, the output ADD, SUBS and BNE. A and B name the
 * registers of the staged words that hold pairs t and t + 1 (slot t mod 2). */
#define MRT_DW16_WINDOW_COLUMN(LOAD, WOFF, A, B, FIRST0, FIRST1) \
        LOAD \
        "ldrd   r12, lr, [r5, #" WOFF "]\n" \
        "smlad  r8, " A ", r12, " FIRST0 "\n"  /* row y: A . (w0, w1) */ \
        "smlatb r9, " A ", r12, " FIRST1 "\n"  /* row y+1: A's row y x w0 */ \
        "smlabt r8, " B ", lr, r8\n"            /* row y: B's row y+2 x w2 */ \
        "smlad  r9, " B ", lr, r9\n"            /* row y+1: B . (w1, w2) */
/* The channel loop around a column loop, its state in a 20-byte frame: [sp] the
 * column count, [sp, #4] channel's output column 0, [sp, #8] the two skips (swapped
 * after each channel: they alternate), [sp, #16] the channels left. 14 instructions a
 * channel where a call per channel from C took about 28. */
#define MRT_DW16_CHANNELS(COLUMNS) \
        "push   {r4-r11, lr}\n" \
        "sub    sp, sp, #20\n" \
        "ldr    r4, [r0, #16]\n" \
        "ldr    r5, [r0, #20]\n" \
        "ldr    r6, [r0, #24]\n" \
        "ldrd   r7, r8, [r0, #28]\n" \
        "str    r4, [sp]\n" \
        "str    r6, [sp, #16]\n" \
        "strd   r7, r8, [sp, #8]\n" \
        "ldm    r0, {r0-r3}\n" \
        "str    r1, [sp, #4]\n" \
        "2:\n" \
        "ldrd   r6, r7, [r5, #24]\n"            /* bias, M */ \
        COLUMNS \
        "ldrd   r8, r9, [sp, #8]\n" \
        "add    r0, r0, r8\n" \
        "strd   r9, r8, [sp, #8]\n" \
        "ldr    r1, [sp, #4]\n" \
        "adds   r1, r1, #2\n" \
        "str    r1, [sp, #4]\n" \
        "adds   r5, r5, #32\n" \
        "ldr    r4, [sp]\n" \
        "ldr    r8, [sp, #16]\n" \
        "subs   r8, r8, #1\n" \
        "str    r8, [sp, #16]\n" \
        "bne    2b\n" \
        "add    sp, sp, #20\n" \
        "pop    {r4-r11, pc}\n"
#define MRT_DW16_COLS_BODY(A, B, SAT) MRT_DW16_CHANNELS( \
        "1:\n" \
        MRT_DW16_WINDOW_COLUMN("ldrd   r10, r11, [r0], #8\n", "0", A, B, "r6", "r6") \
        MRT_DW16_WINDOW_COLUMN("ldrd   r10, r11, [r0]\n", "8", A, B, "r8", "r9") \
        MRT_DW16_WINDOW_COLUMN("ldrd   r10, r11, [r0, #8]\n", "16", A, B, "r8", "r9") \
        "smmulr r8, r8, r7\n" \
        "smmulr r9, r9, r7\n" \
        SAT \
        "strh   r9, [r1, r2]\n" \
        "strh   r8, [r1]\n" \
        "add    r1, r1, r3\n" \
        "subs   r4, r4, #1\n" \
        "bne    1b\n")
#define MRT_DW16_SSAT "ssat   r8, #16, r8\nssat   r9, #16, r9\n"
#define MRT_DW16_USAT "usat   r8, #15, r8\nusat   r9, #15, r9\n"
#define MRT_DW16_COLS(NAME, A, B, SAT) \
    __attribute__((naked, used)) static void NAME(const struct mrt_dw16_cols *c) \
    { \
        __asm__ volatile(MRT_DW16_COLS_BODY(A, B, SAT)); \
    }
MRT_DW16_COLS(mrt_dw16_cols_a0, "r10", "r11", MRT_DW16_SSAT)
MRT_DW16_COLS(mrt_dw16_cols_a1, "r11", "r10", MRT_DW16_SSAT)
MRT_DW16_COLS(mrt_dw16_cols_a0_relu, "r10", "r11", MRT_DW16_USAT)
MRT_DW16_COLS(mrt_dw16_cols_a1_relu, "r11", "r10", MRT_DW16_USAT)

/* Stride 2: output row y reads input rows 2y + row .. 2y + row + 2, which are pair y
 * (A) and pair y + 1's low half (B), and output column x staged columns 2x .. 2x + 2:
 * per output and window column LDRD of the staged words, LDRD of (W01, W12), SMLAD and
 * SMLABT; then SMMULR, SSAT (USAT), STRH, ADD, SUBS, BNE: 18 instructions an output
 * (the staged pointer moves 2 columns by the first LDRD's post-index). */
#define MRT_DW16_S2_WINDOW_COLUMN(LOAD, WOFF, A, B, FIRST) \
        LOAD \
        "ldrd   r12, lr, [r5, #" WOFF "]\n" \
        "smlad  r8, " A ", r12, " FIRST "\n"   /* A . (w0, w1) */ \
        "smlabt r8, " B ", lr, r8\n"            /* B's low row x w2 */
#define MRT_DW16_S2_BODY(A, B, SAT) MRT_DW16_CHANNELS( \
        "1:\n" \
        MRT_DW16_S2_WINDOW_COLUMN("ldrd   r10, r11, [r0], #16\n", "0", A, B, "r6") \
        MRT_DW16_S2_WINDOW_COLUMN("ldrd   r10, r11, [r0, #-8]\n", "8", A, B, "r8") \
        MRT_DW16_S2_WINDOW_COLUMN("ldrd   r10, r11, [r0]\n", "16", A, B, "r8") \
        "smmulr r8, r8, r7\n" \
        SAT \
        "strh   r8, [r1]\n" \
        "add    r1, r1, r3\n" \
        "subs   r4, r4, #1\n" \
        "bne    1b\n")
#define MRT_DW16_S2_COLS(NAME, A, B, SAT) \
    __attribute__((naked, used)) static void NAME(const struct mrt_dw16_cols *c) \
    { \
        __asm__ volatile(MRT_DW16_S2_BODY(A, B, SAT)); \
    }
MRT_DW16_S2_COLS(mrt_dw16_s2_a0, "r10", "r11", "ssat   r8, #16, r8\n")
MRT_DW16_S2_COLS(mrt_dw16_s2_a1, "r11", "r10", "ssat   r8, #16, r8\n")
MRT_DW16_S2_COLS(mrt_dw16_s2_a0_relu, "r10", "r11", "usat   r8, #15, r8\n")
MRT_DW16_S2_COLS(mrt_dw16_s2_a1_relu, "r11", "r10", "usat   r8, #15, r8\n")

typedef void (*mrt_dw16_cols_fn)(const struct mrt_dw16_cols *);

/* Output rows y = 2t and y + 1 (stride 2: row y = t alone) of every channel and
 * column: one call of the tile's kernel. */
static void mrt_dw16_rows(const struct mrt_dw16_args *a, int32_t t, mrt_dw16_cols_fn cols)
{
    const int32_t w_s = mrt_dw16_columns(a), x2 = a->flags & MRT_DW16_X2;
    const int32_t s2 = (a->flags & MRT_DW16_S2) != 0;
    const int32_t outs = a->channels << x2;
    const int32_t y = s2 ? t : 2 * t;
    const int32_t moved = 8 * (a->w_out << s2); /* the staged pointer, by a channel */
    struct mrt_dw16_cols c;
    c.staged = a->staged;
    c.out = a->out + y * a->w_out * outs;
    c.below = y + 1 < a->h_out ? 2 * a->w_out * outs : 0;
    c.step = 2 * outs;
    c.count = a->w_out;
    c.record = a->records;
    c.channels = outs;
    c.skip[1] = 8 * w_s - moved;
    c.skip[0] = x2 ? -moved : c.skip[1];
    cols(&c);
}

void mrt_dw16_s16(const struct mrt_dw16_args *a)
{
    const int32_t w_s = mrt_dw16_columns(a), c_n = a->channels;
    /* The staged columns outside the input: zeros in both slots, written once. */
    for (int32_t j = 0; j < w_s; j++) {
        int32_t x = j + a->col;
        if (x >= 0 && x < a->w_in)
            continue;
        for (int32_t c = 0; c < c_n; c++) {
            int32_t *p = a->staged + 2 * (c * w_s + j);
            p[0] = 0;
            p[1] = 0;
        }
    }
    /* A tile reads pairs t and t + 1: two output rows, or one at stride 2. */
    const int s2 = (a->flags & MRT_DW16_S2) != 0;
    const int32_t tiles = s2 ? a->h_out : (a->h_out + 1) >> 1;
    const int relu = (a->flags & MRT_DW16_RELU) != 0;
    /* By the slot of pair t (A): its words are the LDRD's first or second. */
    static const mrt_dw16_cols_fn kernels[2][2][2] = {
        {{mrt_dw16_cols_a0, mrt_dw16_cols_a1}, {mrt_dw16_cols_a0_relu, mrt_dw16_cols_a1_relu}},
        {{mrt_dw16_s2_a0, mrt_dw16_s2_a1}, {mrt_dw16_s2_a0_relu, mrt_dw16_s2_a1_relu}}};
    const mrt_dw16_cols_fn *cols = kernels[s2][relu];
    /* Pair t in slot t mod 2 either way; each pair staged just before the first tile
     * that reads it, so every input row is read before an output row that the arena
     * plan may have placed over it is stored (schedule/depthwise16_records.py). */
    if (a->flags & MRT_DW16_REVERSE) {
        mrt_dw16_stage(a, tiles, tiles & 1);
        for (int32_t t = tiles - 1; t >= 0; t--) {
            mrt_dw16_stage(a, t, t & 1);
            mrt_dw16_rows(a, t, cols[t & 1]);
        }
        return;
    }
    mrt_dw16_stage(a, 0, 0);
    for (int32_t t = 0; t < tiles; t++) {
        mrt_dw16_stage(a, t + 1, (t + 1) & 1);
        mrt_dw16_rows(a, t, cols[t & 1]);
    }
}
