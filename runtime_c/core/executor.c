/*
 * executor.c - runs a loaded module's command list.
 *
 * mrt_module_load has checked every command head against the image's (so every ordinal
 * indexes its dispatch table) and every binding against the arena size, the pool size,
 * the I/O sizes and what the image's dispatch accesses through it, so this file only
 * checks the caller's arguments (once, before anything runs) and then turns each binding
 * into a pointer with no further checks: the per-command cost is a few loads per binding
 * and one indirect call.
 */
#include "minirt.h"

typedef uint32_t __attribute__((may_alias)) mrt_u32_alias_t;

static inline uint32_t mrt_rd32(const uint8_t *p) { return *(const mrt_u32_alias_t *)p; }

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
  const uint8_t *p = module->commands;
  for (uint32_t c = image->command_count; c; --c) {
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
    dispatches[head & 0xFFFFu](bindings);
  }
  return MRT_OK;
}
