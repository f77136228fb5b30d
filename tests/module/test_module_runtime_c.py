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
const mrt_dispatch_fn_t h_dispatches[] = {mul_f32, add_f32, muladd_f32, sum16_f32};

static _Alignas(16) uint8_t module_buf[1 << 16];
static _Alignas(16) uint8_t arena_buf[1 << 12];
mrt_module_t h_module;

int h_load(const void *data, uint32_t size, uint32_t target, uint32_t misalign) {
  if (size + misalign > sizeof module_buf) return -1;
  const uint8_t *src = data;
  for (uint32_t i = 0; i < size; ++i) module_buf[misalign + i] = src[i];
  return mrt_module_load(module_buf + misalign, size, target, &h_module);
}

int h_run(void *const *inputs, void *const *outputs, uint32_t dispatch_count,
          uint32_t arena_misalign) {
  return mrt_module_run(&h_module, h_dispatches, dispatch_count, inputs, outputs,
                        arena_buf + arena_misalign, sizeof arena_buf - arena_misalign);
}

#ifdef FUZZ_MAIN
/* Every single-byte corruption must be rejected; every CRC-fixed mutation must load
 * or fail cleanly, and when it loads, run over exactly-sized heap buffers. ASan turns
 * any stray access into a crash. */
static void noop(void *const *b) { (void)b; }
static mrt_dispatch_fn_t noops[64];

static void run_exact(const mrt_module_t *m) {
  if (m->arena_size > (1u << 20)) return;
  void *arena = NULL;
  if (m->arena_size && posix_memalign(&arena, 16, m->arena_size)) abort();
  void *io[2][64];
  uint32_t counts[2] = {m->input_count, m->output_count};
  if (counts[0] > 64 || counts[1] > 64) { free(arena); return; }
  int ok = 1;
  for (int k = 0; k < 2; ++k)
    for (uint32_t i = 0; i < counts[k]; ++i) {
      mrt_tensor_info_t info;
      if (mrt_module_io_info(m, k, i, &info) != MRT_OK) abort();
      volatile char c = info.name[0]; (void)c;  /* name readable */
      for (uint32_t d = 0; d < info.rank; ++d) { volatile uint32_t v = info.dims[d]; (void)v; }
      io[k][i] = info.byte_size <= (1u << 20) ? malloc(info.byte_size ? info.byte_size : 1) : NULL;
      if (!io[k][i]) ok = 0;
    }
  void **in = malloc(sizeof(void *) * (counts[0] ? counts[0] : 1));
  void **out = malloc(sizeof(void *) * (counts[1] ? counts[1] : 1));
  for (uint32_t i = 0; i < counts[0]; ++i) in[i] = io[0][i];
  for (uint32_t i = 0; i < counts[1]; ++i) out[i] = io[1][i];
  if (ok) {
    int st = mrt_module_run(m, noops, 64, in, out, arena, m->arena_size);
    if (st != MRT_OK && st != MRT_ERR_DISPATCH) { printf("run status %d\n", st); abort(); }
  }
  for (int k = 0; k < 2; ++k) for (uint32_t i = 0; i < counts[k]; ++i) free(io[k][i]);
  free(in); free(out); free(arena);
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static uint8_t orig[1 << 16];
  uint32_t size = (uint32_t)fread(orig, 1, sizeof orig, f);
  fclose(f);
  uint32_t target = (uint32_t)atoi(argv[2]);
  long mutations = atol(argv[3]);
  for (int i = 0; i < 64; ++i) noops[i] = noop;
  uint8_t *buf = NULL;
  if (posix_memalign((void **)&buf, 16, size)) return 2;
  mrt_module_t m;

  for (uint32_t i = 0; i < size; ++i) {
    static const uint8_t masks[] = {0x01, 0x80, 0xFF, 0x10};
    for (unsigned k = 0; k < sizeof masks; ++k) {
      for (uint32_t j = 0; j < size; ++j) buf[j] = orig[j];
      buf[i] ^= masks[k];
      int st = mrt_module_load(buf, size, target, &m);
      if (st == MRT_OK) { printf("flip at %u mask %u accepted\n", i, masks[k]); return 1; }
    }
  }
  /* Truncations: every shorter length fails, reading nothing past the end. */
  for (uint32_t n = 0; n < size; ++n) {
    uint8_t *t = NULL;
    if (posix_memalign((void **)&t, 16, n ? n : 16)) return 2;
    for (uint32_t j = 0; j < n; ++j) t[j] = orig[j];
    if (mrt_module_load(t, n, target, &m) == MRT_OK) {
      printf("truncated %u accepted\n", n);
      return 1;
    }
    free(t);
  }

  uint64_t rng = 0x9E3779B97F4A7C15ull;
  long loaded = 0;
  for (long it = 0; it < mutations; ++it) {
    for (uint32_t j = 0; j < size; ++j) buf[j] = orig[j];
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    int edits = 1 + (int)(rng % 4);
    for (int e = 0; e < edits; ++e) {
      rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
      uint32_t at = 16 + (uint32_t)(rng % (size - 16));
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
    uint32_t crc = mrt_crc32(0, buf + 16, size - 16);
    buf[12] = (uint8_t)crc; buf[13] = (uint8_t)(crc >> 8);
    buf[14] = (uint8_t)(crc >> 16); buf[15] = (uint8_t)(crc >> 24);
    int st = mrt_module_load(buf, size, target, &m);
    if (st == MRT_OK) { ++loaded; run_exact(&m); }
    else if (st != MRT_ERR_MALFORMED && st != MRT_ERR_TRUNCATED) {
      printf("mutation %ld: status %d\n", it, st);
      return 1;
    }
  }
  printf("ok %ld loaded\n", loaded);
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
    _fields_ = [
        ("base", ctypes.c_void_p),
        ("size", ctypes.c_uint32),
        ("input_count", ctypes.c_uint32),
        ("output_count", ctypes.c_uint32),
        ("command_count", ctypes.c_uint32),
        ("arena_size", ctypes.c_uint32),
        ("dispatch_count", ctypes.c_uint32),
        ("signature", ctypes.c_void_p),
        ("commands", ctypes.c_void_p),
        ("constants", ctypes.c_void_p),
        ("constants_size", ctypes.c_uint32),
    ]


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
    lib.h_load.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]
    lib.h_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]
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


def _load(lib: ctypes.CDLL, data: bytes, target: int = X86_64, misalign: int = 0) -> int:
    return lib.h_load(data, len(data), target, misalign)


def _ptrs(arrays: list[np.ndarray]) -> ctypes.Array:
    return (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])


def _run(lib: ctypes.CDLL, ins: list[np.ndarray], outs: list[np.ndarray], ndisp: int = 4) -> int:
    return lib.h_run(_ptrs(ins), _ptrs(outs), ndisp, 0)


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


def _inputs(n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(n)]


def test_seed_module_runs_and_matches_numpy(lib: ctypes.CDLL) -> None:
    data, w, bias = seed_module()
    assert _load(lib, data) == Status.OK
    m = _module_struct(lib)
    assert (m.input_count, m.output_count, m.command_count) == (3, 2, 4)
    assert (m.arena_size, m.dispatch_count, m.size) == (128, 2, len(data))
    a, b, c = _inputs()
    out0, out1 = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    assert _run(lib, [a, b, c], [out0, out1]) == Status.OK
    np.testing.assert_array_equal(out0, a * b + c)
    np.testing.assert_array_equal(out1, a * w + bias)


def test_fused_command_with_no_arena(lib: ctypes.CDLL) -> None:
    assert _load(lib, fused_module()) == Status.OK
    assert _module_struct(lib).arena_size == 0
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


def test_load_argument_errors(lib: ctypes.CDLL) -> None:
    data, _, _ = seed_module()
    assert _load(lib, data, misalign=4) == Status.ARGUMENT  # base must be 16-aligned
    assert _module_struct(lib).base is None  # out_module zeroed on failure
    assert _load(lib, data[:47]) == Status.TRUNCATED
    assert _load(lib, data[:-1]) == Status.TRUNCATED
    assert _load(lib, data + b"\0" * 16) == Status.MALFORMED  # size must match exactly
    assert _load(lib, data, target=fmt.target_id("cortex-m4")) == Status.TARGET
    assert lib.mrt_module_load(None, 64, X86_64, None) == Status.ARGUMENT


def test_run_argument_errors(lib: ctypes.CDLL) -> None:
    data, _, _ = seed_module()
    assert _load(lib, data) == Status.OK
    ins = _inputs()
    outs = [np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)]
    assert _run(lib, ins, outs, ndisp=1) == Status.DISPATCH  # ordinal 1 is used
    assert lib.h_run(None, _ptrs(outs), 4, 0) == Status.ARGUMENT
    assert lib.h_run(_ptrs(ins), _ptrs(outs), 4, 8) == Status.ARGUMENT  # arena misaligned
    outs[0][:] = 7
    assert _run(lib, ins, outs, ndisp=1) == Status.DISPATCH
    assert (outs[0] == 7).all(), "nothing may run when the arguments are rejected"


def test_every_single_byte_flip_is_rejected_with_the_readers_status(lib: ctypes.CDLL) -> None:
    """Header bytes fail their exact-match check; everything else fails the CRC."""
    for data in (seed_module()[0], fused_module()):
        for i in range(len(data)):
            for mask in (0x01, 0x80, 0xFF):
                bad = bytearray(data)
                bad[i] ^= mask
                status = _load(lib, bytes(bad))
                assert status != Status.OK, f"flip at {i} accepted"
                with pytest.raises(ModuleFormatError) as e:
                    read_module(bytes(bad), target="x86-64")
                assert e.value.status == status, f"byte {i}: C {status} vs reader"
                if i >= fmt.CRC_START:
                    assert status in (Status.CRC, Status.TRUNCATED, Status.MALFORMED)


def _with_crc(data: bytearray) -> bytes:
    struct.pack_into("<I", data, fmt.CRC_FIELD_OFFSET, zlib.crc32(data[fmt.CRC_START :]))
    return bytes(data)


def _crafted_cases() -> dict[str, bytes]:
    """Modules with a valid CRC whose structure the loader must reject."""
    data, _, _ = seed_module()
    m = read_module(data)
    sig = fmt.HEADER_SIZE
    rec0 = sig + 4 * 5  # after the five byte sizes
    cmd0 = m.commands_offset
    cases: dict[str, bytes] = {}

    def patch(name: str, offset: int, fmt_: str, value: int) -> None:
        d = bytearray(data)
        struct.pack_into(fmt_, d, offset, value)
        cases[name] = _with_crc(d)

    patch("pool offset misaligned", 44, "<I", m.header.pool_offset + 4)
    patch("pool offset past end", 44, "<I", m.header.pool_offset + 256)
    patch("pool offset inside header", 44, "<I", 32)
    patch("too many inputs", 24, "<H", 200)
    patch("io sizes run into pool", 24, "<H", 0xFFFF)
    patch("unknown dtype", rec0, "<B", fmt.DTYPE_MAX + 1)
    patch("huge rank", rec0 + 1, "<B", 255)
    patch("name not NUL-terminated", rec0 + 1 + 3 + 8 + 1, "<B", ord("x"))
    patch("command count too high", 28, "<I", 5)
    patch("command count huge", 28, "<I", 0xFFFFFFFF)
    patch("17 bindings", cmd0 + 2, "<H", 17)
    patch("bindings past pool", cmd0 + 2, "<H", 16)
    b0 = cmd0 + 4  # command 0, binding 0: input 0
    patch("input index out of range", b0, "<I", 2 << 30 | 3)
    patch("output index out of range", b0, "<I", 3 << 30 | 2)
    patch("input binding too large", b0 + 4, "<I", 65)
    b2 = b0 + 16  # command 0, binding 2: arena 0, 64 bytes
    patch("arena offset out of range", b2, "<I", 65)
    patch("arena size overflow", b2 + 4, "<I", 0xFFFFFFFF)
    patch("arena end past arena", b2 + 4, "<I", 129)
    patch("arena size in header too small", 20, "<I", 127)
    c1 = cmd0 + 2 * (4 + 3 * 8) + 4 + 8  # command 2, binding 1: constant 0
    patch("constant past pool", c1, "<I", 1 << 30 | (len(data) - m.header.pool_offset))
    patch("constant size past pool", c1 + 4, "<I", 10_000)
    return cases


@pytest.mark.parametrize("case", sorted(_crafted_cases()))
def test_crafted_module_is_malformed_in_c_and_python(lib: ctypes.CDLL, case: str) -> None:
    bad = _crafted_cases()[case]
    assert _load(lib, bad) == Status.MALFORMED
    with pytest.raises(ModuleFormatError) as e:
        read_module(bad)
    assert e.value.status == Status.MALFORMED


def test_crc_matches_zlib(lib: ctypes.CDLL) -> None:
    rng = random.Random(3)
    for n in (0, 1, 7, 64, 1000):
        blob = bytes(rng.randrange(256) for _ in range(n))
        assert lib.mrt_crc32(0, blob, n) == zlib.crc32(blob)
        # chaining like zlib.crc32(b, zlib.crc32(a))
        assert lib.mrt_crc32(lib.mrt_crc32(0, blob[:3], min(3, n)), blob[3:], max(0, n - 3)) == (
            zlib.crc32(blob)
        )


def test_crc_nibble_table_variant(build: Path) -> None:
    src = build / "crc_main.c"
    src.write_text(
        '#include <stdio.h>\n#include "minirt.h"\n'
        "int main(void) { static unsigned char b[4096];\n"
        "  for (int i = 0; i < 4096; ++i) b[i] = (unsigned char)(i * 7 + i / 13);\n"
        '  printf("%u %u\\n", mrt_crc32(0, b, 4096), mrt_crc32(0, b, 5)); return 0; }\n'
    )
    exe = build / "crc_nibble"
    crc_c = str(CORE / "crc32.c")
    _compile([f"-I{INCLUDE}", "-O2", "-DMRT_CRC32_NIBBLE_TABLE", str(src), crc_c, "-o", str(exe)])
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    blob = bytes((i * 7 + i // 13) & 0xFF for i in range(4096))
    assert [int(x) for x in got] == [zlib.crc32(blob), zlib.crc32(blob[:5])]


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


def _asan_works(build: Path) -> bool:
    probe = build / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    try:
        _compile(["-fsanitize=address,undefined", str(probe), "-o", str(build / "probe")])
        subprocess.run([str(build / "probe")], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        return False
    return True


@pytest.mark.parametrize("which", ["seed", "fused"])
def test_flips_truncations_and_mutations_under_asan(build: Path, which: str) -> None:
    if not _asan_works(build):
        pytest.skip("AddressSanitizer is not available")
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-O1"]
    srcs = ["module.c", "executor.c", "crc32.c"]  # mem.c would replace ASan's interceptors
    asan_dir = build / "asan"
    asan_dir.mkdir(exist_ok=True)
    objs = _core_objects(asan_dir, san, srcs)
    exe = build / "fuzz"
    harness = str(build / "harness.c")
    _compile([*san, f"-I{INCLUDE}", "-DFUZZ_MAIN", harness, *objs, "-o", str(exe)])
    data = seed_module()[0] if which == "seed" else fused_module()
    mod = build / f"{which}.mrt"
    mod.write_bytes(data)
    proc = subprocess.run(
        [str(exe), str(mod), str(X86_64), "20000"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok")


THUMB = ["--target=thumbv7em-none-eabihf", "-mcpu=cortex-m4", "-Os", "-ffunction-sections"]
THUMB += ["-fdata-sections", "-ffreestanding", "-fno-builtin", "-std=c11", f"-I{INCLUDE}"]


def test_thumb_code_size_budget(build: Path) -> None:
    """load + run + crc must stay small: the whole seed firmware has to fit in 2 KB."""
    out = build / "thumb"
    out.mkdir(exist_ok=True)
    try:
        objs = []
        for name in ("module.c", "executor.c", "crc32.c", "mem.c"):
            obj = out / name.replace(".c", ".o")
            _compile([*THUMB, "-Werror", "-Wall", "-c", str(CORE / name), "-o", str(obj)])
            objs.append(str(obj))
    except subprocess.CalledProcessError as e:
        pytest.skip(f"no Thumb target in this clang: {e.stderr[:200]}")
    nm = subprocess.run(["llvm-nm", "-S", "--defined-only", *objs], capture_output=True, text=True)
    if nm.returncode != 0:
        pytest.skip("llvm-nm is not installed")
    sizes = {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            sizes[parts[3]] = int(parts[1], 16)
    # Measured at -Os: load 538, run 204, crc 64 bytes (clang 14).
    core = sum(sizes[f] for f in ("mrt_module_load", "mrt_module_run", "mrt_crc32"))
    assert core <= 850, sizes
    assert sizes["mrt_module_io_info"] <= 200, sizes
