"""Every build of runtime_c/core/crc32.c computes zlib.crc32, the value the packer writes:
the table-less default, the nibble table and slicing-by-4 (the boot check of modules of
4 KB and up), on the host and, compiled as firmware compiles them, on Cortex-M4,
Cortex-M0+ and RISC-V under QEMU's user-mode emulators, over random buffers of odd
lengths at every alignment and chained in pieces."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from toolchain.module import format as fmt

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "runtime_c" / "core"
INCLUDE = ROOT / "runtime_c" / "include"
CLANG = shutil.which("clang")

pytestmark = pytest.mark.skipif(CLANG is None, reason="clang is not installed")

VARIANTS = {"bitwise": [], "nibble": ["-DMRT_CRC32_NIBBLE_TABLE"], "slice4": ["-DMRT_CRC32_SLICE4"]}

# A program that prints the CRC of each case, one hex word a line. Freestanding: on the
# emulated targets it talks to QEMU's user-mode Linux through raw write/exit calls.
MAIN = r"""
#include <stdint.h>
#include "cases.h"
uint32_t mrt_crc32(uint32_t crc, const void *data, uint32_t size);
static char out[N_CASES * 9];
#if defined(__arm__)
static void sys(long n, long a, long b, long c) {
  register long r0 __asm__("r0") = a, r1 __asm__("r1") = b, r2 __asm__("r2") = c;
  register long r7 __asm__("r7") = n;
  __asm__ volatile("svc 0" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r7) : "memory");
}
enum { SYS_WRITE = 4, SYS_EXIT = 1 };
#elif defined(__riscv)
static void sys(long n, long a, long b, long c) {
  register long a0 __asm__("a0") = a, a1 __asm__("a1") = b, a2 __asm__("a2") = c;
  register long a7 __asm__("a7") = n;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
}
enum { SYS_WRITE = 64, SYS_EXIT = 93 };
#endif
static void run(void) {
  for (uint32_t i = 0; i < N_CASES; ++i) {
    const uint8_t *p = data + cases[i][0];
    /* A case with a split point is two chained calls, as zlib.crc32(b, zlib.crc32(a)). */
    uint32_t c = cases[i][2] ? mrt_crc32(mrt_crc32(0, p, cases[i][2]), p + cases[i][2],
                                         cases[i][1] - cases[i][2])
                             : mrt_crc32(0, p, cases[i][1]);
    for (int k = 0; k < 8; ++k) out[9 * i + k] = "0123456789abcdef"[(c >> (28 - 4 * k)) & 15];
    out[9 * i + 8] = '\n';
  }
}
#if defined(__arm__) || defined(__riscv)
void _start(void) {
  run();
  sys(SYS_WRITE, 1, (long)out, sizeof out);
  sys(SYS_EXIT, 0, 0, 0);
}
#else
#include <stdio.h>
int main(void) {
  run();
  fwrite(out, 1, sizeof out, stdout);
  return 0;
}
#endif
"""


def _cases(seed: int = 22) -> tuple[bytes, list[tuple[int, int, int]]]:
    """A 4 KB + 64 random buffer and (offset, length, split) cases: every alignment 0..7,
    lengths around the 16-byte blocks and the 4-byte words, odd and long ones, and
    chained halves that start the second call unaligned."""
    rng = random.Random(seed)
    data = rng.randbytes(4096 + 64)
    lengths = [0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 31, 33, 63, 64, 65, 255, 1023, 4095, 4096]
    lengths += [rng.randrange(1, 4096) | 1 for _ in range(8)]
    cases = [(off, n, 0) for off in range(8) for n in lengths]
    cases += [(off, n, rng.randrange(1, n)) for off in range(8) for n in (5, 37, 999, 4001)]
    return data, cases


def _program(out: Path, data: bytes, cases: list[tuple[int, int, int]]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    rows = ",".join(f"{{{o},{n},{s}}}" for o, n, s in cases)
    (out / "cases.h").write_text(
        f"#define N_CASES {len(cases)}u\n"
        "static const uint8_t data[] __attribute__((aligned(16))) = {"
        + ",".join(map(str, data)) + "};\n"
        f"static const uint32_t cases[][3] = {{{rows}}};\n")
    (out / "main.c").write_text(MAIN)
    return out / "main.c"


def _expected(data: bytes, cases: list[tuple[int, int, int]]) -> list[str]:
    return [f"{zlib.crc32(data[o:o + n]):08x}" for o, n, _ in cases]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_host_crc_equals_zlib(tmp_path: Path, variant: str) -> None:
    data, cases = _cases()
    main = _program(tmp_path, data, cases)
    exe = tmp_path / "crc"
    subprocess.run([CLANG, "-O2", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}",
                    *VARIANTS[variant], str(main), str(CORE / "crc32.c"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert got.split() == _expected(data, cases)


# The firmware target, the user-mode emulator that runs its code, and the variants
# whose code differs there (Thumb-2 has both assembly loops; Armv6-M the bitwise one).
EMULATED = [("cortex-m4", "qemu-arm", "bitwise"), ("cortex-m4", "qemu-arm", "slice4"),
            ("cortex-m0plus", "qemu-arm", "bitwise"), ("cortex-m0plus", "qemu-arm", "slice4"),
            ("riscv32", "qemu-riscv32", "bitwise"), ("riscv32", "qemu-riscv32", "slice4")]


@pytest.mark.parametrize(("board", "qemu", "variant"), EMULATED)
def test_firmware_crc_equals_zlib_under_qemu(tmp_path: Path, board: str, qemu: str,
                                             variant: str) -> None:
    """crc32.c compiled as minirt-build compiles the runtime for `board` (-Oz, its CPU
    flags), run by QEMU's user-mode emulator: Arm's Linux user mode runs Thumb code of
    any profile, so the Cortex-M instruction sets execute as they do on the board."""
    from toolchain.link.build import c_flags, compile_sources
    from toolchain.target import load_board

    emulator = shutil.which(qemu)
    if emulator is None:
        pytest.skip(f"{qemu} is not installed")
    target = load_board(board).target_info
    data, cases = _cases()
    main = _program(tmp_path, data, cases)
    objs = compile_sources(target, [CORE / "crc32.c", main], tmp_path / "obj",
                           extra_flags=["-Werror", *VARIANTS[variant]],
                           include_dirs=[tmp_path])
    exe = tmp_path / "crc.elf"
    flags = [f for f in c_flags(target) if f.startswith(("--target", "-m"))]
    subprocess.run([CLANG, *flags, "-nostdlib", "-static", "-fuse-ld=lld", "-Wl,-e,_start",
                    *map(str, objs), "-o", str(exe)], check=True, capture_output=True, text=True)
    got = subprocess.run([emulator, str(exe)], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    assert got.split() == _expected(data, cases)


def test_slice4_tables_are_the_crc_of_each_byte_and_zeros() -> None:
    """crc32_slice4.h, entry n of row k: the CRC register after byte n and k zero bytes
    (what zlib.crc32 computes, without its pre- and post-inversion)."""
    text = (CORE / "crc32_slice4.h").read_text()
    words = [int(w, 16) for w in re.findall(r"0x([0-9A-F]{8})u", text)]
    assert len(words) * 4 == fmt.CRC_SLICE4_TABLE_BYTES
    for k in range(4):
        for n in range(256):
            # zlib inverts the register before and after: a start of ~0 and a final
            # inversion give the register run from 0.
            register = zlib.crc32(bytes([n]) + bytes(k), 0xFFFFFFFF) ^ 0xFFFFFFFF
            assert words[256 * k + n] == register, (k, n)


def test_crc_flags_are_the_users_choice() -> None:
    """The layout only by default, with the table-less CRC (the seed firmware stays
    under 1 KB, tests/e2e/test_seed_size.py); the whole CRC bit by bit or by
    slicing-by-4 on request."""
    assert fmt.crc_cflags() == ("-DMRT_BOOT_CHECK_LAYOUT",)
    assert not fmt.BOOT_CHECKS[fmt.DEFAULT_BOOT_CHECK].full_crc
    assert fmt.crc_cflags("small") == ()
    assert fmt.crc_cflags("fast") == ("-DMRT_CRC32_SLICE4",)
    assert fmt.BOOT_CHECKS["small"].full_crc and fmt.BOOT_CHECKS["fast"].full_crc
