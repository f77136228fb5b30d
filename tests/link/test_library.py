"""`minirt-build --emit library`: the archive holds the runtime core, the dispatch code and
the module and exports only the entry; the example application in
examples/user-firmware (its own main, start-up and output) links it and computes the
reference's outputs on cortex-m4 (clang + lld and arm-none-eabi-gcc, Make and CMake, both
arena modes) and riscv32 under QEMU, and on x86-64 as a hosted program."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from toolchain.cli import build as build_cli
from toolchain.library import LIBRARY_RUNTIME_PARTS, build_library
from toolchain.link.build import runtime_sources
from toolchain.loader import load_graph
from toolchain.reference import run_graph
from toolchain.target import load_board

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "user-firmware"
MODEL = EXAMPLE / "sensor_net.mlir"
SEED = ROOT / "examples" / "seed.mlir"
# The project's float comparison (README, minirt-run --check): numpy.isclose with these.
RTOL, ATOL = 1e-5, 1e-6

# How each platform of the example runs: QEMU machine arguments (None: natively).
QEMU = {
    "cortex-m4": ["qemu-system-arm", "-M", "mps2-an386"],
    "riscv32": ["qemu-system-riscv32", "-M", "virt", "-bios", "none"],
    "hosted": None,
}
BOARD_OF = {"cortex-m4": "cortex-m4", "riscv32": "riscv32", "hosted": "x86-64"}


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory):
    """build(platform, arena) -> the library directory, built once per pair."""
    root = tmp_path_factory.mktemp("libs")
    cache: dict[tuple[str, str], Path] = {}

    def build(platform: str, arena: str = "static") -> Path:
        _need("clang", "ld.lld", "llvm-objcopy", "llvm-ar")
        key = (platform, arena)
        if key not in cache:
            out = root / f"{platform}-{arena}"
            build_library(load_graph(MODEL), load_board(BOARD_OF[platform]), out,
                          name="sensor_net", model=MODEL.name, arena=arena,
                          log=lambda *_: None)
            cache[key] = out
        return cache[key]

    return build


def _expected() -> np.ndarray:
    """The reference's outputs for app.c's inputs: ((i * 7) % 16 - 8) * 0.125."""
    x = ((np.arange(16) * 7 % 16) - 8).astype(np.float32).reshape(1, 16) * np.float32(0.125)
    return run_graph(load_graph(MODEL), [x])[0]


def _make(lib: Path, out: Path, platform: str, toolchain: str = "clang") -> Path:
    _need("make")
    proc = subprocess.run(["make", "-s", "-C", str(EXAMPLE), f"PLATFORM={platform}",
                           f"TOOLCHAIN={toolchain}", f"LIB={lib}", f"OUT={out}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr, proc.stderr  # the library links cleanly
    return out / "app.elf"


def _run(app: Path, platform: str) -> tuple[int, dict[str, str]]:
    """Runs the application; returns its exit status and its output lines by key."""
    qemu = QEMU[platform]
    if qemu is None:
        cmd = [str(app)]
    else:
        _need(qemu[0])
        cmd = [*qemu, "-display", "none", "-monitor", "none", "-serial", "stdio",
               "-semihosting-config", "enable=on,target=native", "-kernel", str(app)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    lines = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    return proc.returncode, lines


def _floats(hex_words: str) -> np.ndarray:
    return np.array([struct.unpack("<f", struct.pack("<I", int(w, 16)))[0]
                     for w in hex_words.split()], dtype=np.float32)


def _check(status: int, lines: dict[str, str], arena: str = "static") -> None:
    assert status == 0, lines
    assert lines["init"] == "0" and lines["run"] == "0"
    got = _floats(lines["out0"])
    want = _expected().reshape(-1)
    assert np.allclose(got, want, rtol=RTOL, atol=ATOL), (got, want)
    assert lines["null"] == "1"  # MRT_ERR_ARGUMENT
    if arena == "caller":
        assert lines["misaligned"] == "1"


# --------------------------------------------------------------------------- contents


def _nm(path: Path) -> list[tuple[str, str]]:
    out = subprocess.run(["llvm-nm", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return [(p[-2], p[-1]) for p in (line.split() for line in out.splitlines()) if len(p) >= 2]


@pytest.mark.parametrize("arena", ["static", "caller"])
def test_archive_exports_only_the_entry(libraries, arena: str) -> None:
    lib = libraries("cortex-m4", arena)
    archive = lib / "libminirt_sensor_net.a"
    members = subprocess.run(["llvm-ar", "t", str(archive)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert members == ["sensor_net.o"]
    symbols = _nm(archive)
    names = {name for _, name in symbols}
    exported = sorted(name for kind, name in symbols if kind.isupper())
    assert exported == ["sensor_net_init", "sensor_net_run"]
    assert not [name for kind, name in symbols if kind in ("U", "w", "v")]  # calls nothing
    # Runtime core, dispatch code and module inside; no start-up, no harness, no image
    # I/O buffers (the caller passes its own).
    assert {"mrt_module_load", "mrt_module_run", "mrt_image", "mrt_image_module"} <= names
    assert any(re.match(r"d\d+_", n) for n in names)
    for absent in ("main", "mrt_bench_begin", "mrt_cortex_m_reset", "mrt_cortex_m_vector_table",
                   "mrt_platform_exit", "mrt_image_input_0", "mrt_image_inputs"):
        assert absent not in names, absent
    assert ("mrt_image_arena" in names) == (arena == "static")
    assert sorted(p.name for p in lib.iterdir()) == [
        "build.json", "libminirt_sensor_net.a", "minirt.h", "minirt_sensor_net.pc", "model.mrt",
        "sensor_net.cmake", "sensor_net.h", "sensor_net.mk"]


def test_runtime_comes_from_the_shared_source_list(libraries) -> None:
    """The library is built from link.build.runtime_sources, like a firmware image, so a
    change to runtime_c reaches it: every runtime_c/core function is in the archive, and
    the target's microkernels (runtime_c/ukernel/dsp on cortex-m4), which the dispatches
    may call, and runtime_c/library (the custom operators' failure hook)."""
    sources = runtime_sources(load_board("cortex-m4"), LIBRARY_RUNTIME_PARTS)
    assert sources and {p.parent.name for p in sources} == {"core", "dsp", "library"}
    names = {name for _, name in _nm(libraries("cortex-m4") / "libminirt_sensor_net.a")}
    for fn in ("mrt_module_load", "mrt_module_io_info", "mrt_module_run", "mrt_crc32", "memcpy",
               "mrt_dot_s8_paired_1x4"):
        assert fn in names


def test_header_describes_the_model(libraries) -> None:
    header = (libraries("cortex-m4", "caller") / "sensor_net.h").read_text()
    assert "int sensor_net_run(const float *in0, float *out0, void *arena);" in header
    assert "int sensor_net_init(void);" in header
    arena = re.search(r"#define SENSOR_NET_ARENA_SIZE (\d+)", header)
    assert arena and int(arena.group(1)) > 0
    for line in ("#define SENSOR_NET_IN0_SHAPE {1, 16}", "#define SENSOR_NET_IN0_ELEMENTS 16",
                 "#define SENSOR_NET_IN0_BYTES 64", "#define SENSOR_NET_IN0_DTYPE MRT_DTYPE_F32",
                 "#define SENSOR_NET_OUT0_SHAPE {1, 4}", "#define SENSOR_NET_OUT0_BYTES 16",
                 "#define SENSOR_NET_ARENA_CALLER 1", '#include "minirt.h"'):
        assert line in header
    static = (libraries("cortex-m4") / "sensor_net.h").read_text()
    assert "int sensor_net_run(const float *in0, float *out0);" in static


# --------------------------------------------------------------------------- runs


@pytest.mark.parametrize("arena", ["static", "caller"])
def test_user_firmware_cortex_m4_clang(libraries, tmp_path: Path, arena: str) -> None:
    app = _make(libraries("cortex-m4", arena), tmp_path / "out", "cortex-m4")
    _check(*_run(app, "cortex-m4"), arena)


def test_user_firmware_cortex_m4_gcc(libraries, tmp_path: Path) -> None:
    _need("arm-none-eabi-gcc")
    app = _make(libraries("cortex-m4"), tmp_path / "out", "cortex-m4", "gcc")
    _check(*_run(app, "cortex-m4"))


def test_user_firmware_riscv32(libraries, tmp_path: Path) -> None:
    app = _make(libraries("riscv32"), tmp_path / "out", "riscv32")
    _check(*_run(app, "riscv32"))


@pytest.mark.parametrize("arena", ["static", "caller"])
def test_hosted_x86_64(libraries, tmp_path: Path, arena: str) -> None:
    _need("cc")
    app = _make(libraries("hosted", arena), tmp_path / "out", "hosted")
    _check(*_run(app, "hosted"), arena)


@pytest.mark.parametrize("platform", ["hosted", "cortex-m4"])
def test_cmake_snippet(libraries, tmp_path: Path, platform: str) -> None:
    _need("cmake", "make")
    args = ["cmake", "-S", str(EXAMPLE), "-B", str(tmp_path / "b"),
            f"-DMINIRT_LIB={libraries(platform)}", f"-DPLATFORM={platform}"]
    if platform == "cortex-m4":
        _need("arm-none-eabi-gcc")
        args.append(f"-DCMAKE_TOOLCHAIN_FILE={EXAMPLE / 'cortex-m4' / 'toolchain.cmake'}")
    for cmd in (args, ["cmake", "--build", str(tmp_path / "b")]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "warning" not in proc.stderr.lower(), proc.stderr
    _check(*_run(tmp_path / "b" / "app", platform))


def test_a_corrupted_module_is_refused_with_its_status(libraries, tmp_path: Path) -> None:
    """One byte of the module changed inside the archive: the entry reports
    MRT_ERR_CRC (6) from every call and never runs the model."""
    lib = tmp_path / "lib"
    shutil.copytree(libraries("hosted"), lib)
    archive = lib / "libminirt_sensor_net.a"
    data = bytearray(archive.read_bytes())
    module = (lib / "model.mrt").read_bytes()
    at = data.find(module)
    assert at > 0 and data.find(module, at + 1) < 0
    data[at + len(module) - 1] ^= 0x40  # the last constant byte: covered by the CRC only
    archive.write_bytes(bytes(data))
    status, lines = _run(_make(lib, tmp_path / "out", "hosted"), "hosted")
    assert lines["init"] == "6" and lines["run"] == "6" and lines["null"] == "6"
    assert status == 6


def test_two_model_libraries_link_into_one_program(libraries, tmp_path: Path) -> None:
    """Everything but the entries is local: two libraries, each with its own runtime,
    link side by side, and each computes its model."""
    _need("cc")
    seed = tmp_path / "seed"
    build_library(load_graph(SEED), load_board("x86-64"), seed, name="seed", model="seed.mlir",
                  log=lambda *_: None)
    net = libraries("hosted")
    main = tmp_path / "main.c"
    main.write_text("""
#include <stdio.h>
#include "seed.h"
#include "sensor_net.h"
int main(void) {
  float a[16], b[16], c[16], o[16], x[16] = {0}, y[4];
  for (int i = 0; i < 16; i++) { a[i] = i; b[i] = 2; c[i] = 1; }
  int s1 = seed_run(a, b, c, o), s2 = sensor_net_run(x, y);
  printf("%d %d %g %g\\n", s1, s2, o[3], y[0] + y[1] + y[2] + y[3]);
  return s1 | s2;
}
""")
    exe = tmp_path / "both"
    proc = subprocess.run(["cc", "-std=c11", "-no-pie", "-I", str(seed), "-I", str(net),
                           str(main), str(seed / "libminirt_seed.a"),
                           str(net / "libminirt_sensor_net.a"), "-o", str(exe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    s1, s2, o3, total = out.stdout.split()
    assert (out.returncode, s1, s2, float(o3)) == (0, "0", "0", 7.0)  # 3 * 2 + 1
    assert abs(float(total) - 1.0) < 1e-6  # a softmax


# --------------------------------------------------------------------------- CLI


def test_cli_writes_the_library(tmp_path: Path, capsys) -> None:
    out = tmp_path / "lib"
    rc = build_cli.main([str(MODEL), "--board", "cortex-m4", "--emit", "library",
                         "--arena", "caller", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "library 'sensor_net', arena caller" in text
    assert "entry: int sensor_net_run(const float *in0, float *out0, void *arena);" in text
    assert (out / "libminirt_sensor_net.a").is_file() and (out / "sensor_net.h").is_file()
    # Built again into the same directory: an earlier build is replaced.
    assert build_cli.main([str(MODEL), "--board", "cortex-m4", "--emit", "library",
                           "--name", "net", "-o", str(out)]) == 0
    assert (out / "libminirt_net.a").is_file() and not (out / "sensor_net.h").exists()


@pytest.mark.parametrize("args, message", [
    (["--name", "net"], "--name applies to --emit library only"),
    (["--arena", "caller"], "--arena applies to --emit library only"),
    (["--emit", "library", "--name", "2net"], "'2net' is not a C identifier (it starts with a "
                                              "digit)"),
    (["--emit", "library", "--name", "my-net"], "'my-net' is not a C identifier (it contains "
                                                "'-')"),
    (["--emit", "library", "--name", "static"], "would clash with C or the minirt runtime"),
    (["--emit", "library", "--name", "mrt_x"], "would clash with C or the minirt runtime"),
    (["--emit", "library", "--name", "_Net"], "reserved to the C implementation"),
    (["--emit", "library", "--name", "n" * 27], "at most 26"),
    (["--emit", "library", "--arena", "heap"], "invalid choice: 'heap'"),
    (["--emit", "archive"], "invalid choice: 'archive'"),
])
def test_cli_errors(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    out = tmp_path / "lib"
    rc = build_cli.main([str(MODEL), "--board", "cortex-m4", "-o", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_default_names(tmp_path: Path, capsys) -> None:
    from toolchain.library import default_name

    assert default_name("models/kws-ref.model.tflite") == "kws_ref_model"
    assert default_name("3x3 Conv.mlir") == "m_3x3_conv"
    assert default_name("Résumé.mlir") == "r_sum"
    assert len(default_name("a" * 40 + ".mlir")) == 26
    model = tmp_path / "int.mlir"
    model.write_text(SEED.read_text())
    rc = build_cli.main([str(model), "--board", "cortex-m4", "--emit", "library",
                         "-o", str(tmp_path / "lib")])
    err = capsys.readouterr().err
    assert rc == 2 and "the library name derived from int.mlir, 'int' would clash" in err
    assert "give one with --name" in err


def test_int8_io_header_carries_the_quantization(tmp_path: Path, capsys) -> None:
    """--quantize int8 --int8-io: the entry takes and gives int8, and the header says how
    to read them (the softmax output is TFLite's: scale 1/256, zero point -128)."""
    rng = np.random.default_rng(0)
    calib = tmp_path / "calib.npz"
    np.savez(calib, input_0=rng.standard_normal((8, 1, 16)).astype(np.float32))
    out = tmp_path / "lib"
    assert build_cli.main([str(MODEL), "--board", "cortex-m4", "--emit", "library",
                           "--quantize", "int8", "--calibration", str(calib), "--int8-io",
                           "-o", str(out)]) == 0
    capsys.readouterr()
    header = (out / "sensor_net.h").read_text()
    assert "int sensor_net_run(const int8_t *in0, int8_t *out0);" in header
    assert "#define SENSOR_NET_OUT0_SCALE 0.00390625f" in header
    assert "#define SENSOR_NET_OUT0_ZERO_POINT -128" in header
    assert re.search(r"#define SENSOR_NET_IN0_SCALE \d\.\d+(e-\d+)?f", header)
    assert "#define SENSOR_NET_IN0_DTYPE MRT_DTYPE_I8" in header


# --------------------------------------------------------------------------- README


def _readme_block(language: str) -> str:
    """The README's one fenced ```language block of the library section, verbatim."""
    section = (ROOT / "README.md").read_text().split("## The model as a library", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = re.findall(rf"^```{language}\n(.*?)^```$", section, re.M | re.S)
    assert len(blocks) == 1, (language, blocks)
    return blocks[0]


# The user's side of the README's main.c on the MPS2 board: the input app.c uses, and
# the output lines _run parses, through the example's start-up (board_puts).
BOARD_C = r"""
#include <stdint.h>
#include "board.h"
float read_sensor(int i) { return (float)((i * 7) % 16 - 8) * 0.125f; }
void report(int status, const float *out, int elements) {
  char text[10] = "run 0\n";
  text[4] = (char)('0' + status);
  board_puts(text);
  board_puts("out0");
  for (int i = 0; i < elements; i++) {
    union { float f; uint32_t u; } bits = {.f = out[i]};
    text[0] = ' ';
    for (int k = 0; k < 8; k++) text[1 + k] = "0123456789abcdef"[(bits.u >> (28 - 4 * k)) & 15u];
    text[9] = '\0';
    board_puts(text);
  }
  board_puts("\n");
}
"""
M4 = EXAMPLE / "cortex-m4"
# The compilers of a cortex-m4 firmware, and the flags of the user's own start-up and
# linker script: nothing of the target's ABI, which must come from the library's files.
CC = {"gcc": ["arm-none-eabi-gcc"], "clang": ["clang", "--target=thumbv7em-none-eabihf"]}
USER_CFLAGS = ["-std=c11", "-O2", "-ffreestanding"]
USER_LDFLAGS = {"gcc": ["-nostdlib", "-nostartfiles", "-Wl,-z,noexecstack", f"-T{M4 / 'link.ld'}"],
                "clang": ["-nostdlib", "-fuse-ld=lld", f"-T{M4 / 'link.ld'}"]}
USER_LDLIBS = {"gcc": ["-lgcc"], "clang": []}


def _readme_project(libraries, tmp_path: Path, compiler: str) -> Path:
    """A firmware project as the README's reader has it: lib/ from --emit library, the
    README's main.c, the board's own board.c and start-up."""
    _need(CC[compiler][0], "qemu-system-arm")
    if compiler == "clang":
        _need("ld.lld")
    project = tmp_path / "fw"
    project.mkdir()
    shutil.copytree(libraries("cortex-m4"), project / "lib")
    (project / "main.c").write_text(_readme_block("c"))
    (project / "board.c").write_text(BOARD_C)
    shutil.copyfile(EXAMPLE / "board.h", project / "board.h")
    (project / "startup.c").write_text((M4 / "startup.c").read_text()
                                       .replace('"../board.h"', '"board.h"'))
    return project


def _check_readme_run(elf: Path) -> None:
    status, lines = _run(elf, "cortex-m4")
    assert status == 0 and lines["run"] == "0", lines
    got, want = _floats(lines["out0"]), _expected().reshape(-1)
    assert np.allclose(got, want, rtol=RTOL, atol=ATOL), (got, want)


def _ok(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, " ".join(cmd) + "\n" + proc.stdout + proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    return proc.stdout


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_readme_make_snippet(libraries, tmp_path: Path, compiler: str) -> None:
    """The README's Make lines, pasted after the user's own compiler, objects and link
    flags, build a firmware that links (once "uses VFP register arguments") and runs."""
    _need("make")
    project = _readme_project(libraries, tmp_path, compiler)
    user = (f"CC := {' '.join(CC[compiler])}\nCFLAGS := {' '.join(USER_CFLAGS)}\n"
            f"LDFLAGS := {' '.join(USER_LDFLAGS[compiler])}\n"
            f"LDLIBS := {' '.join(USER_LDLIBS[compiler])}\n"
            "OBJS := main.o board.o startup.o\n")
    (project / "Makefile").write_text(user + _readme_block("make"))
    _ok(["make", "-s"], project)
    _check_readme_run(project / "firmware.elf")


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_readme_cmake_snippet(libraries, tmp_path: Path, compiler: str) -> None:
    """The README's CMake lines: the imported target alone gives the firmware its
    compile and link flags."""
    _need("cmake", "make")
    project = _readme_project(libraries, tmp_path, compiler)
    target = ("" if compiler == "gcc" else
              "set(CMAKE_C_COMPILER_TARGET thumbv7em-none-eabihf)\n"
              "set(CMAKE_EXE_LINKER_FLAGS_INIT -fuse-ld=lld)\n")
    (project / "toolchain.cmake").write_text(
        "set(CMAKE_SYSTEM_NAME Generic)\nset(CMAKE_SYSTEM_PROCESSOR arm)\n"
        f"set(CMAKE_C_COMPILER {CC[compiler][0]})\n{target}"
        "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)\n")
    link = " ".join(f for f in USER_LDFLAGS[compiler] + USER_LDLIBS[compiler]
                    if f != "-fuse-ld=lld")
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(firmware C)\n"
        "add_executable(firmware main.c board.c startup.c)\n"
        f"target_compile_options(firmware PRIVATE {' '.join(USER_CFLAGS)})\n"
        f"target_link_options(firmware PRIVATE {link})\n" + _readme_block("cmake"))
    build = project / "build"
    _ok(["cmake", "-S", str(project), "-B", str(build),
         f"-DCMAKE_TOOLCHAIN_FILE={project / 'toolchain.cmake'}"], project)
    _ok(["cmake", "--build", str(build)], project)
    _check_readme_run(build / "firmware")


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_readme_pkg_config(libraries, tmp_path: Path, compiler: str) -> None:
    """The README's pkg-config line gives the include directory, the ABI flags and the
    archive: with the user's own flags, one compile-and-link command."""
    _need("pkg-config")
    project = _readme_project(libraries, tmp_path, compiler)
    line = _readme_block("sh").strip()
    assert line.startswith("PKG_CONFIG_PATH=lib pkg-config ")
    flags = _ok(["sh", "-c", line], project).split()
    assert "-Ilib" in flags and "-mfloat-abi=hard" in flags, flags
    _ok([*CC[compiler], *USER_CFLAGS, "main.c", "board.c", "startup.c", *flags,
         *USER_LDFLAGS[compiler], *USER_LDLIBS[compiler], "-o", "firmware.elf"], project)
    _check_readme_run(project / "firmware.elf")
