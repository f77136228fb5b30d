/*
 * insn_count.c - a QEMU TCG plugin that counts the guest instructions retired between
 * two marker addresses (the entries of mrt_bench_begin and mrt_bench_end).
 *
 *   -plugin insn_count.so,begin=0x...,end=0x...,out=PATH
 *
 * Every translation block adds its instruction count to a running total inline; a block
 * that contains a marker instead counts per instruction, and the marker instruction
 * snapshots the total. count = total at end marker - total at begin marker: the
 * instructions from the first of mrt_bench_begin up to (not including) the first of
 * mrt_bench_end. Snapshots are taken the same way at both markers, so the result does
 * not depend on how QEMU orders inline and regular callbacks. The result is written to
 * PATH when the end marker executes ("count=N begins=B ends=E"), and again at exit.
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

static void write_result(void) {
  if (out_path[0] == '\0') {
    char line[128];
    snprintf(line, sizeof line, "insn_count: count=%" PRIu64 " begins=%" PRIu64
             " ends=%" PRIu64 "\n", count, begins, ends);
    qemu_plugin_outs(line);
    return;
  }
  FILE *f = fopen(out_path, "w");
  if (f != NULL) {
    fprintf(f, "count=%" PRIu64 " begins=%" PRIu64 " ends=%" PRIu64 "\n", count, begins, ends);
    fclose(f);
  }
}

static void on_begin(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  (void)userdata;
  begin_snap = total;
  begins++;
}

static void on_end(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  (void)userdata;
  if (begins > ends) {
    count = total - begin_snap;
  }
  ends++;
  write_result();
}

static void on_tb_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  int has_marker = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t pc = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
    if (pc == begin_addr || pc == end_addr) {
      has_marker = 1;
    }
  }
  if (!has_marker) {
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total, n);
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
    qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &total, 1);
  }
}

static void on_qemu_exit(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  write_result();
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

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const struct qemu_info_t *info,
                                                               int argc, char **argv) {
  (void)info;
  int have_begin = 0, have_end = 0;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strncmp(arg, "begin=", 6) == 0 && parse_u64(arg + 6, &begin_addr) == 0) {
      have_begin = 1;
    } else if (strncmp(arg, "end=", 4) == 0 && parse_u64(arg + 4, &end_addr) == 0) {
      have_end = 1;
    } else if (strncmp(arg, "out=", 4) == 0 && strlen(arg + 4) < sizeof out_path) {
      strcpy(out_path, arg + 4);
    } else {
      fprintf(stderr, "insn_count: bad argument '%s' (want begin=ADDR,end=ADDR[,out=PATH])\n",
              arg);
      return -1;
    }
  }
  if (!have_begin || !have_end) {
    fprintf(stderr, "insn_count: begin= and end= marker addresses are required\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_translate);
  qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
  return 0;
}
