/* int8 convolutions with few output channels (1-7) for Arm's DSP extension (Cortex-M4,
 * M7, M33): a tile of two output PIXELS by two output channels, over input rows staged
 * once.
 *
 * The staged kernels of mrt_dot_dsp.c stage each pixel's window (KH x KW x C values) and
 * share it across groups of output channels; with 1-7 outputs nothing amortizes that
 * staging. Here each input row is paired once (mrt_pair4_s8: each word as SXTB16 of it,
 * then of it rotated by 8, kernel/paired.py's order) into a ring of KH staged rows, its
 * SAME border columns holding the pad value's pair. A window row's KW x C values are then
 * a contiguous run of KW x C/2 staged words, and the next pixel's run starts sx x C/2
 * words later. The tile reads, per two steps of the run, pixel A's two words (LDRD),
 * pixel B's (LDRD) and the two channels' weights of each step (LDRD: the build stores the
 * channel pair's words interleaved step by step, toolchain/schedule/fewout_records.py),
 * 8 SMLADs: 16 MACs in 12 instructions, 14 registers (4 sums, 6 operands, 2 pixel
 * pointers, the weight pointer and the run's end). An odd last channel runs 2 pixels x 1
 * channel (8 MACs in 7). The weights and bias are doubled at build time so the
 * requantization is the SMMLAR form of mrt_im2col_dsp.c (5 instructions with the store).
 * An odd row's last pixel is computed as both pixels of its tile (stored twice, the same
 * value), so nothing is read outside the staged rows.
 *
 * Records (int32 words, toolchain/schedule/fewout_records.py writes them): the geometry
 * below, then per pair of output channels the doubled biases b0, b1, per window row
 * per step the words w0(t), w1(t), then M0, 2 K_hi0, s0 + 1, M1, 2 K_hi1, s1 + 1; an odd
 * last channel: b, its words, M, 2 K_hi, s + 1.
 */
#include <stdint.h>

/* The profile (toolchain/emu/profile.py) charges a runtime function to the dispatch
 * that runs it where the generated code calls it; the helpers below are called from
 * mrt_fo_conv_s8 only, so they share its section (one code range, the same row). */
#define MRT_FO_SECTION __attribute__((section(".text.mrt_fo_conv_s8")))

/* dst = an input row's 4 x words int8 values as 16-bit pairs, each word as SXTB16 of it
 * then of it rotated by 8 (kernel/paired.py's order): 4 words a pass (LDM, 8 SXTB16,
 * STM), the rest one at a time. src and dst word-aligned (the channels a multiple of
 * 4), words >= 1. */
MRT_FO_SECTION __attribute__((naked, used)) static void mrt_fo_pair_row(
        int32_t *dst, const int8_t *src, uint32_t words)
{
    __asm__ volatile(
        "push   {r4-r11}\n"
        "lsrs   r3, r2, #2\n"
        "beq    2f\n"
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
        "2:\n"
        "ands   r2, r2, #3\n"
        "beq    4f\n"
        "3:\n"
        "ldr    r3, [r1], #4\n"
        "sxtb16 r4, r3, ror #8\n"
        "sxtb16 r3, r3\n"
        "strd   r3, r4, [r0], #8\n"
        "subs   r2, r2, #1\n"
        "bne    3b\n"
        "4:\n"
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
} mrt_fo_geometry;

/* One tile's arguments, read by the assembly at these byte offsets. */
typedef struct {
    const int32_t *records;      /* 0: the first channel pair's block */
    int8_t *out;                 /* 4: pixel A's first output channel */
    int32_t out_b;               /* 8: pixel B's outputs from pixel A's, bytes */
    int32_t in_b;                /* 12: pixel B's staged words from pixel A's, bytes */
    int32_t run_pair;            /* 16: a window row's weight bytes for a channel pair */
    int32_t pairs;               /* 20: channel pairs */
    int32_t odd;                 /* 24: 1 where a last channel is alone */
    const int32_t *const *rows_end; /* 28: past the last window row's pointer */
    int32_t rows_at;             /* 32: the walker over rows (the assembly's) */
    const int32_t *rows[MRT_FO_MAX_KH]; /* 36: each window row's run for pixel A */
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

/* Two steps of two pixels x one channel: sums r0 (A), r1 (B). */
#define MRT_FO_STEPS2_ONE \
  "ldrd   r4, r5, [r10], #8\n" \
  "ldrd   r6, r7, [r11], #8\n" \
  "ldrd   r8, r9, [r12], #8\n" \
  "smlad  r0, r4, r8, r0\n" \
  "smlad  r1, r6, r8, r1\n" \
  "smlad  r0, r5, r9, r0\n" \
  "smlad  r1, r7, r9, r1\n"

/* The window rows of one channel block: per row, its pixel A pointer from the tile's
 * rows (r10), pixel B's (r11), the run's end (lr: the weights' pointer past the row's
 * RUN bytes), then 4 steps a pass, entered at the second pair of steps where the run is
 * 2 steps more than a multiple of 4 (bit PARITY of RUN). [sp]: the tile. */
#define MRT_FO_ROWS(STEPS2, RUN_SHIFT, PARITY, L) \
  "ldr    r4, [sp]\n" \
  "add    r5, r4, #36\n" \
  "str    r5, [r4, #32]\n" \
  L "0:\n" \
  "ldr    r4, [sp]\n" \
  "ldr    r5, [r4, #32]\n" \
  "ldr    r10, [r5], #4\n" \
  "str    r5, [r4, #32]\n" \
  "ldr    r6, [r4, #12]\n" \
  "add    r11, r10, r6\n" \
  "ldr    r6, [r4, #16]\n" \
  RUN_SHIFT \
  "add    lr, r12, r6\n" \
  "tst    r6, #" #PARITY "\n" \
  "bne    " L "2f\n" \
  L "1:\n" STEPS2 \
  L "2:\n" STEPS2 \
  "cmp    r12, lr\n" \
  "bne    " L "1b\n" \
  "ldr    r4, [sp]\n" \
  "ldr    r5, [r4, #32]\n" \
  "ldr    r6, [r4, #28]\n" \
  "cmp    r5, r6\n" \
  "bne    " L "0b\n"

/* One sum (SUM) requantized with M (r4), 2 K_hi (r5), s + 1 (r6) into r10. */
#define MRT_FO_REQUANT(SUM, M, K, S) \
  "add    r10, " K ", " SUM ", asr #31\n" \
  "smmlar r10, " SUM ", " M ", r10\n" \
  "asr    r10, r10, " S "\n" \
  "ssat   r10, #8, r10\n"

/* The channel blocks of one tile (module comment): labels are numeric and local. */
MRT_FO_SECTION __attribute__((naked, used)) static void mrt_fo_tile_s8(mrt_fo_tile *t)
{
    __asm__ volatile(
        "push   {r0, r4-r11, lr}\n"        /* [sp]: the tile */
        "ldr    r12, [r0]\n"               /* the records */
        "ldr    r1, [r0, #20]\n"
        "cmp    r1, #0\n"
        "beq    50f\n"
        "40:\n"                            /* a channel pair */
        "ldrd   r0, r2, [r12], #8\n"
        "mov    r1, r0\n"
        "mov    r3, r2\n"
        MRT_FO_ROWS(MRT_FO_STEPS2_PAIR, "", 16, "1")
        "ldm    r12!, {r4-r9}\n"
        "ldr    r11, [sp]\n"
        "ldr    lr, [r11, #4]\n"
        "ldr    r11, [r11, #8]\n"
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
        "str    lr, [r11, #4]\n"
        "ldr    r1, [r11, #20]\n"
        "subs   r1, r1, #1\n"
        "str    r1, [r11, #20]\n"
        "bne    40b\n"
        "50:\n"
        "ldr    r11, [sp]\n"
        "ldr    r1, [r11, #24]\n"
        "cmp    r1, #0\n"
        "beq    60f\n"
        "ldr    r0, [r12], #4\n"           /* the odd last channel */
        "mov    r1, r0\n"
        MRT_FO_ROWS(MRT_FO_STEPS2_ONE, "lsr    r6, r6, #1\n", 8, "2")
        "ldm    r12!, {r4-r6}\n"
        "ldr    r11, [sp]\n"
        "ldr    lr, [r11, #4]\n"
        "ldr    r11, [r11, #8]\n"
        MRT_FO_REQUANT("r0", "r4", "r5", "r6")
        "strb   r10, [lr]\n"
        MRT_FO_REQUANT("r1", "r4", "r5", "r6")
        "strb   r10, [lr, r11]\n"
        "60:\n"
        "pop    {r0, r4-r11, pc}\n");
}

/* The whole layer: x (NHWC, its channels a multiple of 4, rows word-aligned), out
 * (NHWC int8), the records, and a stack scratch of kh + 1 staged rows (the ring and a
 * row of pad values), each cols x c2 words. */
void mrt_fo_conv_s8(const int8_t *x, int8_t *out, const int32_t *records,
                    int32_t *scratch)
{
    const mrt_fo_geometry *g = (const mrt_fo_geometry *)records;
    const int32_t row_words = g->cols * g->c2;
    const int32_t kh = g->kh;
    int32_t *pad_row = scratch + kh * row_words;
    int32_t held[MRT_FO_MAX_KH];
    const int32_t right = g->cols - g->left - g->w_in;
    for (int32_t i = 0; i < row_words; ++i)
        pad_row[i] = g->pad_pair;
    /* The ring's border columns: written once, the rows' copies never reach them. */
    for (int32_t s = 0; s < kh; ++s) {
        int32_t *row = scratch + s * row_words;
        for (int32_t i = 0; i < g->left * g->c2; ++i)
            row[i] = g->pad_pair;
        for (int32_t i = (g->cols - right) * g->c2; i < row_words; ++i)
            row[i] = g->pad_pair;
        held[s] = -1;
    }
    mrt_fo_tile t;
    const int32_t *channels = records + sizeof(mrt_fo_geometry) / 4;
    const int32_t run = g->kw * g->c2;           /* staged words of a window row */
    const int32_t in_step = 4 * g->sx * g->c2;   /* bytes from a pixel's run to the next */
    const int32_t in_row = g->w_in * g->c2 * 2;  /* input bytes a row */
    for (int32_t oy = 0; oy < g->h_out; ++oy) {
        const int32_t *rows[MRT_FO_MAX_KH];
        for (int32_t ky = 0; ky < kh; ++ky) {
            int32_t r = oy * g->sy + g->oy0 + ky;
            if (r < 0 || r >= g->h_in) {
                rows[ky] = pad_row;
                continue;
            }
            int32_t s = r % kh;
            int32_t *row = scratch + s * row_words;
            if (held[s] != r) {
                mrt_fo_pair_row(row + g->left * g->c2, x + r * in_row,
                                (uint32_t)(in_row / 4));
                held[s] = r;
            }
            rows[ky] = row;
        }
        int8_t *out_row = out + oy * g->w_out * g->cout;
        for (int32_t ox = 0; ox < g->w_out; ox += 2) {
            const int32_t last = ox + 1 >= g->w_out;
            const int32_t col = (ox * g->sx + g->ox0 + g->left) * g->c2;
            t.records = channels;
            t.out = out_row + ox * g->cout;
            t.out_b = last ? 0 : g->cout;
            t.in_b = last ? 0 : in_step;
            t.run_pair = 8 * run;
            t.pairs = g->cout / 2;
            t.odd = g->cout & 1;
            t.rows_end = &t.rows[kh];
            for (int32_t ky = 0; ky < kh; ++ky)
                t.rows[ky] = rows[ky] + col;
            mrt_fo_tile_s8(&t);
        }
    }
}
