/*
 * minirt_qemu_plugin.h - our own declarations of the few QEMU TCG plugin API functions
 * that insn_count.c uses. Debian ships no qemu-plugin.h (no qemu "-dev" package carries
 * it for 7.2), so we declare the stable C ABI ourselves: opaque handles, two enums and
 * plain functions that the QEMU binary exports to plugins it dlopen()s.
 *
 * API version: QEMU 7.2 accepts plugins whose `qemu_plugin_version` lies in
 * [QEMU_PLUGIN_MIN_VERSION, QEMU_PLUGIN_VERSION] = [0, 1]; we declare version 1.
 * Every function below exists with this signature from QEMU 4.2 to 8.x.
 */
#ifndef MINIRT_QEMU_PLUGIN_H
#define MINIRT_QEMU_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define MINIRT_QEMU_PLUGIN_API_VERSION 1

typedef uint64_t qemu_plugin_id_t;

struct qemu_info_t; /* what QEMU tells the plugin at install time; unused here */
struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_cb_flags {
  QEMU_PLUGIN_CB_NO_REGS,
  QEMU_PLUGIN_CB_R_REGS,
  QEMU_PLUGIN_CB_RW_REGS,
};

enum qemu_plugin_op {
  QEMU_PLUGIN_INLINE_ADD_U64,
};

/* Which accesses a memory callback sees (QEMU 7.2: R = 1, W = 2, RW = 3). */
enum qemu_plugin_mem_rw {
  QEMU_PLUGIN_MEM_R = 1,
  QEMU_PLUGIN_MEM_W,
  QEMU_PLUGIN_MEM_RW,
};

/* Packed description of one memory access (size, sign, endianness, store bit). */
typedef uint32_t qemu_plugin_meminfo_t;

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
                                                enum qemu_plugin_op op, void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
                                          qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
_Bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);

#endif /* MINIRT_QEMU_PLUGIN_H */
