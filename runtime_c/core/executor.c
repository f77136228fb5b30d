/*
 * executor.c - runs a loaded module's command list.
 *
 * mrt_module_load has checked that the module's command list is exactly the one the
 * image's code was compiled for, and the compiler checked that every binding lies inside
 * the arena, the constant pool or its input / output, so this file only checks the
 * caller's arguments (once, before anything runs) and then turns each binding into a
 * pointer: the per-command cost is a few loads per binding and one indirect call.
 *
 * Commands run in order until the end of the command list, except after a branch
 * (MRT_COMMAND_BRANCH in the head: control flow), which returns where to continue. Its
 * targets are constants in the image's code, made for the command layout the loader
 * has checked, so they always land on a command head (or on the end); a loop the model
 * never leaves runs until the caller stops it (minirt-run --timeout under QEMU), or,
 * in an image built with a cycle budget (MRT_MAX_CYCLES, minirt-build --max-cycles),
 * until the walk finds the budget spent: it reads the platform's cycle counter at every
 * command head, and every turn of a loop passes one (its branch). Without the budget
 * none of that code exists: the image is byte for byte what it was.
 */
#include "minirt.h"

/* may_alias: an image's words may be set up in a byte buffer (tests, loaders). */
typedef uint32_t __attribute__((may_alias)) mrt_u32_alias_t;


/* Set in a command's dispatch ordinal: the dispatch is a branch (BRANCH_FLAG in
 * toolchain/module/format.py), an mrt_branch_fn_t; the table index is the ordinal
 * without it. */
#define MRT_COMMAND_BRANCH 0x8000u
/* A branch reads its bindings and returns the byte offset, in the command list, of the
 * command to run next (toolchain/kernel/branch.py). */
typedef uint32_t (*mrt_branch_fn_t)(void *const *bindings);

#ifdef MRT_MAX_CYCLES
mrt_status_t mrt_module_execute(const mrt_module_t *module, void *const *inputs,
                                void *const *outputs, void *arena) {
  uint64_t spent = 0, mark;
  mrt_platform_cycles_start(&mark);
#else
void mrt_module_execute(const mrt_module_t *module, void *const *inputs, void *const *outputs,
                        void *arena) {
#endif
  const mrt_image_t *const image = module->image;
  /* Per binding kind: the base an arena / pool offset is added to, or the table an
   * input / output index selects from. */
  const uintptr_t bases[4] = {(uintptr_t)arena, (uintptr_t)module->base + image->pool_offset,
                              (uintptr_t)inputs, (uintptr_t)outputs};
  /* The command list as the image holds it: the loader checked that the module's is
   * the same bytes. */
  const uint8_t *const first = (const uint8_t *)image->commands;
  for (const mrt_u32_alias_t *p = image->commands; p != image->commands_end;) {
#ifdef MRT_MAX_CYCLES
    spent += mrt_platform_cycles_since(&mark);
    if (spent > (uint64_t)(MRT_MAX_CYCLES)) return MRT_ERR_BUDGET;
#endif
    const uint32_t head = *p++;
    void *bindings[MRT_MAX_BINDINGS];
    void **b = bindings;
    for (uint32_t n = head >> 16; n; --n) {
      const uint32_t ref = *p++, value = ref & 0x3FFFFFFFu;
      const uintptr_t base = bases[ref >> 30];
      /* Inputs and outputs (kinds 2, 3) are one word, an index; arena and constant
       * bindings two, an offset and the byte size (which only tools read). Constants
       * live in flash: dispatches take void *const *, but the compiler binds what a
       * dispatch stores only to the arena or an output. */
      if ((int32_t)ref < 0) {
        *b++ = ((void *const *)base)[value];
      } else {
        *b++ = (void *)(base + value);
        ++p;
      }
    }
    const mrt_dispatch_fn_t fn = image->dispatches[head & (MRT_COMMAND_BRANCH - 1u)];
    if (head & MRT_COMMAND_BRANCH)
      p = (const mrt_u32_alias_t *)(first + ((mrt_branch_fn_t)(void (*)(void))fn)(bindings));
    else
      fn(bindings);
  }
#ifdef MRT_MAX_CYCLES
  return MRT_OK;
#endif
}

mrt_status_t mrt_module_run(const mrt_module_t *module, void *const *inputs,
                            void *const *outputs, void *arena, uint32_t arena_size) {
  /* Only the arrays are checked, not each entry: a non-null garbage pointer could not be
   * caught anyway. */
  if (!module || !module->base) return MRT_ERR_ARGUMENT;
  const mrt_image_t *const image = module->image;
  if ((image->input_count && !inputs) || (image->output_count && !outputs) ||
      arena_size < image->arena_size || ((uintptr_t)arena & (MRT_MODULE_ALIGN - 1u)) ||
      (image->arena_size && !arena))
    return MRT_ERR_ARGUMENT;
#ifdef MRT_MAX_CYCLES
  return mrt_module_execute(module, inputs, outputs, arena);
#else
  mrt_module_execute(module, inputs, outputs, arena);
  return MRT_OK;
#endif
}
