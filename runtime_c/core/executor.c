/*
 * executor.c - runs a loaded module's command list.
 *
 * mrt_module_load has checked every command head against the image's (so every ordinal
 * indexes its dispatch table) and every binding against the arena size, the pool size,
 * the I/O sizes and what the image's dispatch accesses through it, so this file only
 * checks the caller's arguments (once, before anything runs) and then turns each binding
 * into a pointer with no further checks: the per-command cost is a few loads per binding
 * and one indirect call.
 *
 * Commands run in order until the end of the command section, except after a branch
 * (MRT_COMMAND_BRANCH in the head: control flow), which returns where to continue. Its
 * targets are constants in the image's code, made for the command layout the loader
 * has checked, so they always land on a command head (or on the end); a loop the model
 * never leaves runs until the caller stops it (minirt-run --timeout under QEMU).
 */
#include "minirt.h"

typedef uint32_t __attribute__((may_alias)) mrt_u32_alias_t;

static inline uint32_t mrt_rd32(const uint8_t *p) { return *(const mrt_u32_alias_t *)p; }

/* The header's commands_size word (docs/module-format.md), checked by the loader. */
#define MRT_HEADER_COMMANDS_SIZE 36u
/* Set in a command's dispatch ordinal: the dispatch is a branch (BRANCH_FLAG in
 * toolchain/module/format.py), an mrt_branch_fn_t; the table index is the ordinal
 * without it. */
#define MRT_COMMAND_BRANCH 0x8000u
/* A branch reads its bindings and returns the byte offset, in the command section, of
 * the command to run next (toolchain/kernel/branch.py). */
typedef uint32_t (*mrt_branch_fn_t)(void *const *bindings);

mrt_status_t mrt_module_run(const mrt_module_t *module, void *const *inputs,
                            void *const *outputs, void *arena, uint32_t arena_size) {
  /* Only the arrays are checked, not each entry: a non-null garbage pointer could not be
   * caught anyway. */
  if (!module || !module->base) return MRT_ERR_ARGUMENT;
  const mrt_image_t *const image = module->image;
  if ((image->input_count && !inputs) || (image->output_count && !outputs) ||
      arena_size < module->arena_size || ((uintptr_t)arena & (MRT_MODULE_ALIGN - 1u)) ||
      (module->arena_size && !arena))
    return MRT_ERR_ARGUMENT;

  const mrt_dispatch_fn_t *const dispatches = image->dispatches;
  /* Per binding kind: the base an arena / pool offset is added to, or the table an
   * input / output index selects from. */
  const uintptr_t bases[4] = {(uintptr_t)arena, (uintptr_t)module->constants,
                              (uintptr_t)inputs, (uintptr_t)outputs};
  const uint8_t *const first = module->commands;
  const uint8_t *const end = first + mrt_rd32(module->base + MRT_HEADER_COMMANDS_SIZE);
  for (const uint8_t *p = first; p != end;) {
    const uint32_t head = mrt_rd32(p);
    void *bindings[MRT_MAX_BINDINGS];
    p += 4;
    for (uint32_t j = 0; j < head >> 16; ++j, p += 8) {
      const uint32_t ref = mrt_rd32(p);
      const uint32_t value = ref & 0x3FFFFFFFu;
      const uintptr_t base = bases[ref >> 30];
      /* Constants live in flash: dispatches take void *const *, but the loader has
       * checked that each binding is of the kind the image's code expects, and the
       * compiler binds what a dispatch stores only to the arena or an output. */
      bindings[j] = ref >> 31 ? ((void *const *)base)[value] : (void *)(base + value);
    }
    const mrt_dispatch_fn_t fn = dispatches[head & (MRT_COMMAND_BRANCH - 1u)];
    if (head & MRT_COMMAND_BRANCH)
      p = first + ((mrt_branch_fn_t)(void (*)(void))fn)(bindings);
    else
      fn(bindings);
  }
  return MRT_OK;
}
