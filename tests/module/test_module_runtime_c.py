"""Host tests of runtime_c/core: the C loader and executor on modules from the packer.

The runtime is compiled the way firmware compiles it (-ffreestanding -fno-builtin
-nostdlib objects) and linked with a small harness into a shared library loaded with
ctypes. A second build with AddressSanitizer runs the byte-flip and mutation sweeps in
C, so an out-of-bounds read anywhere in load or run fails the test instead of passing
silently.
"""

from __future__ import annotations

import ctypes
import random
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from toolchain.module import (
    Binding,
    Command,
    ConstantEntry,
    ImageContract,
    ModuleFormatError,
    Status,
    TensorSig,
    constant_binding,
    pack_module,
    read_module,
)
from toolchain.module import format as fmt

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "runtime_c" / "core"
INCLUDE = ROOT / "runtime_c" / "include"
CLANG = shutil.which("clang")
CORE_FLAGS = ["-std=c11", "-O2", "-ffreestanding", "-fno-builtin", "-nostdlib", "-Wall", "-Wextra"]
CORE_FLAGS += ["-Werror", f"-I{INCLUDE}"]
X86_64 = fmt.target_id("x86-64")

pytestmark = pytest.mark.skipif(CLANG is None, reason="clang is not installed")

# Dispatch ordinals of the harness's table, in this order.
MUL, ADD, MULADD, SUM16 = range(4)

HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "minirt.h"

/* Elementwise over 16 floats; bindings in the order the packer lists them. */
static void mul_f32(void *const *b) {
  const float *x = b[0], *y = b[1]; float *o = b[2];
  for (int i = 0; i < 16; ++i) o[i] = x[i] * y[i];
}
static void add_f32(void *const *b) {
  const float *x = b[0], *y = b[1]; float *o = b[2];
  for (int i = 0; i < 16; ++i) o[i] = x[i] + y[i];
}
static void muladd_f32(void *const *b) {
  const float *x = b[0], *y = b[1], *z = b[2]; float *o = b[3];
  for (int i = 0; i < 16; ++i) o[i] = x[i] * y[i] + z[i];
}
/* Sixteen bindings of one float each: o = sum of the first fifteen. */
static void sum16_f32(void *const *b) {
  float s = 0;
  for (int i = 0; i < 15; ++i) s += *(const float *)b[i];
  *(float *)b[15] = s;
}
static const mrt_dispatch_fn_t h_dispatches[] = {mul_f32, add_f32, muladd_f32, sum16_f32};

/* The image the tests load modules against (mrt_image_t ends in a flexible array of
 * the pinned structure): set from Python (h_set_image). */
static uint32_t h_io_sizes[512];
_Alignas(8) uint8_t h_image[1 << 16];

/* fixed: target, layout CRC, pool offset, signature size, command size. */
void h_set_image(const uint32_t *fixed, const uint32_t *pinned, uint32_t n_pinned,
                 const uint32_t *io_sizes, uint32_t n_io) {
  mrt_image_t *img = (mrt_image_t *)h_image;
  img->dispatches = h_dispatches;
  img->io_sizes = h_io_sizes;
  img->target_id = fixed[0];
  img->layout_crc = fixed[1];
  img->pool_offset = fixed[2];
  uint32_t *words = &img->module_size;
  for (uint32_t i = 0; i < n_pinned; ++i) words[i] = pinned[i];
  /* The command list: after the header's four pinned words and the signature. */
  img->commands = words + 4 + fixed[3] / 4u;
  img->commands_end = img->commands + fixed[4] / 4u;
  for (uint32_t i = 0; i < n_io && i < 512; ++i) h_io_sizes[i] = io_sizes[i];
}

static _Alignas(16) uint8_t module_buf[1 << 16];
static _Alignas(16) uint8_t arena_buf[1 << 12];
mrt_module_t h_module;

int h_load(const void *data, uint32_t size, uint32_t misalign, int with_image) {
  if (size + misalign > sizeof module_buf) return -1;
  const uint8_t *src = data;
  for (uint32_t i = 0; i < size; ++i) module_buf[misalign + i] = src[i];
  return mrt_module_load(module_buf + misalign, size,
                         with_image ? (const mrt_image_t *)h_image : NULL, &h_module);
}

int h_run(void *const *inputs, void *const *outputs, uint32_t arena_misalign) {
  return mrt_module_run(&h_module, inputs, outputs, arena_buf + arena_misalign,
                        sizeof arena_buf - arena_misalign);
}

/* The harness's path: the module checks and the command walk without the argument
 * checks, as runtime_c/harness/main.c calls them. */
int h_validate_execute(const void *data, uint32_t size, void *const *inputs,
                       void *const *outputs) {
  const uint8_t *src = data;
  for (uint32_t i = 0; i < size; ++i) module_buf[i] = src[i];
  mrt_module_t m;
  const mrt_status_t status =
      mrt_module_validate(module_buf, size, (const mrt_image_t *)h_image, &m);
  if (status == MRT_OK) mrt_module_execute(&m, inputs, outputs, arena_buf);
  return status;
}

#ifdef FUZZ_MAIN
/* argv: module file, image file (u32 words: target, layout CRC, pool offset, signature
 * size, command size, the pinned word count and words, the I/O count and sizes),
 * mutation count.
 *
 * Every single-byte corruption must be rejected, and every truncation. Then modules
 * mutated with the CRC recomputed, and with the image's layout CRC recomputed too (a
 * crafted module that matches it, which a CRC cannot stop), must load or fail cleanly;
 * each that loads runs over exactly-sized heap buffers with dispatches that read every
 * byte of every binding and write every byte of every arena and output binding, as
 * much as the image's command list says its code would. ASan turns any stray access
 * into a crash. The mutations: every aligned u32 field before the pool set to each of a
 * list of boundary values, every binding moved over its region, then random byte
 * edits. */
static const uint32_t *fz_next; /* the image's command list, at the command being run */
static const mrt_image_t *fz_image;

/* Bytes a binding gives its dispatch: an arena or constant binding says them, an input
 * or output binding is its whole tensor. Advances *p past the binding. */
static uint32_t binding_bytes(const uint32_t **p) {
  const uint32_t ref = *(*p)++, kind = ref >> 30, value = ref & 0x3FFFFFFFu;
  if (kind < MRT_BINDING_INPUT) return *(*p)++;
  return fz_image->io_sizes[(kind == MRT_BINDING_OUTPUT ? fz_image->input_count : 0) + value];
}

static void touch(void *const *b) {
  const uint32_t n = *fz_next++ >> 16;
  const uint32_t *first = fz_next;
  uint8_t sum = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const volatile uint8_t *p = b[j];
    for (uint32_t k = 0, bytes = binding_bytes(&fz_next); k < bytes; ++k) sum ^= p[k];
  }
  fz_next = first;
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t kind = *fz_next >> 30, bytes = binding_bytes(&fz_next);
    if (kind != MRT_BINDING_ARENA && kind != MRT_BINDING_OUTPUT) continue;
    volatile uint8_t *p = b[j];
    for (uint32_t k = 0; k < bytes; ++k) p[k] = sum;
  }
}
static mrt_dispatch_fn_t touches[1024];
static long loaded = 0;

static void run_exact(const mrt_module_t *m) {
  const mrt_image_t *img = m->image;
  void *arena = NULL;
  ++loaded;
  if (img->arena_size && posix_memalign(&arena, 16, img->arena_size)) abort();
  void *io[512];
  const uint32_t n_io = img->input_count + img->output_count;
  for (uint32_t i = 0; i < n_io; ++i) {
    mrt_tensor_info_t info;
    const int is_out = i >= img->input_count;
    if (mrt_module_io_info(m, is_out, is_out ? i - img->input_count : i, &info) != MRT_OK)
      abort();
    for (const volatile char *c = info.name; c && *c; ++c) {}  /* name readable */
    for (uint32_t d = 0; d < info.rank; ++d) { volatile uint32_t v = info.dims[d]; (void)v; }
    if (info.byte_size != img->io_sizes[i]) abort();
    io[i] = malloc(img->io_sizes[i] ? img->io_sizes[i] : 1);
    for (uint32_t k = 0; k < img->io_sizes[i]; ++k) ((uint8_t *)io[i])[k] = (uint8_t)k;
  }
  fz_image = img;
  fz_next = img->commands;
  int st = mrt_module_run(m, io, io + img->input_count, arena, img->arena_size);
  if (st != MRT_OK) { printf("run status %d\n", st); abort(); }
  for (uint32_t i = 0; i < n_io; ++i) free(io[i]);
  free(arena);
}

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

/* Loads buf with its CRC, and the image's layout CRC, made to match; runs it if it
 * loads. */
static int try_crafted(uint8_t *buf, uint32_t size, mrt_image_t *img) {
  wr32(buf + 8, mrt_crc32(0, buf + 12, size - 12));
  if (img->pool_offset <= size) img->layout_crc = mrt_crc32(0, buf + 12, img->pool_offset - 12);
  mrt_module_t m;
  int st = mrt_module_load(buf, size, img, &m);
  if (st == MRT_OK) run_exact(&m);
  else if (st != MRT_ERR_MALFORMED && st != MRT_ERR_TRUNCATED && st != MRT_ERR_IMAGE) return st;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  static uint8_t orig[1 << 16];
  static uint32_t words[1 << 14];
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  uint32_t size = (uint32_t)fread(orig, 1, sizeof orig, f);
  fclose(f);
  f = fopen(argv[2], "rb");
  if (!f) return 2;
  uint32_t n_words = (uint32_t)fread(words, 4, sizeof words / 4, f);
  fclose(f);
  if (n_words < 7 || 7 + words[5] > n_words || 7 + words[5] + words[6 + words[5]] > n_words)
    return 2;
  for (int i = 0; i < 1024; ++i) touches[i] = touch;
  const uint32_t n_pinned = words[5], n_io = words[6 + n_pinned];
  /* The image: exactly as large as mrt_image_t and its pinned words, on the heap. */
  mrt_image_t *img = malloc(sizeof(mrt_image_t) + 4 * n_pinned);
  uint32_t *io_sizes = malloc(4 * (n_io + 1));
  if (!img || !io_sizes) return 2;
  for (uint32_t i = 0; i < n_io; ++i) io_sizes[i] = words[7 + n_pinned + i];
  img->dispatches = touches;
  img->io_sizes = io_sizes;
  img->target_id = words[0];
  img->layout_crc = words[1];
  img->pool_offset = words[2];
  for (uint32_t i = 0; i < n_pinned; ++i) (&img->module_size)[i] = words[6 + i];
  const uint32_t signature_size = words[3], commands_size = words[4];
  img->commands = &img->module_size + 4 + signature_size / 4u;
  img->commands_end = img->commands + commands_size / 4u;
  const uint32_t original_crc = img->layout_crc;
  long mutations = atol(argv[3]);
  uint8_t *buf = NULL;
  if (posix_memalign((void **)&buf, 16, size)) return 2;
  mrt_module_t m;

  for (uint32_t j = 0; j < size; ++j) buf[j] = orig[j];
  if (mrt_module_load(buf, size, img, &m) != MRT_OK) { printf("original rejected\n"); return 1; }
  run_exact(&m);
  for (uint32_t i = 0; i < size; ++i) {
    static const uint8_t masks[] = {0x01, 0x80, 0xFF, 0x10};
    for (unsigned k = 0; k < sizeof masks; ++k) {
      for (uint32_t j = 0; j < size; ++j) buf[j] = orig[j];
      buf[i] ^= masks[k];
      int st = mrt_module_load(buf, size, img, &m);
      if (st == MRT_OK) { printf("flip at %u mask %u accepted\n", i, masks[k]); return 1; }
    }
  }
  /* Truncations: every shorter length fails, reading nothing past the end. */
  for (uint32_t n = 0; n < size; ++n) {
    uint8_t *t = NULL;
    if (posix_memalign((void **)&t, 16, n ? n : 16)) return 2;
    for (uint32_t j = 0; j < n; ++j) t[j] = orig[j];
    if (mrt_module_load(t, n, img, &m) == MRT_OK) {
      printf("truncated %u accepted\n", n);
      return 1;
    }
    free(t);
  }

  /* Every aligned field before the pool, set to each boundary value. */
  const uint32_t pool = img->pool_offset;
  const uint32_t values[] = {0, 1, 16, img->arena_size, size, 0x7FFFFFFFu, 0xFFFFFFFFu,
                             1u << 30, 8, 64};
  long fields = 0;
  for (uint32_t at = 12; at + 4 <= pool; at += 4) {
    for (unsigned v = 0; v < sizeof values / sizeof values[0]; ++v) {
      for (uint32_t j = 0; j < size; ++j) buf[j] = orig[j];
      wr32(buf + at, values[v]);
      int st = try_crafted(buf, size, img);
      if (st) { printf("field %u = %u: status %d\n", at, values[v], st); return 1; }
      ++fields;
    }
  }

  /* Every binding moved to every aligned offset of its region (an input or output to
   * every index), with sizes that keep it inside the region: valid-looking bindings of
   * the wrong size or place. */
  const uint8_t *cmd = orig + 28 + signature_size;
  const uint8_t *const cmd_end = cmd + commands_size;
  long bindings = 0;
  while (cmd < cmd_end) {
    const uint32_t n = rd32(cmd) >> 16;
    cmd += 4;
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t at = (uint32_t)(cmd - orig), kind = rd32(cmd) >> 30;
      const int has_size = kind < MRT_BINDING_INPUT;
      const uint32_t limit = kind == MRT_BINDING_ARENA ? img->arena_size
                             : kind == MRT_BINDING_CONSTANT ? size - pool : 4;
      for (uint32_t off = 0; off <= limit; off += has_size ? 8 : 1) {
        const uint32_t sizes[] = {0, 8, limit - off, has_size ? rd32(cmd + 4) : 0};
        for (unsigned k = 0; k < (has_size ? 4u : 1u); ++k) {
          for (uint32_t i = 0; i < size; ++i) buf[i] = orig[i];
          wr32(buf + at, kind << 30 | off);
          if (has_size) wr32(buf + at + 4, sizes[k]);
          int st = try_crafted(buf, size, img);
          if (st) {
            printf("binding at %u = %u, %u: status %d\n", at, off, sizes[k], st);
            return 1;
          }
          ++bindings;
        }
      }
      cmd += has_size ? 8 : 4;
    }
  }

  uint64_t rng = 0x9E3779B97F4A7C15ull;
  for (long it = 0; it < mutations; ++it) {
    for (uint32_t j = 0; j < size; ++j) buf[j] = orig[j];
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    int edits = 1 + (int)(rng % 4);
    for (int e = 0; e < edits; ++e) {
      rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
      uint32_t at = 12 + (uint32_t)(rng % (size - 12));
      uint32_t how = (uint32_t)(rng >> 32) % 4;
      /* random byte, bit flip, small int, or an extreme word */
      if (how == 0) buf[at] = (uint8_t)(rng >> 40);
      else if (how == 1) buf[at] ^= (uint8_t)(1u << ((rng >> 40) & 7));
      else if (how == 2) buf[at] = (uint8_t)((rng >> 40) % 20);
      else if (at + 4 <= size) {
        buf[at] = buf[at + 1] = buf[at + 2] = 0xFF;
        buf[at + 3] = (uint8_t)(rng >> 48);
      }
    }
    int st = try_crafted(buf, size, img);
    if (st) { printf("mutation %ld: status %d\n", it, st); return 1; }
  }
  img->layout_crc = original_crc;
  printf("ok %ld fields, %ld bindings, %ld mutations, %ld loaded\n", fields, bindings, mutations,
         loaded);
  free(buf);
  return 0;
}
#endif
"""


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_uint32),
        ("rank", ctypes.c_uint32),
        ("dims", ctypes.POINTER(ctypes.c_uint32)),
        ("byte_size", ctypes.c_uint32),
    ]


class ModuleStruct(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("image", ctypes.c_void_p)]


def contract_of(data: bytes, target_id: int = X86_64) -> ImageContract:
    """The contract of an image built for exactly this module (what the compiler would
    write beside it): its structure, pinned, and its layout CRC."""
    return ImageContract.of_module(data, target_id)


def colliding(image: ImageContract, data: bytes) -> ImageContract:
    """The image with its layout CRC made to match `data`'s, as a crafted module could
    arrange (a CRC is no cryptographic hash); its pinned structure stays the image's."""
    return ImageContract(image.target_id, zlib.crc32(data[fmt.CRC_START:image.pool_offset]),
                         image.pinned)


def _fixed(c: ImageContract) -> list[int]:
    h = c.header
    return [c.target_id, c.layout_crc, c.pool_offset, h.signature_size, h.commands_size]


def image_words(c: ImageContract) -> list[int]:
    """The fuzz harness's image file: target, layout CRC, pool offset, section sizes,
    the pinned words, the I/O sizes."""
    words = c.words
    return [*_fixed(c), len(words), *words, len(c.io_sizes), *c.io_sizes]


def _compile(args: list[str]) -> None:
    subprocess.run([CLANG, *args], check=True, capture_output=True, text=True)


def _core_objects(out: Path, extra: list[str], sources: list[str] | None = None) -> list[str]:
    objs = []
    for src in sorted(CORE.glob("*.c")):
        if sources is not None and src.name not in sources:
            continue
        obj = out / f"{src.stem}.o"
        _compile([*CORE_FLAGS, *extra, "-c", str(src), "-o", str(obj)])
        objs.append(str(obj))
    return objs


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mrt_core")
    (out / "harness.c").write_text(HARNESS)
    return out


@pytest.fixture(scope="module")
def lib(build: Path) -> ctypes.CDLL:
    objs = _core_objects(build, ["-fPIC"])
    so = build / "libmrt_test.so"
    # -Bsymbolic: the harness's own calls bind to runtime_c's mem functions, not libc's.
    _compile(
        ["-O1", "-fPIC", f"-I{INCLUDE}", "-shared", "-Wl,-Bsymbolic", str(build / "harness.c")]
        + objs
        + ["-o", str(so)]
    )
    lib = ctypes.CDLL(str(so))
    lib.h_load.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int]
    lib.h_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32]
    lib.h_set_image.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                                ctypes.c_void_p, ctypes.c_uint32]
    lib.h_validate_execute.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_void_p,
                                       ctypes.c_void_p]
    lib.mrt_module_io_info.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_uint32,
        ctypes.POINTER(TensorInfo),
    ]
    lib.mrt_crc32.restype = ctypes.c_uint32
    lib.mrt_crc32.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32]
    return lib


def _module_struct(lib: ctypes.CDLL) -> ModuleStruct:
    return ModuleStruct.in_dll(lib, "h_module")


def _u32s(values: list[int] | tuple[int, ...]) -> ctypes.Array:
    return (ctypes.c_uint32 * max(1, len(values)))(*values)


def _set_image(lib: ctypes.CDLL, c: ImageContract) -> None:
    lib.h_set_image(_u32s(_fixed(c)), _u32s(c.words), len(c.words), _u32s(c.io_sizes),
                    len(c.io_sizes))


def _load(lib: ctypes.CDLL, data: bytes, image: ImageContract | None = None,
          misalign: int = 0) -> int:
    """Loads `data` against `image` (default: the image built for `data` itself)."""
    _set_image(lib, image or contract_of(data))
    return lib.h_load(data, len(data), misalign, 1)


def _ptrs(arrays: list[np.ndarray]) -> ctypes.Array:
    return (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])


def _run(lib: ctypes.CDLL, ins: list[np.ndarray], outs: list[np.ndarray]) -> int:
    return lib.h_run(_ptrs(ins), _ptrs(outs), 0)


F32_4x4 = 64


def seed_module(target: str = "x86-64") -> tuple[bytes, np.ndarray, np.ndarray]:
    """The 4x4 multiply-add seed plus a second output through constants:
    out0 = a * b + c (via the arena), out1 = a * W + B (W, B constants)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    bias = rng.standard_normal((4, 4)).astype(np.float32)
    ins = [TensorSig(n, "f32", (4, 4)) for n in ("a", "b", "c")]
    outs = [TensorSig("out0", "f32", (4, 4)), TensorSig("out1", "f32", (4, 4))]
    consts = [ConstantEntry.from_array(w), ConstantEntry.from_array(bias)]
    cmds = [
        Command(MUL, [Binding.input(0, F32_4x4), Binding.input(1, F32_4x4), Binding.arena(0, 64)]),
        Command(ADD, [Binding.arena(0, 64), Binding.input(2, 64), Binding.output(0, 64)]),
        Command(MUL, [Binding.input(0, 64), constant_binding(consts, 0), Binding.arena(64, 64)]),
        Command(ADD, [Binding.arena(64, 64), constant_binding(consts, 1), Binding.output(1, 64)]),
    ]
    return pack_module(target, ins, outs, consts, cmds, arena_size=128), w, bias


def fused_module() -> bytes:
    ins = [TensorSig(f"arg{i}", "f32", (4, 4)) for i in range(3)]
    outs = [TensorSig("result", "f32", (4, 4))]
    bindings = [Binding.input(0, 64), Binding.input(1, 64), Binding.input(2, 64)]
    cmds = [Command(MULADD, [*bindings, Binding.output(0, 64)])]
    return pack_module("x86-64", ins, outs, [], cmds, arena_size=0)


COMPILED_MODEL = """
func.func @main(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %w = stablehlo.constant dense<0.25> : tensor<8x4xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %e = stablehlo.exponential %d : tensor<2x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
       : (tensor<2x8xf32>, tensor<f32>) -> tensor<2xf32>
  %t = stablehlo.tanh %s : tensor<2xf32>
  return %e, %t : tensor<2x4xf32>, tensor<2xf32>
}
"""


def compiled_module(tmp_path: Path) -> tuple[bytes, ImageContract]:
    """A module and its image contract as the compiler makes them (no link)."""
    from toolchain.loader import load_graph
    from toolchain.module import image_contract
    from toolchain.module.from_program import module_from_program
    from toolchain.pipeline import prepare_graph
    from toolchain.schedule import schedule

    model = tmp_path / "compiled.mlir"
    model.write_text(COMPILED_MODEL)
    program = schedule(prepare_graph(load_graph(model)))
    data = module_from_program(program, "x86-64")
    return data, image_contract(program, data, X86_64)


def _inputs(n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(n)]


def test_seed_module_runs_and_matches_numpy(lib: ctypes.CDLL) -> None:
    data, w, bias = seed_module()
    assert _load(lib, data) == Status.OK
    m = _module_struct(lib)
    assert m.base and m.image == ctypes.addressof(ctypes.c_uint8.in_dll(lib, "h_image"))
    a, b, c = _inputs()
    out0, out1 = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    assert _run(lib, [a, b, c], [out0, out1]) == Status.OK
    np.testing.assert_array_equal(out0, a * b + c)
    np.testing.assert_array_equal(out1, a * w + bias)


def test_the_harness_path_without_argument_checks(lib: ctypes.CDLL) -> None:
    """mrt_module_validate + mrt_module_execute (what the verification harness calls)
    check the module exactly as mrt_module_load does and compute the same."""
    data, w, bias = seed_module()
    _set_image(lib, contract_of(data))
    a, b, c = _inputs()
    out0, out1 = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    assert lib.h_validate_execute(data, len(data), _ptrs([a, b, c]),
                                  _ptrs([out0, out1])) == Status.OK
    np.testing.assert_array_equal(out0, a * b + c)
    np.testing.assert_array_equal(out1, a * w + bias)
    bad = bytearray(data)
    bad[-1] ^= 1
    assert lib.h_validate_execute(bytes(bad), len(bad), None, None) == Status.CRC


def test_fused_command_with_no_arena(lib: ctypes.CDLL) -> None:
    assert _load(lib, fused_module()) == Status.OK
    a, b, c = _inputs()
    out = np.zeros((4, 4), np.float32)
    assert _run(lib, [a, b, c], [out]) == Status.OK
    np.testing.assert_array_equal(out, a * b + c)


def test_sixteen_bindings_per_command(lib: ctypes.CDLL) -> None:
    ins = [TensorSig(f"x{i}", "f32", ()) for i in range(15)]
    outs = [TensorSig("s", "f32", ())]
    cmd = Command(SUM16, [*(Binding.input(i, 4) for i in range(15)), Binding.output(0, 4)])
    data = pack_module("x86-64", ins, outs, [], [cmd], arena_size=0)
    assert _load(lib, data) == Status.OK
    xs = [np.array(float(i), np.float32) for i in range(15)]
    out = np.zeros((), np.float32)
    assert _run(lib, xs, [out]) == Status.OK
    assert out == sum(range(15))


def test_io_info(lib: ctypes.CDLL) -> None:
    data, _, _ = seed_module()
    assert _load(lib, data) == Status.OK
    m = ctypes.byref(_module_struct(lib))
    info = TensorInfo()
    names = []
    for is_output, count in ((0, 3), (1, 2)):
        for i in range(count):
            assert lib.mrt_module_io_info(m, is_output, i, ctypes.byref(info)) == Status.OK
            assert (info.dtype, info.rank, info.byte_size) == (fmt.DType.f32, 2, 64)
            assert [info.dims[0], info.dims[1]] == [4, 4]
            names.append(info.name.decode())
    assert names == ["a", "b", "c", "out0", "out1"]
    assert lib.mrt_module_io_info(m, 1, 2, ctypes.byref(info)) == Status.ARGUMENT
    assert info.byte_size == 0 and not info.name  # zeroed on entry
    assert lib.mrt_module_io_info(None, 0, 0, ctypes.byref(info)) == Status.ARGUMENT
    assert lib.mrt_module_io_info(m, 0, 0, None) == Status.ARGUMENT


def test_io_info_default_names_are_null(lib: ctypes.CDLL) -> None:
    """A tensor with its default name (input_<i>, output_<j>) has none stored: NULL."""
    ins = [TensorSig("input_0", "f32", (4, 4)), TensorSig("x", "i8", (3,)),
           TensorSig("input_2", "f32", (4, 4))]
    outs = [TensorSig("output_0", "f32", (4, 4))]
    cmd = Command(MULADD, [Binding.input(0, 64), Binding.input(2, 64), Binding.input(0, 64),
                           Binding.output(0, 64)])
    data = pack_module("x86-64", ins, outs, [], [cmd], arena_size=0)
    assert _load(lib, data) == Status.OK
    m = ctypes.byref(_module_struct(lib))
    info = TensorInfo()
    got = []
    for is_output, i in ((0, 0), (0, 1), (0, 2), (1, 0)):
        assert lib.mrt_module_io_info(m, is_output, i, ctypes.byref(info)) == Status.OK
        got.append((info.name, info.dtype, info.rank, info.byte_size))
    assert got == [(None, fmt.DType.f32, 2, 64), (b"x", fmt.DType.i8, 1, 3),
                   (None, fmt.DType.f32, 2, 64), (None, fmt.DType.f32, 2, 64)]


def test_load_argument_errors(lib: ctypes.CDLL) -> None:
    data, _, _ = seed_module()
    assert _load(lib, data, misalign=4) == Status.ARGUMENT  # base must be 16-aligned
    assert _module_struct(lib).base is None  # out_module zeroed on failure
    assert lib.h_load(data, len(data), 0, 0) == Status.ARGUMENT  # no image
    image = contract_of(data)
    assert _load(lib, data[:15], image) == Status.TRUNCATED
    assert _load(lib, data[:47], image) == Status.TRUNCATED
    assert _load(lib, data[:-1], image) == Status.TRUNCATED
    assert _load(lib, data + b"\0" * 16, image) == Status.MALFORMED  # size must match exactly
    other = ImageContract(fmt.target_id("cortex-m4"), image.layout_crc, image.pinned)
    assert _load(lib, data, other) == Status.TARGET
    assert lib.mrt_module_load(None, 64, None, None) == Status.ARGUMENT


def test_run_argument_errors(lib: ctypes.CDLL) -> None:
    data, _, _ = seed_module()
    assert _load(lib, data) == Status.OK
    ins = _inputs()
    outs = [np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)]
    outs[0][:] = 7
    assert lib.h_run(None, _ptrs(outs), 0) == Status.ARGUMENT
    assert lib.h_run(_ptrs(ins), None, 0) == Status.ARGUMENT
    assert lib.h_run(_ptrs(ins), _ptrs(outs), 8) == Status.ARGUMENT  # arena misaligned
    assert (outs[0] == 7).all(), "nothing may run when the arguments are rejected"


def test_every_single_byte_flip_is_rejected_with_the_readers_status(lib: ctypes.CDLL) -> None:
    """Header bytes fail their exact-match check; everything else fails the CRC."""
    for data in (seed_module()[0], fused_module()):
        image = contract_of(data)
        for i in range(len(data)):
            for mask in (0x01, 0x80, 0xFF):
                bad = bytearray(data)
                bad[i] ^= mask
                status = _load(lib, bytes(bad), image)
                assert status != Status.OK, f"flip at {i} accepted"
                with pytest.raises(ModuleFormatError) as e:
                    read_module(bytes(bad), image=image)
                assert e.value.status == status, f"byte {i}: C {status} vs reader"
                if i >= fmt.CRC_START:
                    assert status in (Status.CRC, Status.TRUNCATED, Status.MALFORMED)


def _with_crc(data: bytearray) -> bytes:
    struct.pack_into("<I", data, fmt.CRC_FIELD_OFFSET, zlib.crc32(data[fmt.CRC_START :]))
    return bytes(data)


def _crafted_cases() -> dict[str, tuple[bytes, Status]]:
    """Modules with a valid CRC that must be rejected, with the status they get when
    the image's layout CRC is made to match them too (a crafted module can do that: a
    CRC is no cryptographic hash). The image's copy of the structure decides: any change
    to the header, the signature or the commands differs from it (IMAGE), whatever the
    layout CRC; only the constant table, which the runtime never reads, is the CRC's
    alone."""
    data, _, _ = seed_module()
    m = read_module(data)
    rec0 = fmt.HEADER_SIZE  # input "a": dtype, rank, name length, 0; dims 4, 4; "a\0" + pad
    rec3 = rec0 + 3 * 16  # output "out0"
    cmd0 = m.commands_offset
    table = m.constant_table_offset
    cases: dict[str, tuple[bytes, Status]] = {}
    image = Status.IMAGE

    def patch(name: str, offset: int, fmt_: str, value: int, status: Status = image) -> None:
        d = bytearray(data)
        struct.pack_into(fmt_, d, offset, value)
        cases[name] = (_with_crc(d), status)

    patch("arena size in header too small", 16, "<I", 127)
    patch("arena size in header larger", 16, "<I", 1 << 20)
    patch("too many inputs", 20, "<H", 200)
    patch("io counts huge", 20, "<I", 0xFFFFFFFF)
    patch("command count too high", 24, "<H", 5)
    patch("constant count too high", 26, "<H", 3)
    patch("unknown dtype", rec0, "<B", fmt.DTYPE_MAX + 1)
    patch("another dtype", rec0, "<B", fmt.DType.i32)
    patch("huge rank", rec0 + 1, "<B", 255)
    patch("name not NUL-terminated", rec0 + 4 + 8 + 1, "<B", ord("x"))
    patch("dims do not make the byte size", rec0 + 4, "<I", 5)
    patch("dims overflow 32 bits", rec0 + 4, "<I", 1 << 30)
    patch("an output the image sizes otherwise", rec3 + 4, "<I", 16)  # 4x4 f32 is 64
    patch("17 bindings", cmd0 + 2, "<H", 17)
    patch("sixteen bindings", cmd0 + 2, "<H", 16)
    patch("another dispatch", cmd0, "<H", ADD)
    patch("a branch", cmd0, "<H", MUL | fmt.BRANCH_FLAG)
    patch("a binding fewer", cmd0 + 2, "<H", 2)
    b0 = cmd0 + 4  # command 0, binding 0: input 0 (one word)
    patch("input index out of range", b0, "<I", 2 << 30 | 3)
    patch("output index out of range", b0, "<I", 3 << 30 | 2)
    patch("another input of the same size", b0, "<I", 2 << 30 | 2)
    patch("output where an input was", b0, "<I", 3 << 30 | 0)
    b2 = b0 + 8  # command 0, binding 2: arena 0, 64 bytes (two words)
    patch("arena offset out of range", b2, "<I", 72)
    patch("arena offset misaligned", b2, "<I", 4)
    patch("arena size overflow", b2 + 4, "<I", 0xFFFFFFFF)
    patch("arena end past arena", b2 + 4, "<I", 129)
    patch("arena binding of zero bytes at the end", b2, "<Q", 0 << 32 | 128)
    patch("result into a constant", b2, "<I", 1 << 30 | 0)
    patch("arena offset moved inside the arena", b2, "<I", 64)
    c1 = cmd0 + 2 * 20 + 4 + 4  # command 2, binding 1: constant 0 (two words)
    patch("constant past pool", c1, "<I", 1 << 30 | (len(data) - m.header.pool_offset))
    patch("constant size past pool", c1 + 4, "<I", 10_000)
    # The constant table is metadata for tools: only its CRC guards it.
    patch("constant table offset", table, "<I", 64, Status.OK)
    patch("constant table dtype", table + 8, "<B", fmt.DType.i8, Status.OK)
    return cases


@pytest.mark.parametrize("case", sorted(_crafted_cases()))
def test_crafted_module_is_rejected_in_c_and_python(lib: ctypes.CDLL, case: str) -> None:
    bad, status = _crafted_cases()[case]
    image = contract_of(seed_module()[0])
    # Against the image as built: rejected, by its structure or its layout CRC.
    got = _load(lib, bad, image)
    assert got == Status.IMAGE
    with pytest.raises(ModuleFormatError) as e:
        read_module(bad, image=image)
    assert e.value.status == got
    # With the layout CRC matched as a crafted module could: the structure decides.
    crafted = colliding(image, bad)
    assert _load(lib, bad, crafted) == status
    if status == Status.OK:
        read_module(bad, image=crafted, loader_only=True)
    else:
        with pytest.raises(ModuleFormatError) as e:
            read_module(bad, image=crafted)
        assert e.value.status == status


# The crafted modules whose structure is invalid in itself: what the C loader of version
# 1 range-checked. No image can pin them (the compiler checks what it pins), so the
# loader's compare with the image's copy rejects them without checking them again. The
# others are valid structures, only not the image's.
INVALID_STRUCTURE = {
    "17 bindings", "arena end past arena", "arena offset misaligned",
    "arena offset out of range", "arena size in header too small", "arena size overflow",
    "constant count too high", "constant past pool", "constant size past pool",
    "dims overflow 32 bits", "huge rank", "input index out of range", "io counts huge",
    "name not NUL-terminated", "output index out of range", "sixteen bindings",
    "too many inputs", "unknown dtype",
}


@pytest.mark.parametrize("case", sorted(_crafted_cases()))
def test_no_image_pins_an_invalid_structure(case: str) -> None:
    bad, _ = _crafted_cases()[case]
    if case in INVALID_STRUCTURE:
        with pytest.raises(ModuleFormatError) as e:
            read_module(bad)
        assert e.value.status == Status.MALFORMED
        with pytest.raises(ValueError, match="cannot pin an invalid module"):
            ImageContract.of_module(bad, X86_64)
    else:  # a valid structure: an image could be built for it, and not run another
        assert ImageContract.of_module(bad, X86_64).pinned != contract_of(
            seed_module()[0]).pinned or case.startswith("constant table")


def test_boundary_values_in_every_field_agree_with_the_reader(lib: ctypes.CDLL) -> None:
    """The structural sweep on the host, status by status: every aligned field before
    the pool set to each boundary value (CRC fixed), against the image as built and
    against one whose layout CRC collides, in C and in the reader."""
    for data in (seed_module()[0], fused_module()):
        image = contract_of(data)
        h = read_module(data).header
        for at in range(fmt.CRC_START, h.pool_offset, 4):
            for value in (0, 1, 16, h.arena_size, len(data), 0x7FFFFFFF, 0xFFFFFFFF, 1 << 30):
                bad = bytearray(data)
                struct.pack_into("<I", bad, at, value)
                bad = _with_crc(bad)
                for img in (image, colliding(image, bad)):
                    got = _load(lib, bad, img)
                    try:
                        read_module(bad, image=img, loader_only=True)
                        want = Status.OK
                    except ModuleFormatError as e:
                        want = e.status
                    assert got == want, f"field {at} = {value:#x}: C {got}, reader {want}"
                    if img is image:
                        assert got != Status.OK or bad == data, f"field {at} = {value:#x}"


def test_crc_matches_zlib(lib: ctypes.CDLL) -> None:
    rng = random.Random(3)
    for n in (0, 1, 7, 64, 1000):
        blob = bytes(rng.randrange(256) for _ in range(n))
        assert lib.mrt_crc32(0, blob, n) == zlib.crc32(blob)
        # chaining like zlib.crc32(b, zlib.crc32(a))
        assert lib.mrt_crc32(lib.mrt_crc32(0, blob[:3], min(3, n)), blob[3:], max(0, n - 3)) == (
            zlib.crc32(blob)
        )


def test_mem_functions(lib: ctypes.CDLL) -> None:
    for name in ("memcpy", "memmove", "memset"):
        getattr(lib, name).restype = ctypes.c_void_p
    lib.memcmp.restype = ctypes.c_int
    buf = (ctypes.c_uint8 * 64)(*range(64))
    base = ctypes.addressof(buf)
    assert lib.memcpy(ctypes.c_void_p(base + 32), ctypes.c_void_p(base + 1), 13) == base + 32
    assert bytes(buf[32:45]) == bytes(range(1, 14))
    buf[:] = list(range(64))
    lib.memcpy(ctypes.c_void_p(base + 32), ctypes.c_void_p(base), 24)  # aligned word path
    assert bytes(buf[32:56]) == bytes(range(24))
    buf[:] = list(range(64))
    lib.memmove(ctypes.c_void_p(base + 3), ctypes.c_void_p(base), 20)  # overlap, dst after src
    assert bytes(buf[3:23]) == bytes(range(20))
    buf[:] = list(range(64))
    lib.memmove(ctypes.c_void_p(base), ctypes.c_void_p(base + 3), 20)  # overlap, dst before
    assert bytes(buf[0:20]) == bytes(range(3, 23))
    buf[:] = list(range(64))
    assert lib.memset(ctypes.c_void_p(base + 5), 0x1AB, 7) == base + 5
    assert bytes(buf[5:12]) == b"\xab" * 7 and buf[12] == 12
    assert lib.memcmp(b"abc", b"abd", 3) < 0 < lib.memcmp(b"\xff", b"\x01", 1)
    assert lib.memcmp(b"abc", b"abd", 2) == 0
    assert lib.memcmp(b"", b"", 0) == 0


@pytest.mark.parametrize("flags", [["-O2"], ["-O3", "-ffreestanding"], ["-Os"]])
def test_mem_functions_do_not_call_themselves(build: Path, flags: list[str]) -> None:
    """Even without -fno-builtin, the no_builtin attribute keeps clang's loop-idiom
    pass from turning the copy loops back into memcpy/memset calls."""
    obj = build / f"mem{'_'.join(flags)}.o"
    _compile([*flags, "-fPIC", "-c", str(CORE / "mem.c"), "-o", str(obj)])
    nm = subprocess.run(["llvm-nm", "-u", str(obj)], capture_output=True, text=True)
    if nm.returncode != 0:
        pytest.skip("llvm-nm is not installed")
    assert not re.search(r"\bmem(cpy|set|move|cmp)\b", nm.stdout), nm.stdout


def test_core_needs_no_libc(build: Path) -> None:
    """The core links with nothing but itself: the only undefined symbol across the
    objects is none, including memcpy/memset for struct copies."""
    out = build / "nolibc"
    out.mkdir(exist_ok=True)
    objs = _core_objects(out, ["-fPIC", "-O2"])
    nm = subprocess.run(["llvm-nm", "-u", *objs], capture_output=True, text=True)
    if nm.returncode != 0:
        pytest.skip("llvm-nm is not installed")
    undefined = {ln.split()[-1] for ln in nm.stdout.splitlines() if ln.strip().startswith("U")}
    assert undefined <= {"mrt_crc32"}, undefined


def _asan_works(build: Path) -> str | None:
    """None if clang can build and run an ASan + UBSan program here, else why not."""
    probe = build / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    try:
        _compile(["-fsanitize=address,undefined", str(probe), "-o", str(build / "probe")])
        subprocess.run([str(build / "probe")], check=True, capture_output=True)
    except subprocess.CalledProcessError as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
        return (err or "")[-300:]
    return None


@pytest.mark.parametrize("which", ["seed", "fused", "compiled"])
def test_flips_truncations_and_mutations_under_asan(build: Path, which: str,
                                                    tmp_path: Path) -> None:
    """Not skipped when ASan is missing: `make setup` installs clang's sanitizer
    runtime (libclang-rt-14-dev), and a missing one is a broken set-up."""
    problem = _asan_works(build)
    assert problem is None, f"clang cannot build with AddressSanitizer: {problem}"
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-O1"]
    srcs = ["module.c", "executor.c", "crc32.c"]  # mem.c would replace ASan's interceptors
    asan_dir = build / "asan"
    asan_dir.mkdir(exist_ok=True)
    objs = _core_objects(asan_dir, san, srcs)
    exe = build / "fuzz"
    if not exe.exists():
        harness = str(build / "harness.c")
        _compile([*san, f"-I{INCLUDE}", "-DFUZZ_MAIN", harness, *objs, "-o", str(exe)])
    if which == "compiled":
        data, image = compiled_module(tmp_path)
    else:
        data = seed_module()[0] if which == "seed" else fused_module()
        image = contract_of(data)
    mod = build / f"{which}.mrt"
    mod.write_bytes(data)
    img = build / f"{which}.image"
    img.write_bytes(struct.pack(f"<{len(image_words(image))}I", *image_words(image)))
    proc = subprocess.run(
        [str(exe), str(mod), str(img), "20000"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok"), proc.stdout
    loaded = int(proc.stdout.split()[-2])  # the original, then every mutant that loaded
    # A module with constants loads again after edits to its pool and, with the layout
    # CRC matched, its constant table: the run path sees mutants. A module without (the
    # fused one) is all structure, which the image pins: no mutant of it loads.
    assert loaded > (1 if which != "fused" else 0), proc.stdout


def test_thumb_code_size_budget(build: Path) -> None:
    """The runtime in the seed firmware (module checks, command walk, CRC) must stay
    small: the whole firmware has to fit in 1 KB (bench/seed_size.py). Compiled as
    firmware compiles them for cortex-m4 (-Oz)."""
    from toolchain.link.build import compile_sources
    from toolchain.target import load_target

    sources = [CORE / name for name in ("module.c", "executor.c", "crc32.c")]
    objs = compile_sources(load_target("cortex-m4"), sources, build / "thumb",
                           extra_flags=["-Werror", "-Wall"])
    nm = subprocess.run(["llvm-nm", "-S", "--defined-only", *map(str, objs)],
                        capture_output=True, text=True)
    if nm.returncode != 0:
        pytest.skip("llvm-nm is not installed")
    sizes: dict[str, int] = {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            sizes[parts[3]] = sizes.get(parts[3], 0) + int(parts[1], 16)
    # Measured (clang 14, -Oz): validate 152, execute 124, crc 40 (Thumb assembly; 48
    # from C); the argument-checking load 28 and run 58 around them; io_info 108. With
    # v1 modules and the per-binding contract (load walked records and range-checked
    # bindings) load was 672, run 140.
    harness = ("mrt_module_validate", "mrt_module_execute", "mrt_crc32")
    assert sum(sizes[f] for f in harness) <= 320, sizes
    assert sizes["mrt_module_load"] + sizes["mrt_module_run"] <= 100, sizes
    assert sizes["mrt_module_io_info"] <= 120, sizes
