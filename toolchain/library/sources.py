"""The text files of a model library: its header, its entry (C, compiled into the
library) and the CMake and Make snippets and pkg-config file that link it into a user's
firmware.

The entry keeps the runtime's guarantees: the first call (or `<name>_init`) loads the
module and checks it against the image's contract (mrt_module_load), once; every call
returns an mrt_status_t of runtime_c/include/minirt.h (MRT_OK is 0), so a module that
does not load is never run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolchain.module.pack import TensorSig
from toolchain.types import SMALL_FLOATS

__all__ = ["ARENA_MODES", "C_TYPES", "LibrarySpec", "cmake_snippet", "entry_source",
           "header_source", "make_snippet", "pkg_config_file"]

ARENA_MODES: tuple[str, ...] = ("static", "caller")

# The C element type of each module dtype in the entry's signature. Half and bfloat16
# values are passed as their bit patterns (the small floats too); i1 is one byte per
# element, as in the module.
C_TYPES: dict[str, str] = {
    "f32": "float", "f64": "double", "f16": "uint16_t", "bf16": "uint16_t",
    "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
    "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t", "i1": "uint8_t",
    **{name: "uint8_t" for name in SMALL_FLOATS},  # their codes, one a byte
}


@dataclass(frozen=True)
class LibrarySpec:
    """Everything the generated files say about one library."""

    name: str  # a checked C identifier (names.check_name)
    model: str  # the model file's name, for the comments
    board: str
    target: str  # the target descriptor's name
    triple: str
    cflags: tuple[str, ...]  # the target's ABI flags, which the user's code must share
    inputs: tuple[TensorSig, ...]
    outputs: tuple[TensorSig, ...]
    arena_size: int
    arena: str  # "static" or "caller"
    hosted: bool  # an OS target (Linux): the objects are not position-independent
    # int8 I/O: index in inputs + outputs -> (scale, zero point)
    quantization: dict[int, tuple[float, int]]
    # The commands one inference runs, in the model's own names (report/layers.py):
    # (label, op kind, MACs, weights bytes, every source name); comments in the header.
    layers: tuple[tuple[str, str, int, int, tuple[str, ...]], ...] = ()
    # A model with state (graph/ir.py): the offset of each state slot in the image's
    # state region (mrt_image_state), which the entry binds after the caller's buffers.
    state_offsets: tuple[int, ...] = ()
    state_size: int = 0

    @property
    def macro(self) -> str:
        return self.name.upper()

    def params(self) -> list[tuple[str, str]]:
        """(C declaration, argument name) of each parameter of <name>_run, in order."""
        params = [(f"const {C_TYPES[t.dtype.name]} *in{i}", f"in{i}")
                  for i, t in enumerate(self.inputs)]
        params += [(f"{C_TYPES[t.dtype.name]} *out{j}", f"out{j}")
                   for j, t in enumerate(self.outputs)]
        if self.arena == "caller":
            params.append(("void *arena", "arena"))
        return params


def _prototype(spec: LibrarySpec) -> str:
    params = ", ".join(decl for decl, _ in spec.params()) or "void"
    return f"int {spec.name}_run({params})"


def _tensor_macros(spec: LibrarySpec, prefix: str, index: int, t: TensorSig,
                   quant: tuple[float, int] | None) -> list[str]:
    m = f"{spec.macro}_{prefix}{index}"
    shape = ", ".join(str(d) for d in t.shape)
    elements = t.byte_size // t.dtype.itemsize if t.dtype.itemsize else 0
    lines = [f"/* {'input' if prefix == 'IN' else 'output'} {index}: {t.name}, "
             f"{t.dtype.name}[{'x'.join(map(str, t.shape)) or 'scalar'}] */",
             f"#define {m}_DTYPE MRT_DTYPE_{t.dtype.name.upper()}",
             f"#define {m}_RANK {len(t.shape)}",
             f"#define {m}_SHAPE {{{shape}}}" if t.shape else f"#define {m}_SHAPE {{1}}",
             f"#define {m}_ELEMENTS {elements}",
             f"#define {m}_BYTES {t.byte_size}"]
    if quant is not None:
        scale, zero_point = quant
        lines += [f"/* real = {m}_SCALE * (q - {m}_ZERO_POINT) */",
                  f"#define {m}_SCALE {float(scale)!r}f",
                  f"#define {m}_ZERO_POINT {int(zero_point)}"]
    return lines


def _comment_safe(text: str) -> str:
    """`text` inside a C block comment: no `*/` to end it early nor `/*` for -Wcomment
    to warn about, one line."""
    return " ".join(text.replace("*/", "* /").replace("/*", "/ *").split())


def _layer_comment(spec: LibrarySpec) -> list[str]:
    """The header's table of the model's layers as one inference runs them (what
    minirt-run --profile names its rows), then each layer's source names in full."""
    if not spec.layers:
        return []
    width = max(len(label) for label, *_ in spec.layers)
    kinds = max(len(kind) for _, kind, *_ in spec.layers)
    lines = ["/*", f" * The {len(spec.layers)} dispatches of one inference, in the model's "
             "own names", " * (label, op, MACs, weights bytes; then the model ops each one "
             "runs):"]
    for k, (label, kind, macs, weights, _) in enumerate(spec.layers):
        lines.append(f" * {k:4d}  {_comment_safe(label):<{width}}  {kind:<{kinds}} "
                     f"{macs:>12,} MACs {weights:>9,} B")
    lines.append(" *")
    for k, (*_, names) in enumerate(spec.layers):
        for name in names:
            lines.append(f" * {k:4d}  {_comment_safe(name)}")
    lines.append(" */")
    return lines


def _state_doc(spec: LibrarySpec) -> str:
    """The header's declaration of <name>_reset_state, for a model with state."""
    if not spec.state_offsets:
        return ""
    return f"""/* The model keeps state between inferences ({spec.state_size} B, inside the
 * library): each {spec.name}_run starts from what the previous one left, the first from
 * the model's initial values. Sets the state to its reset values (TFLite Micro's
 * MicroInterpreter::Reset: variables back to their zero point; an init subgraph does
 * not run again). Returns MRT_OK or the module's status if it does not load. */
int {spec.name}_reset_state(void);

"""


def header_source(spec: LibrarySpec) -> str:
    """`<name>.h`: the typed entry, `<name>_init`, and the I/O and arena macros."""
    m = spec.macro
    guard = f"MINIRT_{m}_H"
    body = [f"#define {m}_INPUT_COUNT {len(spec.inputs)}",
            f"#define {m}_OUTPUT_COUNT {len(spec.outputs)}"]
    n_in = len(spec.inputs)
    for i, t in enumerate(spec.inputs):
        body += _tensor_macros(spec, "IN", i, t, spec.quantization.get(i))
    for j, t in enumerate(spec.outputs):
        body += _tensor_macros(spec, "OUT", j, t, spec.quantization.get(n_in + j))
    caller = spec.arena == "caller"
    body += [
        f"/* Scratch memory of one inference: {spec.arena_size} B, "
        + ("passed by the caller to every call (--arena caller)." if caller else
           "static inside the library (--arena static).") + " */",
        f"#define {m}_ARENA_SIZE {spec.arena_size}",
        f"#define {m}_ARENA_ALIGN 16",
        f"#define {m}_ARENA_CALLER {int(caller)}",
    ]
    arena_doc = (
        f" * arena: {m}_ARENA_SIZE bytes aligned to {m}_ARENA_ALIGN, e.g.\n"
        f" *   static _Alignas({m}_ARENA_ALIGN) uint8_t arena[{m}_ARENA_SIZE];\n"
        " * (NULL when the size is 0). Calls that run at the same time need one arena each.\n"
        if caller else
        " * The arena is static inside the library: calls must not overlap in time.\n")
    params = "".join(f" * in{i}: {C_TYPES[t.dtype.name]}[{m}_IN{i}_ELEMENTS], read only\n"
                     for i, t in enumerate(spec.inputs))
    params += "".join(f" * out{j}: {C_TYPES[t.dtype.name]}[{m}_OUT{j}_ELEMENTS], written\n"
                      for j, t in enumerate(spec.outputs))
    body += _layer_comment(spec)
    return f"""/*
 * {spec.name}.h - generated by minirt-build --emit library from {spec.model}
 * for board {spec.board} (target {spec.target}, {spec.triple}). Do not edit.
 *
 * Link libminirt_{spec.name}.a: the minirt runtime core, the model's dispatch code and its
 * module (weights and schedule). It has no start-up code and no main; it calls nothing
 * outside itself and exports only {spec.name}_init and {spec.name}_run. Compile your code
 * with the same ABI flags as the library:
 *   {' '.join(spec.cflags)}
 */
#ifndef {guard}
#define {guard}

#include <stdint.h>

#include "minirt.h" /* mrt_status_t codes (MRT_OK is 0) and MRT_DTYPE_* */

#ifdef __cplusplus
extern "C" {{
#endif

{chr(10).join(body)}

/* Loads the module and checks it against the code compiled into the library
 * (mrt_module_load), once: later calls return the first call's status. Optional:
 * {spec.name}_run does it on its first call. Returns MRT_OK or an MRT_ERR_* code. */
int {spec.name}_init(void);

{_state_doc(spec)}/* Runs one inference. Returns MRT_OK (0) or an MRT_ERR_* code of minirt.h: the
 * module's status if it does not load, MRT_ERR_ARGUMENT for a NULL buffer{
    " or a misaligned arena" if caller else ""}.
{params}{arena_doc} */
{_prototype(spec)};

#ifdef __cplusplus
}}
#endif
#endif /* {guard} */
"""


# The image's state region and its boot and reset values (codegen/image.py).
STATE_EXTERNS = """extern uint8_t mrt_image_state[];
extern const uint8_t mrt_image_state_initial[], mrt_image_state_reset[];

"""


def entry_source(spec: LibrarySpec) -> str:
    """The C entry compiled into the library (it includes `<name>.h`)."""
    n = spec.name
    inputs = [arg for _, arg in spec.params() if arg.startswith("in")]
    outputs = [arg for _, arg in spec.params() if arg.startswith("out")]
    checks = " || ".join(f"!{a}" for a in inputs + outputs)

    slots = [f"mrt_image_state + {o}" for o in spec.state_offsets]

    def table(kind: str, args: Sequence[str]) -> str:
        if not args and not slots:
            return f"  void *const *const {kind} = NULL;"
        items = ", ".join([f"(void *){a}" for a in args] + slots)
        return f"  void *const {kind}[{len(args) + len(slots)}] = {{{items}}};"

    arena = "arena" if spec.arena == "caller" else "mrt_image_arena"
    state_boot = state_fns = externs = ""
    if spec.state_offsets:
        externs = STATE_EXTERNS
        # The state region starts from its boot values (after the model's init, e.g.
        # TFLite's CALL_ONCE subgraph) and returns to its reset values on a reset.
        state_boot = ("\n    __builtin_memcpy(mrt_image_state, mrt_image_state_initial, "
                      f"{spec.state_size});")
        state_fns = f"""
int {n}_reset_state(void) {{
  const mrt_status_t status = {n}_init();
  if (status != MRT_OK) return status;
  __builtin_memcpy(mrt_image_state, mrt_image_state_reset, {spec.state_size});
  return MRT_OK;
}}
"""
    return f"""/* Generated by minirt-build --emit library: the entry of libminirt_{n}.a. */
#include <stddef.h>

#include "minirt.h"
#include "mrt_image.h"
#include "{n}.h"

{externs}/* Zero-initialized (.bss), so any start-up code that clears .bss suffices. */
static mrt_module_t {n}_module;
static mrt_status_t {n}_status;
static uint8_t {n}_loaded;

int {n}_init(void) {{
  if (!{n}_loaded) {{
    {n}_status = mrt_module_load(mrt_image_module, mrt_image_module_size, &mrt_image,
                                 &{n}_module);
    {n}_loaded = 1;{state_boot}
  }}
  return {n}_status;
}}
{state_fns}
{_prototype(spec)} {{
  const mrt_status_t status = {n}_init();
  if (status != MRT_OK) return status;
{f"  if ({checks}) return MRT_ERR_ARGUMENT;" if checks else ""}
{table("inputs", inputs)}
{table("outputs", outputs)}
  return mrt_module_run(&{n}_module, inputs, outputs, {arena}, {spec.macro}_ARENA_SIZE);
}}
"""


def _link_flags(spec: LibrarySpec) -> tuple[str, ...]:
    """The flags a link with the library needs: the ABI flags, which pick the compiler
    driver's matching libraries (arm-none-eabi-gcc's hard-float libgcc on cortex-m4),
    and on a hosted target -no-pie (the objects are not position-independent)."""
    return (*spec.cflags, *(("-no-pie",) if spec.hosted else ()))


def cmake_snippet(spec: LibrarySpec) -> str:
    """`<name>.cmake`: an imported target minirt::<name> for include(), which carries the
    ABI flags to every target that links it (a firmware compiled without them does not
    link: "uses VFP register arguments")."""
    n, m = spec.name, spec.macro
    compile_options, link_options = ";".join(spec.cflags), ";".join(_link_flags(spec))
    return f"""# Generated by minirt-build --emit library: model {n} for board {spec.board}
# ({spec.triple}). In your CMakeLists.txt:
#   include(path/to/{n}.cmake)
#   target_link_libraries(your_firmware PRIVATE minirt::{n})
# The target brings its include directory and the ABI flags (MINIRT_{m}_C_FLAGS) to
# your firmware's compile and link.
if(NOT TARGET minirt::{n})
  add_library(minirt::{n} STATIC IMPORTED)
  set_target_properties(minirt::{n} PROPERTIES
    IMPORTED_LOCATION "${{CMAKE_CURRENT_LIST_DIR}}/libminirt_{n}.a"
    INTERFACE_INCLUDE_DIRECTORIES "${{CMAKE_CURRENT_LIST_DIR}}"
    INTERFACE_COMPILE_OPTIONS "{compile_options}"
    INTERFACE_LINK_OPTIONS "{link_options}")
endif()
set(MINIRT_{m}_C_FLAGS "{' '.join(spec.cflags)}")
"""


def make_snippet(spec: LibrarySpec) -> str:
    """`<name>.mk`: variables for a Makefile that includes it."""
    n, m = spec.name, spec.macro
    return f"""# Generated by minirt-build --emit library: model {n} for board {spec.board}
# ({spec.triple}). In your Makefile:
#   include path/to/{n}.mk
#   CFLAGS += $(MINIRT_{m}_CFLAGS)
#   CPPFLAGS += $(MINIRT_{m}_CPPFLAGS)
#   LDFLAGS += $(MINIRT_{m}_LDFLAGS)
#   firmware.elf: $(OBJS)
#   	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(MINIRT_{m}_LIB)
MINIRT_{m}_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
MINIRT_{m}_CPPFLAGS := -I$(MINIRT_{m}_DIR)
MINIRT_{m}_LIB := $(MINIRT_{m}_DIR)/libminirt_{n}.a
# The ABI the library was compiled for: your code must be compiled, and linked, with it.
MINIRT_{m}_CFLAGS := {' '.join(spec.cflags)}
MINIRT_{m}_LDFLAGS := {' '.join(_link_flags(spec))}
"""


def pkg_config_file(spec: LibrarySpec, version: str) -> str:
    """`minirt_<name>.pc`: the include directory, the ABI flags and the archive for
    `pkg-config --cflags --libs`, relocatable (paths relative to the file itself)."""
    n = spec.name
    return f"""# Generated by minirt-build --emit library: model {n} for board {spec.board}.
# PKG_CONFIG_PATH=path/to/lib pkg-config --cflags --libs minirt_{n}
prefix=${{pcfiledir}}

Name: minirt_{n}
Description: the model {spec.model} compiled by minirt for board {spec.board} ({spec.triple})
Version: {version}
Cflags: -I${{prefix}} {' '.join(spec.cflags)}
Libs: ${{prefix}}/libminirt_{n}.a {' '.join(_link_flags(spec))}
"""
