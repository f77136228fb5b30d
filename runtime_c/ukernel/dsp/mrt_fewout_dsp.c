/* int8 convolutions with few output channels (1-7) for Arm's DSP extension (Cortex-M4,
 * M7, M33): a tile of two output PIXELS by two output channels, over input rows staged
 * once.
 *
 * The staged kernels of mrt_dot_dsp.c stage each pixel's window (KH x KW x C values) and
 * share it across groups of output channels; with 1-7 outputs nothing amortizes that
 * staging. Here each input row is paired once (mrt_fo_pair_row: each word as SXTB16 of
 * it, then of it rotated by 8, kernel/paired.py's order; 3 channels as (c0, c2), (c1, 0))
 * into a ring of KH staged rows, its SAME border columns holding the pad value's pair.
 * A window row's KW x C values are then a contiguous run of KW x C/2 staged words, and
 * the next pixel's run starts sx x C/2 words later. The tile reads, per two steps of the
 * run, pixel A's two words (LDRD), pixel B's (LDRD) and the two channels' weights of
 * each step (LDRD: the build stores the channel pair's words interleaved step by step,
 * toolchain/schedule/fewout_records.py), 8 SMLADs: 16 MACs in 12 instructions, 14
 * registers (4 sums, 6 operands, 2 pixel pointers, the weight pointer and the run's
 * end), 16 steps a pass. An odd last channel (mrt_fo_ones_s8) runs two pixels a tile
 * by LDM of four words: the channel's four words once, each pixel's four, 8 SMLADs (16
 * MACs in 11 instructions). The weights and
 * bias are doubled at build time so the requantization is the SMMLAR form of
 * mrt_im2col_dsp.c (5 instructions with the store). An odd row's last pixel is computed
 * as both pixels of its tile (stored twice, the same value), so nothing is read outside
 * the staged rows. The layer driver (mrt_fo_conv_s8) takes vertical stride 1 only.
 *
 * Records (int32 words, toolchain/schedule/fewout_records.py writes them): the geometry
 * below, then per pair of output channels the doubled biases b0, b1, per window row
 * per step the words w0(t), w1(t), then M0, 2 K_hi0, s0 + 1, M1, 2 K_hi1, s1 + 1; an odd
 * last channel: b, b (one LDRD starts both pixels' sums), its words, M, 2 K_hi, s + 1.
 */
#include <stdint.h>

/* The profile (toolchain/emu/profile.py) charges a runtime function to the dispatch
 * that runs it where the generated code calls it; the helpers below are called from
 * mrt_fo_conv_s8 only, so they share its section (one code range, the same row). */
#define MRT_FO_SECTION __attribute__((section(".text.mrt_fo_conv_s8")))

/* Four words of int8 values (r1) as 16-bit pairs (r0), each word as SXTB16 of it then
 * of it rotated by 8: LDM, 8 SXTB16, STM. */
#define MRT_FO_PAIR4 \
  "ldm    r1!, {r4, r6, r8, r10}\n" \
  "sxtb16 r5, r4, ror #8\n" \
  "sxtb16 r4, r4\n" \
  "sxtb16 r7, r6, ror #8\n" \
  "sxtb16 r6, r6\n" \
  "sxtb16 r9, r8, ror #8\n" \
  "sxtb16 r8, r8\n" \
  "sxtb16 r11, r10, ror #8\n" \
  "sxtb16 r10, r10\n" \
  "stm    r0!, {r4-r11}\n"

/* dst = an input row's words of int8 values as 16-bit pairs (kernel/paired.py's order):
 * 8 words a pass (two MRT_FO_PAIR4: the loop's two instructions over 20), then 4, then
 * the rest one at a time. src and dst word-aligned (the channels a multiple of 4),
 * words >= 1. */
MRT_FO_SECTION __attribute__((naked, used)) static void mrt_fo_pair_row(
        int32_t *dst, const int8_t *src, uint32_t words)
{
    __asm__ volatile(
        "push   {r4-r11}\n"
        "lsrs   r3, r2, #3\n"
        "beq    2f\n"
        "1:\n"
        MRT_FO_PAIR4
        MRT_FO_PAIR4
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "2:\n"
        "tst    r2, #4\n"
        "beq    3f\n"
        MRT_FO_PAIR4
        "3:\n"
        "ands   r2, r2, #3\n"
        "beq    5f\n"
        "4:\n"
        "ldr    r3, [r1], #4\n"
        "sxtb16 r4, r3, ror #8\n"
        "sxtb16 r3, r3\n"
        "strd   r3, r4, [r0], #8\n"
        "subs   r2, r2, #1\n"
        "bne    4b\n"
        "5:\n"
        "pop    {r4-r11}\n"
        "bx     lr\n");
}

#define MRT_FO_MAX_KH 8

typedef struct {
    int32_t h_in, w_in, c2;  /* input rows, columns, staged words a pixel (channels / 2) */
    int32_t kh, kw, sy, sx;  /* the window and its strides (dilation 1) */
    int32_t oy0, ox0;        /* output (0, 0)'s first tap (negative: a SAME border) */
    int32_t h_out, w_out, cout;
    int32_t pad_pair;        /* the pad value in both halves */
    int32_t left, cols;      /* staged border columns on the left, columns a staged row */
    int32_t cin;             /* the input's channels: 3, or 2 x c2 */
} mrt_fo_geometry;

/* A row call's arguments, read by the assembly at these byte offsets (the first five
 * one LDM a window row). */
typedef struct {
    const int32_t *const *rows_at; /* 0: the walker over rows (the assembly's) */
    int32_t col;                 /* 4: pixel A's run from its row's start, bytes */
    int32_t in_b;                /* 8: pixel B's run from pixel A's, bytes */
    int32_t run_pair;            /* 12: a window row's weight bytes for a channel pair */
    const int32_t *const *rows_end; /* 16: past the last window row's pointer */
    const int32_t *records;      /* 20: the first channel pair's block */
    int8_t *out;                 /* 24: pixel A's output channel (the assembly's) */
    int32_t out_b;               /* 28: pixel B's outputs from pixel A's, bytes */
    int32_t pairs;               /* 32: channel pairs (1-3) */
    int32_t tiles;               /* 36: tiles left in the call */
    int32_t tile_in;             /* 40: col's step a tile */
    int32_t tile_out;            /* 44: out's step a tile after its channels' */
    int32_t pairs_left;          /* 48: the assembly's */
    const int32_t *const *rows;  /* 52: each window row's staged row, kh of them */
} mrt_fo_tile;

/* Two steps of two pixels x two channels: r10, r11 the pixels' staged words, r12 the
 * interleaved weights; sums r0 (A, c0), r1 (B, c0), r2 (A, c1), r3 (B, c1). */
#define MRT_FO_STEPS2_PAIR \
  "ldrd   r4, r5, [r10], #8\n" \
  "ldrd   r6, r7, [r11], #8\n" \
  "ldrd   r8, r9, [r12], #8\n" \
  "smlad  r0, r4, r8, r0\n" \
  "smlad  r1, r6, r8, r1\n" \
  "smlad  r2, r4, r9, r2\n" \
  "smlad  r3, r6, r9, r3\n" \
  "ldrd   r8, r9, [r12], #8\n" \
  "smlad  r0, r5, r8, r0\n" \
  "smlad  r1, r7, r8, r1\n" \
  "smlad  r2, r5, r9, r2\n" \
  "smlad  r3, r7, r9, r3\n"

/* The entry of a loop of eight units (of two steps each) a pass, r9 the units mod 8:
 * TBB to the unit that leaves whole passes (1 mod 8 at the eighth, ...). Labels L40 to
 * L47 are the units, L39 the table. */
#define MRT_FO_ENTER(L, R) \
  "tbb    [pc, " R "]\n" \
  L "39:\n" \
  ".byte  (" L "40f - " L "39b) / 2, (" L "47f - " L "39b) / 2, (" L "46f - " L "39b) / 2, (" \
  L "45f - " L "39b) / 2\n" \
  ".byte  (" L "44f - " L "39b) / 2, (" L "43f - " L "39b) / 2, (" L "42f - " L "39b) / 2, (" \
  L "41f - " L "39b) / 2\n"
#define MRT_FO_UNITS8(L, STEPS2) \
  L "40:\n" STEPS2 L "41:\n" STEPS2 L "42:\n" STEPS2 L "43:\n" STEPS2 \
  L "44:\n" STEPS2 L "45:\n" STEPS2 L "46:\n" STEPS2 L "47:\n" STEPS2

/* The window rows of one channel pair: per row, pixel A's run (r10: the row's start
 * + col), pixel B's (r11), the run's end (lr: the weights' pointer past the row's
 * bytes, r8), then 16 steps a pass, entered by the run's units of two steps mod 8 (bits
 * 4 to 6 of its bytes). [sp]: the call's arguments. */
#define MRT_FO_ROWS(STEPS2, L) \
  "ldr    r4, [sp]\n" \
  "ldr    r5, [r4, #52]\n" \
  "str    r5, [r4]\n" \
  "ldm    r4, {r5-r9}\n" \
  L "0:\n" \
  "ldr    r10, [r5], #4\n" \
  "str    r5, [r4]\n" \
  "add    r10, r10, r6\n" \
  "add    r11, r10, r7\n" \
  "add    lr, r12, r8\n" \
  "ubfx   r9, r8, #4, #3\n" \
  MRT_FO_ENTER(L, "r9") \
  MRT_FO_UNITS8(L, STEPS2) \
  "cmp    r12, lr\n" \
  "bne    " L "40b\n" \
  "ldr    r4, [sp]\n" \
  "ldm    r4, {r5-r9}\n" \
  "cmp    r5, r9\n" \
  "bne    " L "0b\n"

/* One sum (SUM) requantized with M (r4), 2 K_hi (r5), s + 1 (r6) into r10. */
#define MRT_FO_REQUANT(SUM, M, K, S) \
  "add    r10, " K ", " SUM ", asr #31\n" \
  "smmlar r10, " SUM ", " M ", r10\n" \
  "asr    r10, r10, " S "\n" \
  "ssat   r10, #8, r10\n"

/* The tiles of one call (module comment): per tile every channel pair, then the
 * pixels' runs and outputs moved on. Labels are numeric and local. */
MRT_FO_SECTION __attribute__((naked, used)) static void mrt_fo_tiles_s8(mrt_fo_tile *t)
{
    __asm__ volatile(
        "push   {r0, r4-r11, lr}\n"        /* [sp]: the arguments */
        "30:\n"                            /* a tile */
        "ldr    r4, [sp]\n"
        "ldr    r12, [r4, #20]\n"          /* the records */
        "ldr    r1, [r4, #32]\n"
        "str    r1, [r4, #48]\n"
        "40:\n"                            /* a channel pair */
        "ldrd   r0, r2, [r12], #8\n"
        "mov    r1, r0\n"
        "mov    r3, r2\n"
        MRT_FO_ROWS(MRT_FO_STEPS2_PAIR, "1")
        "ldm    r12!, {r4-r9}\n"
        "ldr    r11, [sp]\n"
        "ldr    lr, [r11, #24]\n"
        "ldr    r11, [r11, #28]\n"
        MRT_FO_REQUANT("r0", "r4", "r5", "r6")
        "strb   r10, [lr]\n"
        MRT_FO_REQUANT("r1", "r4", "r5", "r6")
        "strb   r10, [lr, r11]\n"
        MRT_FO_REQUANT("r2", "r7", "r8", "r9")
        "strb   r10, [lr, #1]\n"
        MRT_FO_REQUANT("r3", "r7", "r8", "r9")
        "add    lr, lr, #1\n"
        "strb   r10, [lr, r11]\n"
        "add    lr, lr, #1\n"
        "ldr    r11, [sp]\n"
        "str    lr, [r11, #24]\n"
        "ldr    r1, [r11, #48]\n"
        "subs   r1, r1, #1\n"
        "str    r1, [r11, #48]\n"
        "bne    40b\n"
        "ldr    r4, [sp]\n"                /* the next tile */
        "ldr    r5, [r4, #24]\n"
        "ldr    r6, [r4, #44]\n"
        "add    r5, r5, r6\n"
        "str    r5, [r4, #24]\n"
        "ldr    r5, [r4, #4]\n"
        "ldr    r6, [r4, #40]\n"
        "add    r5, r5, r6\n"
        "str    r5, [r4, #4]\n"
        "ldr    r5, [r4, #36]\n"
        "subs   r5, r5, #1\n"
        "str    r5, [r4, #36]\n"
        "bne    30b\n"
        "pop    {r0, r4-r11, pc}\n");
}

/* Four steps of two pixels x one channel: the channel's four words (r2-r5, one LDM)
 * against pixel A's four (r6-r9, one LDM from r10), then pixel B's (from r11): 16 MACs
 * in 11 instructions (one output shares no input between pixels, but the pixels share
 * the weights, and LDM loads four words in one instruction). Sums r0 (A), r1 (B). */
#define MRT_FO_STEPS4_ONE \
  "ldm    r12!, {r2-r5}\n" \
  "ldm    r10!, {r6-r9}\n" \
  "smlad  r0, r6, r2, r0\n" \
  "smlad  r0, r7, r3, r0\n" \
  "smlad  r0, r8, r4, r0\n" \
  "smlad  r0, r9, r5, r0\n" \
  "ldm    r11!, {r6-r9}\n" \
  "smlad  r1, r6, r2, r1\n" \
  "smlad  r1, r7, r3, r1\n" \
  "smlad  r1, r8, r4, r1\n" \
  "smlad  r1, r9, r5, r1\n"

/* An odd last channel's call (mrt_fo_ones_s8): 13 words the assembly copies to its stack
 * (LDM, PUSH) and reads at these byte offsets, the first six one LDM a window row. */
typedef struct {
    const int32_t *const *rows_end; /* 0: past the last window row's pointer */
    const int32_t *const *rows_at;  /* 4: the walker over rows (the assembly's) */
    int32_t col;                  /* 8: pixel A's run from its row's start, bytes */
    int32_t in_b;                 /* 12: pixel B's run from pixel A's, bytes (0: A) */
    int32_t run;                  /* 16: a window row's weight bytes */
    int32_t entry;                /* 20: run / 16 mod 16, + 16 for a run of 2 mod 4 words */
    int8_t *out;                  /* 24: pixel A's output */
    int32_t out_b;                /* 28: pixel B's output from pixel A's (0: A) */
    int32_t tile_out;             /* 32: out's step a tile */
    int32_t tile_in;              /* 36: col's step a tile */
    int32_t col_end;              /* 40: col after the call's last tile */
    const int32_t *const *rows;   /* 44: each window row's staged row, kh of them */
    const int32_t *records;       /* 48: the channel's block */
} mrt_fo_ones;

/* The tiles of two pixels against one channel's block (records: b, b, the words of every
 * window row in turn, M, 2 K_hi, s + 1). Per window row: units of four steps, 16 a
 * pass (a 3x3 window over 32 channels is one pass, 1x7 two), entered by TBH at the
 * unit that leaves whole passes; a run of 2 mod 4 words first takes two steps by LDRD
 * (entries 16-31, out of line). */
MRT_FO_SECTION __attribute__((naked, used)) static void mrt_fo_ones_s8(const mrt_fo_ones *t)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "ldm    r0, {r0-r12}\n"
        "push   {r0-r12}\n"                /* [sp]: the call (mrt_fo_ones) */
        "30:\n"                            /* a tile */
        "ldrd   r5, r12, [sp, #44]\n"
        "ldrd   r6, r7, [sp, #8]\n"
        "ldrd   r8, r9, [sp, #16]\n"
        "ldrd   r0, r1, [r12], #8\n"       /* the bias, twice */
        "10:\n"                            /* a window row */
        "ldr    r10, [r5], #4\n"
        "str    r5, [sp, #4]\n"
        "add    r10, r10, r6\n"
        "add    r11, r10, r7\n"
        "add    lr, r12, r8\n"
        "11:\n"
        "tbh    [pc, r9, lsl #1]\n"
        "499:\n"
        ".hword (500f - 499b) / 2, (515f - 499b) / 2, (514f - 499b) / 2, (513f - 499b) / 2\n"
        ".hword (512f - 499b) / 2, (511f - 499b) / 2, (510f - 499b) / 2, (509f - 499b) / 2\n"
        ".hword (508f - 499b) / 2, (507f - 499b) / 2, (506f - 499b) / 2, (505f - 499b) / 2\n"
        ".hword (504f - 499b) / 2, (503f - 499b) / 2, (502f - 499b) / 2, (501f - 499b) / 2\n"
        ".hword (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2\n"
        ".hword (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2\n"
        ".hword (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2\n"
        ".hword (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2, (20f - 499b) / 2\n"
        "500:\n" MRT_FO_STEPS4_ONE
        "501:\n" MRT_FO_STEPS4_ONE
        "502:\n" MRT_FO_STEPS4_ONE
        "503:\n" MRT_FO_STEPS4_ONE
        "504:\n" MRT_FO_STEPS4_ONE
        "505:\n" MRT_FO_STEPS4_ONE
        "506:\n" MRT_FO_STEPS4_ONE
        "507:\n" MRT_FO_STEPS4_ONE
        "508:\n" MRT_FO_STEPS4_ONE
        "509:\n" MRT_FO_STEPS4_ONE
        "510:\n" MRT_FO_STEPS4_ONE
        "511:\n" MRT_FO_STEPS4_ONE
        "512:\n" MRT_FO_STEPS4_ONE
        "513:\n" MRT_FO_STEPS4_ONE
        "514:\n" MRT_FO_STEPS4_ONE
        "515:\n" MRT_FO_STEPS4_ONE
        "cmp    r12, lr\n"
        "bne    500b\n"
        "12:\n"
        "ldm    sp, {r4-r9}\n"
        "cmp    r5, r4\n"
        "bne    10b\n"
        "ldm    r12, {r4-r6}\n"            /* M, 2 K_hi, s + 1 */
        "ldrd   lr, r8, [sp, #24]\n"       /* out, out_b */
        MRT_FO_REQUANT("r0", "r4", "r5", "r6")
        "strb   r10, [lr]\n"
        MRT_FO_REQUANT("r1", "r4", "r5", "r6")
        "strb   r10, [lr, r8]\n"
        "ldr    r9, [sp, #32]\n"           /* the next tile */
        "add    lr, lr, r9\n"
        "str    lr, [sp, #24]\n"
        "ldr    r5, [sp, #8]\n"
        "ldrd   r6, r7, [sp, #36]\n"
        "add    r5, r5, r6\n"
        "str    r5, [sp, #8]\n"
        "cmp    r5, r7\n"
        "bne    30b\n"
        "add    sp, sp, #52\n"
        "pop    {r4-r11, pc}\n"
        "20:\n"                            /* two steps first: a run of 2 mod 4 words */
        "ldrd   r2, r3, [r12], #8\n"
        "ldrd   r6, r7, [r10], #8\n"
        "smlad  r0, r6, r2, r0\n"
        "smlad  r0, r7, r3, r0\n"
        "ldrd   r6, r7, [r11], #8\n"
        "smlad  r1, r6, r2, r1\n"
        "smlad  r1, r7, r3, r1\n"
        "sub    r9, r9, #16\n"
        "cmp    r12, lr\n"
        "bne    11b\n"
        "b      12b\n");
}

/* dst[0 .. words) = value, words even and >= 2, dst word-aligned: 3 instructions a pair
 * of words (at -Oz the C loop took 5 a word). */
MRT_FO_SECTION __attribute__((naked, used)) static void mrt_fo_fill(int32_t *dst,
                                                                   int32_t value,
                                                                   int32_t words)
{
    __asm__ volatile(
        "1:\n"
        "strd   r1, r1, [r0], #8\n"
        "subs   r2, r2, #2\n"
        "bhi    1b\n"
        "bx     lr\n");
}

/* dst = a row of pixels of 3 channels staged as 4, the fourth 0 (its weights are 0):
 * (c0, c2), (c1, 0) a pixel, as SXTB16 would pair 4 bytes. */
MRT_FO_SECTION static void mrt_fo_pair3_row(int32_t *dst, const int8_t *src,
                                            uint32_t pixels)
{
    for (; pixels > 0; --pixels, src += 3, dst += 2) {
        dst[0] = (int32_t)(((uint32_t)(uint16_t)src[0]) | ((uint32_t)src[2] << 16));
        dst[1] = (int32_t)(uint16_t)src[1];
    }
}

/* The same as mrt_fo_pair_row for a src that is not word-aligned (LDM would fault):
 * a word at a time by LDR, which these cores do unaligned (the firmware leaves
 * CCR.UNALIGN_TRP clear, runtime_c/ukernel/dsp/mrt_pad_dsp.c reads so too). */
MRT_FO_SECTION __attribute__((naked, used)) static void mrt_fo_pair_row_unaligned(
        int32_t *dst, const int8_t *src, uint32_t words)
{
    __asm__ volatile(
        "1:\n"
        "ldr    r3, [r1], #4\n"
        "sxtb16 r12, r3, ror #8\n"
        "sxtb16 r3, r3\n"
        "strd   r3, r12, [r0], #8\n"
        "subs   r2, r2, #1\n"
        "bne    1b\n"
        "bx     lr\n");
}

/* An input row's staging: dst, the row, its words (pixels for 3 channels). */
typedef void (*mrt_fo_stager)(int32_t *dst, const int8_t *src, uint32_t count);

/* The whole layer: x (NHWC: channels a multiple of 4, rows word-aligned, or 3 channels
 * at any byte), out (NHWC int8), the records, and a stack scratch of kh + 1 staged rows
 * (the ring and a row of pad values), each cols x c2 words. */
void mrt_fo_conv_s8(const int8_t *x, int8_t *out, const int32_t *records,
                    int32_t *scratch)
{
    const mrt_fo_geometry *g = (const mrt_fo_geometry *)records;
    const int32_t row_words = g->cols * g->c2;
    const int32_t kh = g->kh;
    int32_t *pad_row = scratch + kh * row_words;
    const int32_t right = g->cols - g->left - g->w_in;
    /* A row of pad values where a window row leaves the input. */
    if (g->oy0 < 0 || (g->h_out - 1) * g->sy + g->oy0 + kh > g->h_in)
        mrt_fo_fill(pad_row, g->pad_pair, row_words);
    /* The ring's border columns: written once, the rows' copies never reach them. */
    for (int32_t s = 0; s < kh; ++s) {
        int32_t *row = scratch + s * row_words;
        if (g->left)
            mrt_fo_fill(row, g->pad_pair, g->left * g->c2);
        if (right)
            mrt_fo_fill(row + (g->cols - right) * g->c2, g->pad_pair, right * g->c2);
    }
    const int32_t run = g->kw * g->c2;           /* staged words of a window row */
    const int32_t in_step = 4 * g->sx * g->c2;   /* bytes from a pixel's run to the next */
    const int32_t pairs = g->w_out / 2;
    const int32_t cout = g->cout;
    /* A row's calls, the same for every row but for where they start: the channel
     * pairs over whole pairs of pixels, then an odd last pixel as both pixels of its
     * tile; an odd last channel the same, by mrt_fo_ones_s8. */
    const int32_t *blocks = records + sizeof(mrt_fo_geometry) / 4;
    const int32_t *last = blocks + (cout / 2) * (8 + 2 * kh * run);
    /* first pixel, tiles, pixels a tile (0: one pixel as both), channel pairs, odd */
    const int32_t parts[4][5] = {
        {0, pairs, 2, cout / 2, 0},
        {2 * pairs, g->w_out & 1, 0, cout / 2, 0},
        {0, pairs, 2, 0, cout & 1},
        {2 * pairs, g->w_out & 1, 0, 0, cout & 1},
    };
    mrt_fo_tile calls[2];
    mrt_fo_ones one[2];
    mrt_fo_ones *one_end = one;
    int8_t *out0[2];
    int32_t col0[2], tiles0[2], n_pair = 0;
    for (int32_t i = 0; i < 4; ++i) {
        const int32_t *p = parts[i];
        if (p[1] == 0 || (p[3] == 0 && p[4] == 0))
            continue;
        const int32_t in_b = p[2] ? in_step : 0, out_b = p[2] ? cout : 0;
        const int32_t col = 4 * (p[0] * g->sx + g->ox0 + g->left) * g->c2;
        if (p[4]) {  /* the odd channel's tiles write the pixels' last channel */
            mrt_fo_ones *o = one_end++;
            o->col = col;
            o->out = out + p[0] * cout + cout - 1;  /* row 0's, moved on a row */
            o->in_b = in_b;
            o->run = 4 * run;
            o->entry = ((run >> 2) & 15) + (run & 2 ? 16 : 0);
            o->records = last;
            o->out_b = out_b;
            o->tile_in = p[2] * in_step;
            o->tile_out = 2 * cout;
            o->col_end = col + p[1] * o->tile_in;
        } else {
            mrt_fo_tile *t = &calls[n_pair];
            t->run_pair = 8 * run;
            t->records = blocks;
            t->in_b = in_b;
            t->out_b = out_b;
            t->pairs = p[3];
            t->tile_in = p[2] * in_step;
            /* the outputs move on as the channel pairs store: the rest */
            t->tile_out = 2 * cout - 2 * p[3];
            col0[n_pair] = col;
            out0[n_pair] = out + p[0] * cout;  /* row 0's, moved on a row */
            tiles0[n_pair++] = p[1];
        }
    }
    /* Stride 1 (fewout_records.py takes no other): each output row brings one input
     * row, staged into the ring's slots in turn (a slot is reused kh rows later, when
     * its row has left the window) or, outside the input, the pad row. Input row
     * oy0 + i is window slot i mod kh, its staged row's start in both twin[i mod kh]
     * and twin[i mod kh + kh], so output row oy's window rows are twin[oy mod kh ..]
     * in order, with no shifting (which -Oz would make a memmove call). The input
     * row, its staging and the ring's next slot are walked, not recomputed a row. */
    const int32_t row_out = g->w_out * cout;
    const int32_t in_row = g->cin == 3 ? 3 * g->w_in : 2 * g->w_in * g->c2;
    const mrt_fo_stager stage = g->cin == 3 ? mrt_fo_pair3_row
                                : (uintptr_t)x & 3 ? mrt_fo_pair_row_unaligned
                                                   : mrt_fo_pair_row;
    const uint32_t count = g->cin == 3 ? (uint32_t)g->w_in : (uint32_t)(in_row / 4);
    const int32_t *twin[2 * MRT_FO_MAX_KH];
    const int32_t **tw = twin;  /* where the next staged row goes; after it, oy's first */
    const int32_t *const *const tw_end = twin + kh;
    int32_t *slot = scratch;
    const int32_t left = g->left * g->c2;  /* a slot's first input column */
    const uint32_t h_in = (uint32_t)g->h_in;
    const int32_t h_out = g->h_out, top = g->oy0 + kh - 1;
    const int8_t *src = x;
    int32_t at = g->oy0 * in_row;  /* the next input row's first byte (< 0: above) */
    /* From oy = 1 - kh: the first window's rows staged before its tiles (one call site:
     * -Oz outlines a repeated one into a function call a row). */
    for (int32_t oy = 1 - kh; oy < h_out; ++oy, at += in_row) {
        const int32_t *staged = pad_row;
        if ((uint32_t)(oy + top) < h_in) {
            stage(slot + left, src + at, count);
            staged = slot;
            slot += row_words;
            if (slot == pad_row)
                slot = scratch;
        }
        tw[0] = tw[kh] = staged;
        if (++tw == tw_end)
            tw = twin;
        if (oy < 0)
            continue;
        const int32_t *const *rows = tw;
        for (int32_t i = 0; i < n_pair; ++i) {
            mrt_fo_tile *t = &calls[i];
            t->rows = rows;
            t->rows_end = rows + kh;
            t->col = col0[i];
            t->out = out0[i];
            t->tiles = tiles0[i];
            mrt_fo_tiles_s8(t);
            out0[i] += row_out;
        }
        /* the assembly copies its call: only the row's fields change */
        for (mrt_fo_ones *o = one; o < one_end; ++o) {
            o->rows = rows;
            o->rows_end = rows + kh;
            mrt_fo_ones_s8(o);
            o->out += row_out;
        }
    }
}
