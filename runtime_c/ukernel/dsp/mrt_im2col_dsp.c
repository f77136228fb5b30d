/* int8 convolutions over 1-4 input channels (first layers) for Arm's DSP extension
 * (Cortex-M4, M7, M33): the output channels' loops over one output pixel's staged window.
 *
 * The generated dispatch (toolchain/codegen/first_layers.py) stages each output pixel's
 * window once (im2col: its K taps over rows, columns and channels, the weights' own
 * order, as 16-bit pairs, a word per two taps, an odd last tap paired with 0) and calls
 * these loops over it. With few input channels a pixel has few taps (9 for 3x3 over one
 * channel) and many output channels, so a chunk of up to 5 staged words stays in
 * registers for the whole loop over the output channels: per channel one LDM of its
 * bias and weight words (pre-extended and doubled at build time,
 * toolchain/schedule/first_layer_records.py), one SMLAD per word, one LDM of its
 * requantization's M, 2 K_hi and s, and the folded requantization of kernel/requant.py
 * on the doubled sum (SMMLAR, as mrt_dw_dsp.c's MRT_DW_REQUANT_FAST) with the store:
 * 12.25 instructions per output of 9 MACs for 3x3 over one channel (up to 4 words one
 * LDM suffices: 1x7 over one channel 10.4), the loop unrolled eight times and walking a
 * whole output row's pixels in one call. A window of more than 5 words runs in chunks
 * (loops unrolled four times), each a loop over the channels;
 * the first stores its partial sums in a stack array (sums), the middle ones add to
 * them, the last adds its own and requantizes (a window of 9-20 words, but 11 and 16, is
 * one chunk instead, its words loaded again per channel: mrt_i2c_only9_s8 .. only20).
 * The sums are SMLAD's exact 32-bit sums of the doubled products (the build checks they stay within +-2**30), so the results are
 * the reference's bit for bit. Each (kind, words) loop is a function of its own, so
 * that --gc-sections keeps only those a model calls.
 *
 * The only chunk takes up to 6 words (a 1x1 window over 11 or 12 channels: two LDMs a
 * channel, 13 instructions an output of 12 MACs, where two chunks paid 16 and a stack
 * array), up to 8 without a table (13-16 channels: 15-17 an output). The _lut loops (the only and the last chunk) look each output up in a
 * 256-entry table after the requantization (an activation TFLite's converter leaves as
 * an operator of its own, HARD_SWISH, LOGISTIC, TANH, which the importer makes such a
 * table and fusion puts in the layer's epilogue): one LDRB an output, the table's entry
 * for 0 in lr.
 */
#include <stdint.h>

/* The channel loops. Arguments: the chunk's staged words, its records, the channel
 * count, the destination (the output pixel's first channel for a chunk that
 * requantizes, else the sums) and the sums (read by the last chunk of several).
 * Registers: r0 the sum, r1 the records, r2 their end (on the stack for the last
 * chunk, where r2 walks the sums), r3 the destination, r4.. the staged words,
 * r9.. the channel's weight words (then M, 2 K_hi, s and a temporary). */

/* Loading the staged words (r0) and a channel's weight words (r1, moved past them): an
 * LDM of one register is not an instruction Thumb-2 has, so one word is an LDR. */
#define MRT_I2C_P1 "ldr    r4, [r0]\n"
#define MRT_I2C_P2 "ldm    r0, {r4, r5}\n"
#define MRT_I2C_P3 "ldm    r0, {r4-r6}\n"
#define MRT_I2C_P4 "ldm    r0, {r4-r7}\n"
#define MRT_I2C_P5 "ldm    r0, {r4-r8}\n"
#define MRT_I2C_L1 "ldr    r9, [r1], #4\n"
#define MRT_I2C_L2 "ldm    r1!, {r9, r10}\n"
#define MRT_I2C_L3 "ldm    r1!, {r9-r11}\n"
#define MRT_I2C_L4 "ldm    r1!, {r9-r12}\n"
#define MRT_I2C_L5 "ldm    r1!, {r9-r12, lr}\n"
#define MRT_I2C_W1 "r9"
#define MRT_I2C_W2 "r9, r10"
#define MRT_I2C_W3 "r9-r11"
#define MRT_I2C_W4 "r9-r12"
#define MRT_I2C_W5 "r9-r12, lr"
#define MRT_I2C_S1 "smlad  r0, r4, r9, r0\n"
#define MRT_I2C_S2 MRT_I2C_S1 "smlad  r0, r5, r10, r0\n"
#define MRT_I2C_S3 MRT_I2C_S2 "smlad  r0, r6, r11, r0\n"
#define MRT_I2C_S4 MRT_I2C_S3 "smlad  r0, r7, r12, r0\n"
#define MRT_I2C_S5 MRT_I2C_S4 "smlad  r0, r8, lr, r0\n"

/* The doubled sum r0 -> int8 with M (r9), 2 K_hi (r10) and s (r11), stored at r3. */
#define MRT_I2C_REQUANT \
  "ldm    r1!, {r9-r11}\n" \
  "add    r12, r10, r0, asr #31\n" \
  "smmlar r12, r0, r9, r12\n" \
  "asr    r12, r12, r11\n" \
  "ssat   r12, #8, r12\n" \
  "strb   r12, [r3], #1\n"

/* The only chunk of at most 4 words: r2 is free (the end is on the stack), so the
 * channel's bias, weight words, M, 2 K_hi and s fit one LDM, r2 then the temporary. */
#define MRT_I2C_ONE_LDM1 "ldm r1!, {r0, r2, r5-r7}\n" "smlad r0, r4, r2, r0\n" \
  MRT_I2C_REQUANT_IN("r5", "r6", "r7")
#define MRT_I2C_ONE_LDM2 "ldm r1!, {r0, r2, r6-r9}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r6, r0\n" MRT_I2C_REQUANT_IN("r7", "r8", "r9")
#define MRT_I2C_ONE_LDM3 "ldm r1!, {r0, r2, r7-r11}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r7, r0\n" "smlad r0, r6, r8, r0\n" MRT_I2C_REQUANT_IN("r9", "r10", "r11")
#define MRT_I2C_ONE_LDM4 "ldm r1!, {r0, r2, r8-r12, lr}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r8, r0\n" "smlad r0, r6, r9, r0\n" "smlad r0, r7, r10, r0\n" \
  MRT_I2C_REQUANT_IN("r11", "r12", "lr")
/* The doubled sum r0 -> int8 with M, 2 K_hi and s in the given registers, r2 the
 * temporary, stored at r3. */
#define MRT_I2C_REQUANT_IN(M, K, S) MRT_I2C_REQUANT_TO(M, K, S, "r2", MRT_I2C_PLAIN)
/* The same in the temporary T, then LOOK(T): MRT_I2C_PLAIN stores the requantized value,
 * MRT_I2C_TABLE its entry in the table at lr (the entry of -128 at lr - 128; the byte
 * index wraps to it). */
#define MRT_I2C_REQUANT_TO(M, K, S, T, LOOK) \
  "add    " T ", " K ", r0, asr #31\n" \
  "smmlar " T ", r0, " M ", " T "\n" \
  "asr    " T ", " T ", " S "\n" \
  "ssat   " T ", #8, " T "\n" \
  LOOK(T) \
  "strb   " T ", [r3], #1\n"
#define MRT_I2C_PLAIN(T) ""
#define MRT_I2C_TABLE(T) "ldrb   " T ", [lr, " T "]\n"

/* The only chunk through a table (lr holds it, so the bodies leave lr alone): up to 3
 * words one LDM a channel as above, 4 and 5 words two (the bias and weights, then M,
 * 2 K_hi and s), 6 words three. */
#define MRT_I2C_LUT_LDM1 "ldm r1!, {r0, r2, r5-r7}\n" "smlad r0, r4, r2, r0\n" \
  MRT_I2C_REQUANT_TO("r5", "r6", "r7", "r2", MRT_I2C_TABLE)
#define MRT_I2C_LUT_LDM2 "ldm r1!, {r0, r2, r6-r9}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r6, r0\n" MRT_I2C_REQUANT_TO("r7", "r8", "r9", "r2", MRT_I2C_TABLE)
#define MRT_I2C_LUT_LDM3 "ldm r1!, {r0, r2, r7-r11}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r7, r0\n" "smlad r0, r6, r8, r0\n" \
  MRT_I2C_REQUANT_TO("r9", "r10", "r11", "r2", MRT_I2C_TABLE)
#define MRT_I2C_LUT_LDM4 "ldm r1!, {r0, r2, r8-r10}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r8, r0\n" "smlad r0, r6, r9, r0\n" "smlad r0, r7, r10, r0\n" \
  "ldm r1!, {r8-r10}\n" MRT_I2C_REQUANT_TO("r8", "r9", "r10", "r2", MRT_I2C_TABLE)
#define MRT_I2C_LUT_LDM5 "ldm r1!, {r0, r2, r9-r12}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r9, r0\n" "smlad r0, r6, r10, r0\n" "smlad r0, r7, r11, r0\n" \
  "smlad r0, r8, r12, r0\n" \
  "ldm r1!, {r9-r11}\n" MRT_I2C_REQUANT_TO("r9", "r10", "r11", "r2", MRT_I2C_TABLE)
#define MRT_I2C_LUT_LDM6 "ldm r1!, {r0, r2, r10-r12}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r10, r0\n" "smlad r0, r6, r11, r0\n" "smlad r0, r7, r12, r0\n" \
  "ldm r1!, {r2, r10-r12}\n" "smlad r0, r8, r2, r0\n" "smlad r0, r9, r10, r0\n" \
  "ldr r2, [r1], #4\n" MRT_I2C_REQUANT_TO("r11", "r12", "r2", "r12", MRT_I2C_TABLE)
/* 6 words, no table: the bias and 5 weights, then the sixth weight, M, 2 K_hi and s. */
#define MRT_I2C_ONE_LDM6 "ldm r1!, {r0, r2, r10-r12, lr}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r10, r0\n" "smlad r0, r6, r11, r0\n" "smlad r0, r7, r12, r0\n" \
  "smlad r0, r8, lr, r0\n" \
  "ldm r1!, {r2, r10-r12}\n" "smlad r0, r9, r2, r0\n" \
  MRT_I2C_REQUANT_TO("r10", "r11", "r12", "r2", MRT_I2C_PLAIN)

/* 7 and 8 words (a 1x1 window over 13-16 channels; the staged words in r4-r10 or
 * r4-r11, so no table): the bias and weights in LDMs of what is left (r2, r11 / r12,
 * lr), then M, 2 K_hi and s: 15 instructions an output of 13-14 MACs, 17 of 15-16, where
 * two chunks of 4 paid 18, a call a pixel and a stack array of sums. */
#define MRT_I2C_ONE_LDM7 "ldm r1!, {r0, r2, r11, r12, lr}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r11, r0\n" "smlad r0, r6, r12, r0\n" "smlad r0, r7, lr, r0\n" \
  "ldm r1!, {r2, r11, r12}\n" "smlad r0, r8, r2, r0\n" "smlad r0, r9, r11, r0\n" \
  "smlad r0, r10, r12, r0\n" \
  "ldm r1!, {r11, r12, lr}\n" MRT_I2C_REQUANT_TO("r11", "r12", "lr", "r2", MRT_I2C_PLAIN)
#define MRT_I2C_ONE_LDM8 "ldm r1!, {r0, r2, r12, lr}\n" "smlad r0, r4, r2, r0\n" \
  "smlad r0, r5, r12, r0\n" "smlad r0, r6, lr, r0\n" \
  "ldm r1!, {r2, r12, lr}\n" "smlad r0, r7, r2, r0\n" "smlad r0, r8, r12, r0\n" \
  "smlad r0, r9, lr, r0\n" \
  "ldm r1!, {r2, r12}\n" "smlad r0, r10, r2, r0\n" "smlad r0, r11, r12, r0\n" \
  "ldm r1!, {r2, r12, lr}\n" MRT_I2C_REQUANT_TO("r2", "r12", "lr", "r12", MRT_I2C_PLAIN)

/* One channel of each kind of chunk: the only one, the first, a middle one, the last. */
#define MRT_I2C_ONLY(W, S) "ldm r1!, {r0, " W "}\n" S MRT_I2C_REQUANT
#define MRT_I2C_FIRST(W, S) "ldm r1!, {r0, " W "}\n" S "str r0, [r3], #4\n"
#define MRT_I2C_MID(L, S) "ldr r0, [r3]\n" L S "str r0, [r3], #4\n"
#define MRT_I2C_LAST(L, S) "ldr r0, [r2], #4\n" L S MRT_I2C_REQUANT
/* The last chunk through a table at lr: 5 words load their weights in two (lr is not
 * free), r12 the temporary. */
#define MRT_I2C_LAST_LUT(L, S) "ldr r0, [r2], #4\n" L S "ldm r1!, {r9-r11}\n" \
  MRT_I2C_REQUANT_TO("r9", "r10", "r11", "r12", MRT_I2C_TABLE)
#define MRT_I2C_LL1 MRT_I2C_L1
#define MRT_I2C_LL2 MRT_I2C_L2
#define MRT_I2C_LL3 MRT_I2C_L3
#define MRT_I2C_LL4 MRT_I2C_L4
#define MRT_I2C_LL5 MRT_I2C_L4
#define MRT_I2C_SL1 MRT_I2C_S1
#define MRT_I2C_SL2 MRT_I2C_S2
#define MRT_I2C_SL3 MRT_I2C_S3
#define MRT_I2C_SL4 MRT_I2C_S4
#define MRT_I2C_SL5 MRT_I2C_S4 "ldr r9, [r1], #4\n" "smlad r0, r8, r9, r0\n"

/* A loop of four channels a pass, entered at the body that leaves a whole number of
 * passes (count mod 4 = 3 at the second, ...). STRIDE: the records' bytes per channel;
 * the loop ends where the records do, r1 + count * STRIDE. */
#define MRT_I2C_LOOP(P, BODY, STRIDE) \
  "push   {r4-r11, lr}\n" \
  P \
  "mov    r12, #" #STRIDE "\n" \
  "mla    r12, r2, r12, r1\n" \
  "ands   r2, r2, #3\n" \
  "beq    0f\n" \
  "cmp    r2, #2\n" \
  "mov    r2, r12\n" \
  "blo    4f\n" \
  "beq    3f\n" \
  "b      2f\n" \
  "0:\n" \
  "mov    r2, r12\n" \
  "1:\n" BODY "2:\n" BODY "3:\n" BODY "4:\n" BODY \
  "cmp    r1, r2\n" \
  "bne    1b\n" \
  "pop    {r4-r11, pc}\n"

/* The last chunk: r2 walks the sums (the fifth argument), the end is on the stack; a
 * _lut loop's table (the sixth argument) at [sp + 44], which SETUP loads into lr (ANDS'
 * flags survive the LDR). */
#define MRT_I2C_LAST_LOOP(P, BODY, STRIDE, SETUP) \
  "push   {r4-r11, lr}\n" \
  P \
  "mov    r12, #" #STRIDE "\n" \
  "mla    r12, r2, r12, r1\n" \
  "ands   r2, r2, #3\n" \
  "push   {r12}\n" \
  SETUP \
  "beq    0f\n" \
  "cmp    r2, #2\n" \
  "ldr    r2, [sp, #40]\n" \
  "blo    4f\n" \
  "beq    3f\n" \
  "b      2f\n" \
  "0:\n" \
  "ldr    r2, [sp, #40]\n" \
  "1:\n" BODY "2:\n" BODY "3:\n" BODY "4:\n" BODY \
  "ldr    r12, [sp]\n" \
  "cmp    r1, r12\n" \
  "bne    1b\n" \
  "add    sp, sp, #4\n" \
  "pop    {r4-r11, pc}\n"

#define MRT_I2C_DEFINE(N) \
__attribute__((naked, used)) void mrt_i2c_first##N##_s8(const int32_t *p, const int32_t *r, \
        uint32_t n, void *d, int32_t *s) \
{ __asm__ volatile(MRT_I2C_LOOP(MRT_I2C_P##N, MRT_I2C_FIRST(MRT_I2C_W##N, MRT_I2C_S##N), \
                                (4 * (N + 1)))); } \
__attribute__((naked, used)) void mrt_i2c_mid##N##_s8(const int32_t *p, const int32_t *r, \
        uint32_t n, void *d, int32_t *s) \
{ __asm__ volatile(MRT_I2C_LOOP(MRT_I2C_P##N, MRT_I2C_MID(MRT_I2C_L##N, MRT_I2C_S##N), \
                                (4 * N))); } \
__attribute__((naked, used)) void mrt_i2c_last##N##_s8(const int32_t *p, const int32_t *r, \
        uint32_t n, void *d, int32_t *s) \
{ __asm__ volatile(MRT_I2C_LAST_LOOP(MRT_I2C_P##N, \
                                     MRT_I2C_LAST(MRT_I2C_L##N, MRT_I2C_S##N), \
                                     (4 * (N + 3)), "")); } \
__attribute__((naked, used)) void mrt_i2c_last##N##_lut_s8(const int32_t *p, \
        const int32_t *r, uint32_t n, void *d, int32_t *s, const int8_t *table) \
{ __asm__ volatile(MRT_I2C_LAST_LOOP(MRT_I2C_P##N, \
                                     MRT_I2C_LAST_LUT(MRT_I2C_LL##N, MRT_I2C_SL##N), \
                                     (4 * (N + 3)), "ldr    lr, [sp, #44]\n")); }

MRT_I2C_DEFINE(1)
MRT_I2C_DEFINE(2)
MRT_I2C_DEFINE(3)
MRT_I2C_DEFINE(4)
MRT_I2C_DEFINE(5)

/* A last chunk of 6 words without a table (after chunks of 5: a 1x1 window over 21-22
 * or 31 channels), the staged words in r4-r9: the sum, 4 weights, then the last 2 with
 * M and 2 K_hi, then s: 15 instructions an output, where a chunk of 4 and one of 2 paid
 * 12 and 10. */
#define MRT_I2C_P6 "ldm    r0, {r4-r9}\n"
#define MRT_I2C_LAST6 "ldr r0, [r2], #4\n" "ldm r1!, {r10-r12, lr}\n" \
  "smlad r0, r4, r10, r0\n" "smlad r0, r5, r11, r0\n" "smlad r0, r6, r12, r0\n" \
  "smlad r0, r7, lr, r0\n" "ldm r1!, {r10-r12, lr}\n" "smlad r0, r8, r10, r0\n" \
  "smlad r0, r9, r11, r0\n" "ldr r10, [r1], #4\n" \
  MRT_I2C_REQUANT_TO("r12", "lr", "r10", "r11", MRT_I2C_PLAIN)
__attribute__((naked, used)) void mrt_i2c_last6_s8(const int32_t *p, const int32_t *r,
        uint32_t n, void *d, int32_t *s)
{ __asm__ volatile(MRT_I2C_LAST_LOOP(MRT_I2C_P6, MRT_I2C_LAST6, (4 * (6 + 3)), "")); }

/* The only chunk walks the pixels of an output row too (the fifth argument: their count;
 * their staged words one after the other, their outputs too), so a pixel costs no call:
 * per pixel its staged words loaded (P_INC moves r0 past them), the records from their
 * start again, and the loop of eight channels a pass entered by TBB at the body that
 * leaves whole passes (count mod 8 = 1 at the eighth, ...): per channel a quarter or an
 * eighth of an instruction of loop (3x3 over one channel: 12.25 instructions an output,
 * 1x7: 10.4), per pixel 8 more. Stack: [sp] the next pixel's staged words, [sp + 4]
 * the records, [sp + 8] their end, [sp + 12] count mod 8 (one LDM reloads them a
 * pixel), the pixel count at [sp + 52], a _lut loop's table at [sp + 56] (SETUP loads
 * it into lr once). END_TEST: the records' end in r2 (5 words,
 * whose bodies leave it alone) or read from the stack every 8 channels (the bodies of
 * up to 4 words use r2). */
#define MRT_I2C_PIXELS(P_INC, BODY, STRIDE, END_TEST, SETUP) \
  "push   {r4-r11, lr}\n" \
  "mov    lr, #" #STRIDE "\n" \
  "mla    lr, r2, lr, r1\n" \
  "and    r12, r2, #7\n" \
  "mov    r2, lr\n" \
  "push   {r0, r1, r2, r12}\n" \
  SETUP \
  "29:\n" \
  "ldm    sp, {r0, r1, r2, r12}\n" \
  P_INC \
  "str    r0, [sp]\n" \
  "tbb    [pc, r12]\n" \
  "20:\n" \
  ".byte  (21f - 20b) / 2, (28f - 20b) / 2, (27f - 20b) / 2, (26f - 20b) / 2\n" \
  ".byte  (25f - 20b) / 2, (24f - 20b) / 2, (23f - 20b) / 2, (22f - 20b) / 2\n" \
  "21:\n" BODY "22:\n" BODY "23:\n" BODY "24:\n" BODY \
  "25:\n" BODY "26:\n" BODY "27:\n" BODY "28:\n" BODY \
  END_TEST \
  "bne    21b\n" \
  "ldr    r12, [sp, #52]\n" \
  "subs   r12, r12, #1\n" \
  "str    r12, [sp, #52]\n" \
  "bne    29b\n" \
  "add    sp, sp, #16\n" \
  "pop    {r4-r11, pc}\n"
#define MRT_I2C_PI1 "ldr    r4, [r0], #4\n"
#define MRT_I2C_PI2 "ldm    r0!, {r4, r5}\n"
#define MRT_I2C_PI3 "ldm    r0!, {r4-r6}\n"
#define MRT_I2C_PI4 "ldm    r0!, {r4-r7}\n"
#define MRT_I2C_PI5 "ldm    r0!, {r4-r8}\n"
#define MRT_I2C_PI6 "ldm    r0!, {r4-r9}\n"
#define MRT_I2C_PI7 "ldm    r0!, {r4-r10}\n"
#define MRT_I2C_PI8 "ldm    r0!, {r4-r11}\n"

/* The only chunk: up to 4 words one LDM a channel, 5 and 6 words two; through a table
 * (the sixth argument: its entry for 0), up to 3 words one, 4 and 5 two, 6 three. */
#define MRT_I2C_END_STACK "ldr    r12, [sp, #8]\n" "cmp    r1, r12\n"
#define MRT_I2C_DEFINE_ONLY(N, BODY, TEST) \
__attribute__((naked, used)) void mrt_i2c_only##N##_s8(const int32_t *p, const int32_t *r, \
        uint32_t n, int8_t *d, uint32_t pixels) \
{ __asm__ volatile(MRT_I2C_PIXELS(MRT_I2C_PI##N, BODY, (4 * (N + 4)), TEST, "")); }
#define MRT_I2C_DEFINE_LUT(N) \
__attribute__((naked, used)) void mrt_i2c_only##N##_lut_s8(const int32_t *p, \
        const int32_t *r, uint32_t n, int8_t *d, uint32_t pixels, const int8_t *table) \
{ __asm__ volatile(MRT_I2C_PIXELS(MRT_I2C_PI##N, MRT_I2C_LUT_LDM##N, (4 * (N + 4)), \
                                  MRT_I2C_END_STACK, "ldr    lr, [sp, #56]\n")); }

MRT_I2C_DEFINE_ONLY(1, MRT_I2C_ONE_LDM1, MRT_I2C_END_STACK)
MRT_I2C_DEFINE_ONLY(2, MRT_I2C_ONE_LDM2, MRT_I2C_END_STACK)
MRT_I2C_DEFINE_ONLY(3, MRT_I2C_ONE_LDM3, MRT_I2C_END_STACK)
MRT_I2C_DEFINE_ONLY(4, MRT_I2C_ONE_LDM4, MRT_I2C_END_STACK)
MRT_I2C_DEFINE_ONLY(5, MRT_I2C_ONLY(MRT_I2C_W5, MRT_I2C_S5), "cmp    r1, r2\n")
MRT_I2C_DEFINE_ONLY(6, MRT_I2C_ONE_LDM6, MRT_I2C_END_STACK)
MRT_I2C_DEFINE_ONLY(7, MRT_I2C_ONE_LDM7, MRT_I2C_END_STACK)
MRT_I2C_DEFINE_ONLY(8, MRT_I2C_ONE_LDM8, MRT_I2C_END_STACK)
MRT_I2C_DEFINE_LUT(1)
MRT_I2C_DEFINE_LUT(2)
MRT_I2C_DEFINE_LUT(3)
MRT_I2C_DEFINE_LUT(4)
MRT_I2C_DEFINE_LUT(5)
MRT_I2C_DEFINE_LUT(6)

/* The only chunk of 9-20 words but 11 and 16, streamed (a 3x3 window over 2-4 channels,
 * 5x5 or 10x4 over one): more words than registers, so per channel the staged words are
 * loaded again with its weights, five at a time (r4-r8 against r9-r12, lr; r2 walks the
 * pixel's words and is moved back after the channel). Per output two LDMs per 5 words,
 * one SMLAD a word, the requantization and the move back: 27 instructions for 14 words
 * (3x3 over 3 channels), where chunks of 5, 5 and 4 paid 27 too but three calls a
 * pixel with their entries, exits and a stack array of sums (about 50 instructions a
 * pixel, which few outputs do not amortize: 3x3 8x8 over 3 channels to 5 0.50 -> 0.61
 * MAC per instruction, to 32 on 19x6 0.84 -> 0.89). 11 and 16 words keep the chunks
 * of 5 and a last one of 6 held in registers (mrt_i2c_last6_s8). The loop walks a row's pixels as
 * MRT_I2C_PIXELS, four channels a pass (eight bodies would overflow TBB's reach), the
 * records' end on the stack. */
#define MRT_I2C_G_FIRST "ldm r1!, {r0, r9-r12, lr}\n" "ldm r2!, {r4-r8}\n" MRT_I2C_S5
#define MRT_I2C_G_MID "ldm r1!, {r9-r12, lr}\n" "ldm r2!, {r4-r8}\n" MRT_I2C_S5
#define MRT_I2C_Q1 "ldr    r4, [r2]\n"
#define MRT_I2C_Q2 "ldm    r2, {r4, r5}\n"
#define MRT_I2C_Q3 "ldm    r2, {r4-r6}\n"
#define MRT_I2C_Q4 "ldm    r2, {r4-r7}\n"
#define MRT_I2C_Q5 "ldm    r2, {r4-r8}\n"
/* The last group of G words after M middle groups, the move back, the requantization. */
#define MRT_I2C_G_LAST(G, BACK) MRT_I2C_L##G MRT_I2C_Q##G MRT_I2C_S##G \
  "sub    r2, r2, #" #BACK "\n" MRT_I2C_REQUANT
#define MRT_I2C_STREAM_PIXELS(N, BODY) \
  "push   {r4-r11, lr}\n" \
  "mov    lr, #(4 * (" #N " + 4))\n" \
  "mla    lr, r2, lr, r1\n" \
  "and    r12, r2, #3\n" \
  "mov    r2, lr\n" \
  "push   {r0, r1, r2, r12}\n" \
  "29:\n" \
  "ldm    sp, {r0, r1, r2, r12}\n" \
  "mov    r2, r0\n" \
  "add    r0, r0, #(4 * " #N ")\n" \
  "str    r0, [sp]\n" \
  "tbb    [pc, r12]\n" \
  "20:\n" \
  ".byte  (21f - 20b) / 2, (24f - 20b) / 2, (23f - 20b) / 2, (22f - 20b) / 2\n" \
  "21:\n" BODY "22:\n" BODY "23:\n" BODY "24:\n" BODY \
  MRT_I2C_END_STACK \
  "bne    21b\n" \
  "ldr    r12, [sp, #52]\n" \
  "subs   r12, r12, #1\n" \
  "str    r12, [sp, #52]\n" \
  "bne    29b\n" \
  "add    sp, sp, #16\n" \
  "pop    {r4-r11, pc}\n"
#define MRT_I2C_DEFINE_STREAM(N, BODY) \
__attribute__((naked, used)) void mrt_i2c_only##N##_s8(const int32_t *p, const int32_t *r, \
        uint32_t n, int8_t *d, uint32_t pixels) \
{ __asm__ volatile(MRT_I2C_STREAM_PIXELS(N, BODY)); }

MRT_I2C_DEFINE_STREAM(9, MRT_I2C_G_FIRST MRT_I2C_G_LAST(4, 20))
MRT_I2C_DEFINE_STREAM(10, MRT_I2C_G_FIRST MRT_I2C_G_LAST(5, 20))
MRT_I2C_DEFINE_STREAM(12, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_LAST(2, 40))
MRT_I2C_DEFINE_STREAM(13, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_LAST(3, 40))
MRT_I2C_DEFINE_STREAM(14, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_LAST(4, 40))
MRT_I2C_DEFINE_STREAM(15, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_LAST(5, 40))
MRT_I2C_DEFINE_STREAM(17, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_MID MRT_I2C_G_LAST(2, 60))
MRT_I2C_DEFINE_STREAM(18, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_MID MRT_I2C_G_LAST(3, 60))
MRT_I2C_DEFINE_STREAM(19, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_MID MRT_I2C_G_LAST(4, 60))
MRT_I2C_DEFINE_STREAM(20, MRT_I2C_G_FIRST MRT_I2C_G_MID MRT_I2C_G_MID MRT_I2C_G_LAST(5, 60))
