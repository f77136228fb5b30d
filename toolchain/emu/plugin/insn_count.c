/*
 * insn_count.c - a QEMU TCG plugin that counts the guest instructions retired between
 * two marker addresses (the entries of mrt_bench_begin and mrt_bench_end), and
 * optionally splits them by code range (a per-dispatch profile) and records the lowest
 * and highest addresses stored to inside a memory range (the stack's high-water mark).
 *
 *   -plugin insn_count.so,begin=0x...,end=0x...[,out=PATH][,ranges=PATH,profile=PATH]
 *                        [,stack=LO:HI][,blocks=PATH[,isa=thumb|riscv]]
 *
 * Every translation block adds its instruction count to a running total inline; a block
 * that contains a marker instead counts per instruction, and the marker instruction
 * snapshots the total. count = total at end marker - total at begin marker: the
 * instructions from the first of mrt_bench_begin up to (not including) the first of
 * mrt_bench_end. Snapshots are taken the same way at both markers, so the result does
 * not depend on how QEMU orders inline and regular callbacks. The result is written to
 * PATH when the end marker executes ("count=N begins=B ends=E"), and again at exit.
 *
 * Profile (ranges=): the file's first line is "rows R", then one line per code range,
 * "START END KIND ROW" (hex addresses, [START, END), sorted, not overlapping). Every
 * instruction is charged to one of the R rows:
 *   KIND d  (a dispatch function) to ROW; entering the range at START makes ROW the
 *           current owner;
 *   KIND o  (runtime, harness, start-up code) to ROW, which becomes the current owner;
 *   KIND c  (a callee: compiler helpers, mem*, math routines) to the current owner, so a
 *           helper's instructions count for the dispatch (or runtime) that called it.
 * Addresses in no range go to the last row, R-1, as KIND o. The plugin cannot read
 * registers (QEMU 7.2), so the caller is known from the code that ran last: a callee only
 * runs between its caller's instructions. Per row, the profile file gets
 * "ROW INSIDE INSIDE_CALLEES WHOLE WHOLE_CALLEES": the instructions between the markers
 * (as for count, so the INSIDE column adds up to count exactly), the part of them
 * executed in callees, and the same over the whole run.
 *
 * Stack (stack=LO:HI): every guest store whose address lies in [LO, HI) updates the
 * lowest address and the highest end address stored to; out gets
 * "stack_low=0x... stack_high=0x... stack_stores=N". Exact, and nothing in the image
 * paints memory; hardware stacking of an exception frame (a fault on Cortex-M) is done
 * by QEMU itself and not seen, which the caller's margin covers.
 *
 * Blocks (blocks=PATH): for the cycle estimate (toolchain/emu/cycles.py), every translated
 * block gets a record: its address, its instructions' bytes, how often it ran and how
 * often the next block to run began right after its last instruction (it "fell through":
 * a conditional branch that ends it was not taken). A block holding a marker gets one
 * record per instruction, snapshotted like count, so the records' runs x instructions add
 * up to count exactly. With a profile, a callee's block gets one record per owner row it
 * ran for. PATH gets, per record that ran between the markers,
 * "ADDR RUNS FELL OWNER HEX.HEX..." (OWNER: that row, or -1; the instructions' bytes in
 * memory order; isa= says how to
 * tell an instruction's length from its first bytes, see insn_length). This costs one
 * callback per executed block, so it is only on when asked for.
 *
 * Single vCPU guests only (all minirt boards).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minirt_qemu_plugin.h"

__attribute__((visibility("default"))) int qemu_plugin_version = MINIRT_QEMU_PLUGIN_API_VERSION;

static uint64_t total;      /* instructions executed so far (inline adds) */
static uint64_t begin_snap; /* total when the begin marker last executed */
static uint64_t count;      /* last measured begin..end interval */
static uint64_t begins, ends;
static uint64_t begin_addr, end_addr;
static char out_path[4096];

/* ---------------------------------------------------------------- profile state */

enum range_kind { KIND_DISPATCH = 'd', KIND_OWNER = 'o', KIND_CALLEE = 'c' };

struct code_range {
  uint64_t start, end;
  int kind;
  size_t row;
};

static struct code_range *ranges;
static size_t n_ranges, n_rows;
static uint64_t *row_total;  /* instructions charged to each row so far */
static uint64_t *row_callee; /* ... of which executed in callees */
static uint64_t *snap_total, *snap_callee; /* at the begin marker */
static uint64_t *in_total, *in_callee;     /* begin..end, set at the end marker */
static size_t owner;                       /* row that callee instructions go to */
static char profile_path[4096];

/* ---------------------------------------------------------------- block state */

struct block {
  uint64_t vaddr, next;            /* first instruction; the address after the last */
  uint64_t runs, fell;             /* executions; times the next block began at `next` */
  uint64_t snap_runs, snap_fell;   /* at the begin marker */
  uint64_t in_runs, in_fell;       /* begin..end, set at the end marker */
  size_t n_bytes;
  unsigned char *bytes;            /* the instructions' bytes, back to back */
  unsigned char *sizes;            /* each instruction's length in bytes */
  size_t n_insns;
  long owner;                      /* callee code with a profile: the row it ran for; -1 */
  struct block *other_owner;       /* the same code's record for another owner row */
};

/* Records never move once made (callbacks hold pointers to them): fixed-size chunks. */
#define BLOCK_CHUNK 4096
static struct block **block_chunks;
static size_t n_blocks, n_chunks;
static struct block *last_block;
static char blocks_path[4096];
/* How long an instruction is, from its first bytes. QEMU's instruction data can hold more
 * than the instruction: translating the last Thumb instruction before a page boundary
 * also reads the next halfword (to see whether it crosses the page). */
enum isa { ISA_ANY, ISA_THUMB, ISA_RISCV };
static enum isa blocks_isa;

static size_t insn_length(const struct qemu_plugin_insn *insn) {
  const size_t size = qemu_plugin_insn_size(insn);
  const unsigned char *data = qemu_plugin_insn_data(insn);
  if (size < 2 || blocks_isa == ISA_ANY) {
    return size;
  }
  size_t real = size;
  if (blocks_isa == ISA_THUMB) {
    const unsigned hw1 = (unsigned)data[0] | (unsigned)data[1] << 8;
    real = (hw1 >> 11) >= 0x1D ? 4 : 2; /* 0b11101, 0b11110, 0b11111: 32-bit */
  } else if (blocks_isa == ISA_RISCV) {
    real = (data[0] & 3) == 3 ? 4 : 2; /* not 0b11 in the low bits: compressed */
  }
  return real < size ? real : size;
}

/* ---------------------------------------------------------------- stack state */

static int stack_on;
static uint64_t stack_lo, stack_hi;     /* the watched range [lo, hi) */
static uint64_t stack_low = UINT64_MAX; /* lowest address stored to */
static uint64_t stack_high;             /* highest end of a store */
static uint64_t stack_stores;

static struct block *block_at(size_t i) {
  return &block_chunks[i / BLOCK_CHUNK][i % BLOCK_CHUNK];
}

static void write_blocks(void) {
  if (blocks_path[0] == '\0') {
    return;
  }
  FILE *f = fopen(blocks_path, "w");
  if (f == NULL) {
    return;
  }
  for (size_t i = 0; i < n_blocks; i++) {
    const struct block *b = block_at(i);
    if (b->in_runs == 0) {
      continue;
    }
    fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 " %ld ", b->vaddr, b->in_runs, b->in_fell,
            b->owner);
    size_t at = 0;
    for (size_t k = 0; k < b->n_insns; k++) {
      if (k) {
        fputc('.', f);
      }
      for (size_t j = 0; j < b->sizes[k]; j++) {
        fprintf(f, "%02x", b->bytes[at + j]);
      }
      at += b->sizes[k];
    }
    fputc('\n', f);
  }
  fclose(f);
}

/* A block (or one instruction of a marker block) starts executing. */
static void on_block(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  struct block *b = userdata;
  if (last_block != NULL && last_block->next == b->vaddr) {
    last_block->fell++;
  }
  b->runs++;
  last_block = b;
}

/* A free record slot; NULL when out of memory. */
static struct block *next_slot(void) {
  if (n_blocks == n_chunks * BLOCK_CHUNK) {
    struct block **grown = realloc(block_chunks, (n_chunks + 1) * sizeof *block_chunks);
    if (grown == NULL) {
      return NULL;
    }
    block_chunks = grown;
    block_chunks[n_chunks] = calloc(BLOCK_CHUNK, sizeof(struct block));
    if (block_chunks[n_chunks] == NULL) {
      return NULL;
    }
    n_chunks++;
  }
  struct block *b = block_at(n_blocks);
  n_blocks++;
  return b;
}

/* A new record for instructions [first, first + n) of tb; NULL when out of memory. */
static struct block *new_block(struct qemu_plugin_tb *tb, size_t first, size_t n) {
  struct block *b = next_slot();
  if (b == NULL) {
    return NULL;
  }
  size_t total_bytes = 0;
  for (size_t k = 0; k < n; k++) {
    total_bytes += insn_length(qemu_plugin_tb_get_insn(tb, first + k));
  }
  b->bytes = malloc(total_bytes ? total_bytes : 1);
  b->sizes = malloc(n);
  if (b->bytes == NULL || b->sizes == NULL) {
    return NULL;
  }
  size_t at = 0;
  for (size_t k = 0; k < n; k++) {
    const struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, first + k);
    const size_t size = insn_length(insn);
    memcpy(b->bytes + at, qemu_plugin_insn_data(insn), size);
    b->sizes[k] = (unsigned char)size;
    at += size;
  }
  const struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, first + n - 1);
  b->vaddr = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, first));
  b->next = qemu_plugin_insn_vaddr(last) + insn_length(last);
  b->n_bytes = total_bytes;
  b->n_insns = n;
  b->owner = -1;
  return b;
}

/* A block of callee code starts: counted in its record for the current owner row (made
 * on first use; the records of one block share its bytes). */
static void on_callee_block(unsigned int vcpu, void *userdata) {
  struct block *b = userdata;
  while (b->owner != (long)owner && b->other_owner != NULL) {
    b = b->other_owner;
  }
  if (b->owner != (long)owner) {
    struct block *copy = next_slot();
    if (copy == NULL) {
      return;
    }
    *copy = *b;
    copy->runs = copy->fell = copy->snap_runs = copy->snap_fell = 0;
    copy->in_runs = copy->in_fell = 0;
    copy->owner = (long)owner;
    copy->other_owner = NULL;
    b->other_owner = copy;
    b = copy;
  }
  on_block(vcpu, b);
}

static void write_profile(void) {
  if (n_rows == 0 || profile_path[0] == '\0') {
    return;
  }
  FILE *f = fopen(profile_path, "w");
  if (f == NULL) {
    return;
  }
  for (size_t r = 0; r < n_rows; r++) {
    fprintf(f, "%zu %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", r, in_total[r],
            in_callee[r], row_total[r], row_callee[r]);
  }
  fclose(f);
}

static void write_result(void) {
  char line[256];
  int n = snprintf(line, sizeof line, "count=%" PRIu64 " begins=%" PRIu64 " ends=%" PRIu64,
                   count, begins, ends);
  if (stack_on && n > 0 && (size_t)n < sizeof line) {
    snprintf(line + n, sizeof line - (size_t)n,
             " stack_low=%#" PRIx64 " stack_high=%#" PRIx64 " stack_stores=%" PRIu64,
             stack_stores ? stack_low : 0, stack_high, stack_stores);
  }
  if (out_path[0] == '\0') {
    qemu_plugin_outs("insn_count: ");
    qemu_plugin_outs(line);
    qemu_plugin_outs("\n");
    return;
  }
  FILE *f = fopen(out_path, "w");
  if (f != NULL) {
    fprintf(f, "%s\n", line);
    fclose(f);
  }
}

static void on_begin(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  (void)userdata;
  begin_snap = total;
  begins++;
  if (n_rows) {
    memcpy(snap_total, row_total, n_rows * sizeof *row_total);
    memcpy(snap_callee, row_callee, n_rows * sizeof *row_callee);
  }
  for (size_t i = 0; i < n_blocks; i++) {
    struct block *b = block_at(i);
    b->snap_runs = b->runs;
    b->snap_fell = b->fell;
  }
}

static void on_end(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  (void)userdata;
  if (begins > ends) {
    count = total - begin_snap;
    for (size_t r = 0; r < n_rows; r++) {
      in_total[r] = row_total[r] - snap_total[r];
      in_callee[r] = row_callee[r] - snap_callee[r];
    }
    for (size_t i = 0; i < n_blocks; i++) {
      struct block *b = block_at(i);
      b->in_runs = b->runs - b->snap_runs;
      b->in_fell = b->fell - b->snap_fell;
    }
  }
  ends++;
  write_result();
  write_profile();
  write_blocks();
}

/* Entering a dispatch, or running owner code: later callee code is charged to it. */
static void on_owner(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  owner = (size_t)(uintptr_t)userdata;
}

/* A block of callee code ran: userdata instructions for the current owner. */
static void on_callee(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  const uint64_t n = (uint64_t)(uintptr_t)userdata;
  row_total[owner] += n;
  row_callee[owner] += n;
}

static void on_store(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
                     void *userdata) {
  (void)vcpu;
  (void)userdata;
  /* QEMU 7.2 calls back for loads too, whatever the registration asked for. */
  if (!qemu_plugin_mem_is_store(info) || vaddr < stack_lo || vaddr >= stack_hi) {
    return;
  }
  const uint64_t end = vaddr + (UINT64_C(1) << qemu_plugin_mem_size_shift(info));
  if (vaddr < stack_low) {
    stack_low = vaddr;
  }
  if (end > stack_high) {
    stack_high = end;
  }
  stack_stores++;
}

/* The range holding pc (binary search), or NULL. */
static const struct code_range *find_range(uint64_t pc) {
  size_t lo = 0, hi = n_ranges;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pc < ranges[mid].start) {
      hi = mid;
    } else if (pc >= ranges[mid].end) {
      lo = mid + 1;
    } else {
      return &ranges[mid];
    }
  }
  return NULL;
}

/* The row an instruction at pc is counted in (for callees: none, -1), its kind, and
 * whether it makes its row the owner. */
static void classify(uint64_t pc, int *kind, size_t *row, int *sets_owner) {
  const struct code_range *r = find_range(pc);
  if (r == NULL) {
    *kind = KIND_OWNER;
    *row = n_rows - 1;
    *sets_owner = 1;
    return;
  }
  *kind = r->kind;
  *row = r->row;
  *sets_owner = r->kind == KIND_OWNER || (r->kind == KIND_DISPATCH && pc == r->start);
}

/* Counts `n` instructions starting at `insn` (or the whole tb when insn is NULL) that
 * all share one classification. */
static void instrument_profile(struct qemu_plugin_tb *tb, struct qemu_plugin_insn *insn,
                               uint64_t pc, uint64_t n) {
  int kind, sets_owner;
  size_t row;
  classify(pc, &kind, &row, &sets_owner);
  if (sets_owner) {
    if (insn) {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_owner, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)(uintptr_t)row);
    } else {
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_owner, QEMU_PLUGIN_CB_NO_REGS,
                                           (void *)(uintptr_t)row);
    }
  }
  if (kind == KIND_CALLEE) {
    if (insn) {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_callee, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)(uintptr_t)n);
    } else {
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_callee, QEMU_PLUGIN_CB_NO_REGS,
                                           (void *)(uintptr_t)n);
    }
  } else if (insn) {
    qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                               &row_total[row], n);
  } else {
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &row_total[row],
                                             n);
  }
}

/* Whether every instruction of the tb falls in the same range (or in none) and a
 * dispatch range is not entered in its middle: then one block-level count does. */
static int tb_is_uniform(struct qemu_plugin_tb *tb, size_t n) {
  uint64_t first = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
  const struct code_range *r0 = find_range(first);
  for (size_t i = 1; i < n; i++) {
    uint64_t pc = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
    const struct code_range *r = find_range(pc);
    if (r != r0 || (r != NULL && r->kind == KIND_DISPATCH && pc == r->start)) {
      return 0;
    }
  }
  return 1;
}

static void on_tb_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  int has_marker = 0;
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    uint64_t pc = qemu_plugin_insn_vaddr(insn);
    if (pc == begin_addr || pc == end_addr) {
      has_marker = 1;
    }
    if (stack_on) {
      qemu_plugin_register_vcpu_mem_cb(insn, on_store, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_W,
                                       NULL);
    }
  }
  if (n == 0) {
    return;
  }
  if (blocks_path[0] != '\0' && !has_marker) {
    struct block *b = new_block(tb, 0, n);
    int kind = 0, sets_owner;
    size_t row;
    if (b != NULL && n_rows) {
      classify(qemu_plugin_tb_vaddr(tb), &kind, &row, &sets_owner);
    }
    if (b != NULL && kind == KIND_CALLEE) {
      b->owner = (long)owner; /* a first record; others are made as owners come */
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_callee_block, QEMU_PLUGIN_CB_NO_REGS, b);
    } else if (b != NULL) {
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
    }
  }
  if (!has_marker && (n_rows == 0 || tb_is_uniform(tb, n))) {
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total, n);
    if (n_rows) {
      instrument_profile(tb, NULL, qemu_plugin_tb_vaddr(tb), n);
    }
    return;
  }
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    uint64_t pc = qemu_plugin_insn_vaddr(insn);
    if (pc == begin_addr) {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_begin, QEMU_PLUGIN_CB_NO_REGS, NULL);
    } else if (pc == end_addr) {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
    }
    /* After the marker's own callback, as the marker's snapshot of total is taken
     * before its inline add is counted in the same way at both markers. */
    if (blocks_path[0] != '\0') {
      struct block *b = new_block(tb, i, 1);
      if (b != NULL) {
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
      }
    }
    qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &total, 1);
    if (n_rows) {
      instrument_profile(tb, insn, pc, 1);
    }
  }
}

static void on_qemu_exit(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  write_result();
  write_profile();
  write_blocks();
}

static int parse_u64(const char *text, uint64_t *out) {
  char *rest = NULL;
  unsigned long long v = strtoull(text, &rest, 0);
  if (rest == text || *rest != '\0') {
    return -1;
  }
  *out = (uint64_t)v;
  return 0;
}

/* "LO:HI" -> the watched store range. */
static int parse_stack(const char *text) {
  char lo[64];
  const char *colon = strchr(text, ':');
  if (colon == NULL || (size_t)(colon - text) >= sizeof lo) {
    return -1;
  }
  memcpy(lo, text, (size_t)(colon - text));
  lo[colon - text] = '\0';
  if (parse_u64(lo, &stack_lo) != 0 || parse_u64(colon + 1, &stack_hi) != 0 ||
      stack_lo >= stack_hi) {
    return -1;
  }
  stack_on = 1;
  return 0;
}

static uint64_t *new_counters(void) { return calloc(n_rows, sizeof(uint64_t)); }

/* Reads the ranges file (see the top of this file). Returns 0 or -1 with a message. */
static int load_ranges(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "insn_count: cannot open the ranges file %s\n", path);
    return -1;
  }
  size_t cap = 0;
  int ok = fscanf(f, " rows %zu", &n_rows) == 1 && n_rows > 0;
  while (ok) {
    uint64_t start, end;
    char kind;
    size_t row;
    int got = fscanf(f, " %" SCNx64 " %" SCNx64 " %c %zu", &start, &end, &kind, &row);
    if (got == EOF) {
      break;
    }
    if (got != 4 || start >= end || row >= n_rows ||
        (kind != KIND_DISPATCH && kind != KIND_OWNER && kind != KIND_CALLEE) ||
        (n_ranges > 0 && start < ranges[n_ranges - 1].end)) {
      ok = 0;
      break;
    }
    if (n_ranges == cap) {
      cap = cap ? 2 * cap : 64;
      struct code_range *grown = realloc(ranges, cap * sizeof *ranges);
      if (grown == NULL) {
        ok = 0;
        break;
      }
      ranges = grown;
    }
    ranges[n_ranges++] = (struct code_range){start, end, kind, row};
  }
  fclose(f);
  if (!ok) {
    fprintf(stderr, "insn_count: %s: want 'rows R' then sorted 'START END d|o|c ROW' lines\n",
            path);
    return -1;
  }
  row_total = new_counters();
  row_callee = new_counters();
  snap_total = new_counters();
  snap_callee = new_counters();
  in_total = new_counters();
  in_callee = new_counters();
  if (!row_total || !row_callee || !snap_total || !snap_callee || !in_total || !in_callee) {
    fprintf(stderr, "insn_count: out of memory for %zu profile rows\n", n_rows);
    return -1;
  }
  owner = n_rows - 1;
  return 0;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const struct qemu_info_t *info,
                                                               int argc, char **argv) {
  (void)info;
  int have_begin = 0, have_end = 0;
  const char *ranges_path = NULL;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strncmp(arg, "begin=", 6) == 0 && parse_u64(arg + 6, &begin_addr) == 0) {
      have_begin = 1;
    } else if (strncmp(arg, "end=", 4) == 0 && parse_u64(arg + 4, &end_addr) == 0) {
      have_end = 1;
    } else if (strncmp(arg, "out=", 4) == 0 && strlen(arg + 4) < sizeof out_path) {
      strcpy(out_path, arg + 4);
    } else if (strncmp(arg, "ranges=", 7) == 0) {
      ranges_path = arg + 7;
    } else if (strncmp(arg, "profile=", 8) == 0 && strlen(arg + 8) < sizeof profile_path) {
      strcpy(profile_path, arg + 8);
    } else if (strncmp(arg, "blocks=", 7) == 0 && strlen(arg + 7) < sizeof blocks_path) {
      strcpy(blocks_path, arg + 7);
    } else if (strcmp(arg, "isa=thumb") == 0 || strcmp(arg, "isa=riscv") == 0) {
      blocks_isa = arg[4] == 't' ? ISA_THUMB : ISA_RISCV;
    } else if (strncmp(arg, "stack=", 6) == 0 && parse_stack(arg + 6) == 0) {
      continue;
    } else {
      fprintf(stderr,
              "insn_count: bad argument '%s' (want begin=ADDR,end=ADDR[,out=PATH]"
              "[,ranges=PATH,profile=PATH][,stack=LO:HI][,blocks=PATH[,isa=thumb|riscv]])\n",
              arg);
      return -1;
    }
  }
  if (!have_begin || !have_end) {
    fprintf(stderr, "insn_count: begin= and end= marker addresses are required\n");
    return -1;
  }
  if ((ranges_path == NULL) != (profile_path[0] == '\0')) {
    fprintf(stderr, "insn_count: ranges= and profile= go together\n");
    return -1;
  }
  if (ranges_path != NULL && load_ranges(ranges_path) != 0) {
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_translate);
  qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
  return 0;
}
