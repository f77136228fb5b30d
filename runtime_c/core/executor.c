/*
 * executor.c - runs a loaded module's command list.
 *
 * mrt_module_load has range-checked every binding against the arena size, the pool
 * size and the I/O byte sizes, so this file only checks the caller's arguments (once,
 * before anything runs) and then turns each binding into a pointer with no further
 * checks: the per-command cost is a few loads per binding and one indirect call.
 */
#include "minirt.h"

typedef uint32_t __attribute__((may_alias)) mrt_u32_alias_t;

static inline uint32_t mrt_rd32(const uint8_t *p) { return *(const mrt_u32_alias_t *)p; }

mrt_status_t mrt_module_run(const mrt_module_t *module, const mrt_dispatch_fn_t *dispatches,
                            uint32_t dispatch_count, void *const *inputs, void *const *outputs,
                            void *arena, uint32_t arena_size) {
  /* Only the arrays are checked, not each entry: the image's generated tables are
   * dense, and a non-null garbage pointer could not be caught anyway. */
  if (!module || !module->base || !dispatches || (module->input_count && !inputs) ||
      (module->output_count && !outputs) || arena_size < module->arena_size ||
      ((uintptr_t)arena & (MRT_MODULE_ALIGN - 1u)) || (module->arena_size && !arena))
    return MRT_ERR_ARGUMENT;
  if (dispatch_count < module->dispatch_count) return MRT_ERR_DISPATCH;

  const uint8_t *const constants = module->constants;
  const uint8_t *p = module->commands;
  for (uint32_t c = module->command_count; c; --c) {
    const uint32_t head = mrt_rd32(p);
    const uint32_t n = head >> 16;
    void *bindings[MRT_MAX_BINDINGS];
    p += 4;
    for (uint32_t j = 0; j < n; ++j, p += 8) {
      const uint32_t ref = mrt_rd32(p);
      const uint32_t value = ref & 0x3FFFFFFFu;
      const uint32_t kind = ref >> 30;
      /* Constants live in flash: dispatches take void *const * but the codegen only
       * ever loads through a constant's binding. */
      if (kind == MRT_BINDING_ARENA) bindings[j] = (uint8_t *)arena + value;
      else if (kind == MRT_BINDING_CONSTANT) bindings[j] = (void *)(uintptr_t)(constants + value);
      else bindings[j] = (kind == MRT_BINDING_INPUT ? inputs : outputs)[value];
    }
    dispatches[head & 0xFFFFu](bindings);
  }
  return MRT_OK;
}
