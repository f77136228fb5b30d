/* int8 depthwise 3x3 of stride 2 for Arm's DSP extension (Cortex-M4, M7, M33).
 *
 * Called by generated dispatches (toolchain/codegen/depthwise_s2.py). Output row y of a
 * stride-2 window reads input rows 2y+a, 2y+a+1, 2y+a+2. The input is staged as the
 * row-pair kernels stage it (mrt_dw_dsp.c's stagers, called by the dispatch): pair m =
 * rows (2m+a, 2m+a+1) as 16-bit halves, one word per column and channel, in one of the 3
 * slots of a (column, channel, slot) buffer (odd pairs in slot 1, even ones alternating
 * 0 and 2, so a call's two new pairs are adjacent and staged together by
 * mrt_dw_stage_two_pairs3_s8, a STRD a value). Output row y is then
 * SMLAD(pair y, (w0, w1)) + SMLABT(pair y+1, (w1, w2)) per window column (its third row
 * is the low half of the next pair), against the row-pair records of
 * schedule/row_pair_records.py unchanged: 6 multiplies an output of 9 MACs. A tile is two
 * output rows (y, y+1) of one column and channel: pairs y, y+1, y+2 in one LDM per window
 * column, the middle pair serving both rows, the weights' words and the requantization's
 * values loaded once for the two outputs: 29.5 instructions (12 multiplies, 8 of
 * requantization, 2 stores, 5 staged / weight loads, the bias's and the
 * requantization's LDMs, the channel loop's 0.5: four channels a pass from 3 channels,
 * two for 1-2; 31 in the loops of records that are not doubled, a channel a pass). The staged columns are S =
 * column_bytes apart and a column of outputs reads 3 of them, stepping by 2: after a
 * column's channels the three window columns' pointers have moved by one column, and
 * move by one more. Two consecutive tiles share a pair (pair y+2 is the next tile's
 * first), so each pair is staged once.
 *
 * Registers: r0, r1, r12 the staged words of window columns 0, 1, 2, lr S, r2 records,
 * r3 output (row y), r4 output row distance, r5-r7 the slots, then M, K_hi, s; r8-r9 the
 * weight words, then temporaries; r10, r11 the sums of rows y, y+1.
 * The channel loop ends at the channel whose shift word has bit 8 set (the records'
 * LAST_CHANNEL; ASR reads the low byte only). The sums are SMLAD's exact int32 sums, so
 * the results are the reference's bit for bit.
 *
 * A layer whose records are doubled and whose shifts are SSAT immediates runs calls of
 * its own instead where the flash room takes their code (codegen/depthwise_s2_asm.py:
 * every channel written out, the constants as immediates, 25 instructions for two
 * outputs); this kernel serves the others.
 */
#include <stdint.h>

/* A window column's three slots; each window column has its pointer, walking the
 * channels (r0, r1, r12). */
#define MRT_S2_LD0 "ldm    r0!, {r5, r6, r7}\n"
#define MRT_S2_LD1 "ldm    r1!, {r5, r6, r7}\n"
#define MRT_S2_LD2 "ldm    r12!, {r5, r6, r7}\n"

/* One window column's 4 multiplies into the two rows' sums (r8: (w0, w1), r9: (w1, w2)). */
#define MRT_S2_MACS2(P0, P1, P2) \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  "smlad  r11, " P1 ", r8, r11\n" \
  "smlabt r11, " P2 ", r9, r11\n"
#define MRT_S2_MACS1(P0, P1) \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n"

/* A sum (in place) -> int8 with M (r5), K_hi (r6) and s (r7): of doubled records
 * (SMMLAR's rounding, 4 instructions), and of the folded form's (6). */
#define MRT_S2_FAST(ACC) \
  "add    r8, r6, " ACC ", asr #31\n" \
  "smmlar " ACC ", " ACC ", r5, r8\n" \
  "asr    " ACC ", " ACC ", r7\n" \
  "ssat   " ACC ", #8, " ACC "\n"
#define MRT_S2_SLOW(ACC) \
  "and    r8, " ACC ", #0x80000000\n" \
  "orr    r8, r8, #0x40000000\n" \
  "add    r9, r6, " ACC ", asr #31\n" \
  "smlal  r8, r9, " ACC ", r5\n" \
  "asr    r9, r9, r7\n" \
  "ssat   " ACC ", #8, r9\n"

/* Output rows y and y+1 of one column and channel: the first window column's weights
 * and the bias in one LDM, both sums starting from it. */
#define MRT_S2_TILE2(P0, P1, P2, REQUANT) \
  "ldm    r2!, {r8, r9, r10}\n"      /* (w0, w1), (w1, w2), the bias */ \
  MRT_S2_LD0 \
  "smlad  r11, " P1 ", r8, r10\n" \
  "smlabt r11, " P2 ", r9, r11\n" \
  "smlad  r10, " P0 ", r8, r10\n" \
  "smlabt r10, " P1 ", r9, r10\n" \
  MRT_S2_LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_S2_MACS2(P0, P1, P2) \
  MRT_S2_LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_S2_MACS2(P0, P1, P2) \
  "ldm    r2!, {r5, r6, r7}\n"       /* M, K_hi, s */ \
  REQUANT("r11") \
  REQUANT("r10") \
  "strb   r11, [r3, r4]\n" \
  "strb   r10, [r3], #1\n"
/* Row y alone (an odd last row; P2 unused). */
#define MRT_S2_TILE1(P0, P1, P2, REQUANT) \
  "ldm    r2!, {r8, r9, r10}\n" \
  MRT_S2_LD0 \
  MRT_S2_MACS1(P0, P1) \
  MRT_S2_LD1 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_S2_MACS1(P0, P1) \
  MRT_S2_LD2 \
  "ldrd   r8, r9, [r2], #8\n" \
  MRT_S2_MACS1(P0, P1) \
  "ldm    r2!, {r5, r6, r7}\n" \
  REQUANT("r10") \
  "strb   r10, [r3], #1\n"

/* A column's end: past the last channel (its shift word's bit 8) the window columns'
 * pointers move one staged column more (stride 2), the records restart, and the flags
 * compare the output with the row's end (one LDRD of both from [sp], a CMP: 6
 * instructions a column where a count on the stack took 8); the loop's own branch
 * follows. */
#define MRT_S2_COLUMN_END \
  "tst    r7, #256\n" \
  "beq    11b\n" \
  "add    r0, r0, lr\n" \
  "add    r1, r1, lr\n" \
  "add    r12, r12, lr\n" \
  "ldrd   r2, r8, [sp]\n" \
  "cmp    r3, r8\n"

/* The column loop over the channel loop; after a column's channels the window columns'
 * pointers are one staged column on and r3 at the next output column; the pointers move
 * one column more (stride 2), the records restart and the row's end ends the loop (one
 * LDRD of both from [sp], a CMP: 6 instructions a column where a count on the stack
 * took 8). */
#define MRT_S2_COLUMNS(TILE, P0, P1, P2, REQUANT) \
  "11:\n" \
  TILE(P0, P1, P2, REQUANT) \
  MRT_S2_COLUMN_END \
  "bne    11b\n" \
  "b      9f\n"

/* The same with two channels a pass (one TST and BEQ for 4 outputs where each channel's
 * took 2): an even channel count enters at N "_first" (the first of the pass's two
 * tiles), an odd one at N "_second" (the last channel is always a pass's second), the
 * call's TBH jumping there and each column's end branching back to it (the records
 * reloaded before), so neither count pays for the other's entry. */
#define MRT_S2_COLUMNS_BY2(TILE, P0, P1, P2, REQUANT, N, ENTRY) \
  N "_first:\n" \
  "11:\n" \
  TILE(P0, P1, P2, REQUANT) \
  N "_second:\n" \
  "12:\n" \
  TILE(P0, P1, P2, REQUANT) \
  MRT_S2_COLUMN_END \
  "bne    1" ENTRY "b\n" \
  "b      9f\n"
/* Both entries of one tile and slot order (two loops: each column's end branches to its
 * own). */
#define MRT_S2_FAST2(TILE, P0, P1, P2, N) \
  MRT_S2_COLUMNS_BY2(TILE, P0, P1, P2, MRT_S2_FAST, N "_even", "1") \
  MRT_S2_COLUMNS_BY2(TILE, P0, P1, P2, MRT_S2_FAST, N "_odd", "2")

/* Four channels a pass (3 or more channels, doubled records: flags bit 5): one TST and
 * BEQ for 8 outputs. A count of 4q + r enters the pass at its tile (4 - r) mod 4
 * (N "_e0" .. N "_e3"; the last channel is always a pass's fourth), and each column's end
 * goes back there by an LDR PC from [sp, #8], which the call's entry set: one loop of 4
 * tiles a slot order, where a loop per entry (as two channels a pass have) would take 4.
 * Against two a pass that is 2 instructions fewer for every 4 channels, one more a
 * column (the IT) and 3 a call (the entry's address): 1-2 channels keep two a pass. */
#define MRT_S2_COLUMNS_BY4(TILE, P0, P1, P2, N) \
  N "_e0:\n" \
  "11:\n" \
  TILE(P0, P1, P2, MRT_S2_FAST) \
  N "_e1:\n" \
  TILE(P0, P1, P2, MRT_S2_FAST) \
  N "_e2:\n" \
  TILE(P0, P1, P2, MRT_S2_FAST) \
  N "_e3:\n" \
  TILE(P0, P1, P2, MRT_S2_FAST) \
  MRT_S2_COLUMN_END \
  "it     ne\n" \
  "ldrne  pc, [sp, #8]\n" \
  "b      9f\n"
/* The entry into N "_e" E: its Thumb address (a literal after the code) into [sp, #8]. */
#define MRT_S2_BY4_ENTER(N, E) \
  N "_enter" E ":\n" \
  "ldr    r8, " N "_at" E "\n" \
  "str    r8, [sp, #8]\n" \
  "bx     r8\n"
#define MRT_S2_BY4_ENTERS(N) \
  MRT_S2_BY4_ENTER(N, "0") MRT_S2_BY4_ENTER(N, "1") MRT_S2_BY4_ENTER(N, "2") \
  MRT_S2_BY4_ENTER(N, "3")
#define MRT_S2_BY4_AT(N, E) N "_at" E ":\n" ".word  " N "_e" E " + 1\n"
#define MRT_S2_BY4_ATS(N) \
  MRT_S2_BY4_AT(N, "0") MRT_S2_BY4_AT(N, "1") MRT_S2_BY4_AT(N, "2") MRT_S2_BY4_AT(N, "3")

/* The call's TBH table, entry = flags & 127 (struct mrt_dw_s2): 8 groups of 16 by bits
 * 4-6 (odd count, four channels a pass, the count's bit 1), within a group bits 0-3:
 * without doubled records the SMLAL loops (two rows, or row y alone for bit 3), with
 * them the loop of the slots' order (bit 0) or of row y alone. */
#define MRT_S2_AT(L) ".hword (" L " - mrt_s2_table)/2\n"
#define MRT_S2_AT4(L) MRT_S2_AT(L) MRT_S2_AT(L) MRT_S2_AT(L) MRT_S2_AT(L)
#define MRT_S2_GROUP(ORDER0, ORDER1, ONE) \
  MRT_S2_AT4("mrt_s2_slow_two") \
  MRT_S2_AT(ORDER0) MRT_S2_AT(ORDER1) MRT_S2_AT(ORDER0) MRT_S2_AT(ORDER1) \
  MRT_S2_AT4("mrt_s2_slow_one") \
  MRT_S2_AT4(ONE)
/* Four channels a pass, entered at tile E (the count's remainder, MRT_S2_BY4_ENTERS). */
#define MRT_S2_GROUP_BY4(E) \
  MRT_S2_GROUP("mrt_s2_order04_enter" E, "mrt_s2_order14_enter" E, "mrt_s2_one4_enter" E)

/* What one call computes (codegen/depthwise_s2.py's _ARGS), in the order one LDM puts
 * the fields in their registers (r0, r2-r8). */
struct mrt_dw_s2 {
    const int32_t *stage;    /* 0: slot 0 of the staged words of output column 0's first
                                window column */
    const int32_t *records;  /* 4: the row-pair records, 10 words a channel */
    int8_t *out;             /* 8: output row y, column 0, channel 0 */
    int32_t row2;            /* 12: bytes from an output to the one below it */
    uint32_t width;          /* 16: output columns, >= 1 */
    uint32_t channels;       /* 20: output channels (the last record ends the channel
                                loop; the flags give its parity) */
    uint32_t flags;          /* 24: bit 0 (two rows with doubled records): pairs y, y+1,
                                y+2 in slots 2, 1, 0, else in slots 0, 1, 2; bit 2:
                                doubled records; bit 3: row y alone, its pairs in slots
                                0 and 1; bit 4: an odd channel count; bit 5: four
                                channels a pass (3 or more channels), bit 6 the
                                count's bit 1. Without doubled records pairs y, y+1,
                                y+2 are in slots 0-2. */
    uint32_t column_bytes;   /* 28: from a staged column to the next: 12 x channels */
};

/* Output rows y and y+1 (or y alone), every column and channel (channels >= 1). */
__attribute__((naked, used, aligned(4))) void mrt_dw3_s2_s8(const struct mrt_dw_s2 *a)
{
    __asm__ volatile(
        "push   {r4-r11, lr}\n"
        "sub    sp, sp, #16\n"                /* [sp, #8]: four channels a pass' entry */
        /* the call's fields by one LDM: 10 instructions a call where 10 loads and
         * stores took 16 */
        "ldm    r0, {r0, r2, r3, r4, r5, r6, r7, r8}\n"
        "mla    r5, r5, r6, r3\n"          /* the row's end: out + width x channels */
        "strd   r2, r5, [sp]\n"            /* the records, the row's end */
        "mov    lr, r8\n"                  /* S */
        "add    r1, r0, lr\n"
        "add    r12, r1, lr\n"
        /* flags bits 0 and 2-6 (module comment): one TBH to the loop */
        "and    r8, r7, #127\n"
        "tbh    [pc, r8, lsl #1]\n"
        "mrt_s2_table:\n"
        MRT_S2_GROUP("mrt_s2_order0_even_first", "mrt_s2_order1_even_first", "mrt_s2_one_even_first")
        MRT_S2_GROUP("mrt_s2_order0_odd_second", "mrt_s2_order1_odd_second", "mrt_s2_one_odd_second")
        MRT_S2_GROUP_BY4("0")
        MRT_S2_GROUP_BY4("3")
        MRT_S2_GROUP("mrt_s2_order0_even_first", "mrt_s2_order1_even_first", "mrt_s2_one_even_first")
        MRT_S2_GROUP("mrt_s2_order0_odd_second", "mrt_s2_order1_odd_second", "mrt_s2_one_odd_second")
        MRT_S2_GROUP_BY4("2")
        MRT_S2_GROUP_BY4("1")
        MRT_S2_FAST2(MRT_S2_TILE2, "r5", "r6", "r7", "mrt_s2_order0")
        MRT_S2_FAST2(MRT_S2_TILE2, "r7", "r6", "r5", "mrt_s2_order1")
        MRT_S2_FAST2(MRT_S2_TILE1, "r5", "r6", "r7", "mrt_s2_one")
        "mrt_s2_slow_two:\n"
        MRT_S2_COLUMNS(MRT_S2_TILE2, "r5", "r6", "r7", MRT_S2_SLOW)
        "mrt_s2_slow_one:\n"
        MRT_S2_COLUMNS(MRT_S2_TILE1, "r5", "r6", "r7", MRT_S2_SLOW)
        MRT_S2_BY4_ENTERS("mrt_s2_order04")
        MRT_S2_BY4_ENTERS("mrt_s2_order14")
        MRT_S2_BY4_ENTERS("mrt_s2_one4")
        MRT_S2_COLUMNS_BY4(MRT_S2_TILE2, "r5", "r6", "r7", "mrt_s2_order04")
        MRT_S2_COLUMNS_BY4(MRT_S2_TILE2, "r7", "r6", "r5", "mrt_s2_order14")
        MRT_S2_COLUMNS_BY4(MRT_S2_TILE1, "r5", "r6", "r7", "mrt_s2_one4")
        "9:\n"
        "add    sp, sp, #16\n"
        "pop    {r4-r11, pc}\n"
        ".p2align 2\n"
        MRT_S2_BY4_ATS("mrt_s2_order04")
        MRT_S2_BY4_ATS("mrt_s2_order14")
        MRT_S2_BY4_ATS("mrt_s2_one4"));
}

/* dst[3*i] = word for i < n: one slot of the staged layout filled with the pad pair, for
 * a pair of two rows below the input (the dispatch's last pair on SAME maps of 4q + 2
 * rows), 8 STR and the loop's SUBS and BNE for 8 words where staging it from the row of
 * pad values took 23. */
__attribute__((naked, used)) void mrt_dw_s2_fill_slot(uint32_t *dst, uint32_t word, uint32_t n)
{
    __asm__ volatile(
        "lsrs   r3, r2, #3\n"
        "beq    2f\n"
        "1:\n"
        "str    r1, [r0, #12]\n"
        "str    r1, [r0, #24]\n"
        "str    r1, [r0, #36]\n"
        "str    r1, [r0, #48]\n"
        "str    r1, [r0, #60]\n"
        "str    r1, [r0, #72]\n"
        "str    r1, [r0, #84]\n"
        "str    r1, [r0], #96\n"
        "subs   r3, r3, #1\n"
        "bne    1b\n"
        "2:\n"
        "ands   r2, r2, #7\n"
        "beq    4f\n"
        "3:\n"
        "str    r1, [r0], #12\n"
        "subs   r2, r2, #1\n"
        "bne    3b\n"
        "4:\n"
        "bx     lr\n");
}
