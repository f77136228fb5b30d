"""The cache of LLVM's objects (toolchain/codegen/object_cache.py): a hit gives the bytes
LLVM makes, without running it; other IR text, another target or another LLVM misses;
damaged entries are ignored; the least recently used go past the size limit; and a
cache that is off only means compiling."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from llvmlite import ir

from toolchain.codegen import object_cache
from toolchain.codegen.object_cache import CodegenCache
from toolchain.codegen.target_machine import TargetInfo

M4 = TargetInfo.load("cortex-m4")


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(root))
    monkeypatch.delenv("MINIRT_CACHE", raising=False)
    return root


@pytest.fixture
def llvm_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The IR texts LLVM optimises (TargetInfo.compile still runs)."""
    runs: list[str] = []
    real = TargetInfo.compile

    def counting(self, module):
        runs.append(self.ir_text(module))
        return real(self, module)

    monkeypatch.setattr(TargetInfo, "compile", counting)
    return runs


def _module(scale: float = 3.0) -> ir.Module:
    """A dispatch-like function: out[i] = in[i] * scale over 64 floats."""
    module = ir.Module(name="dispatch")
    f32, i32, ptr = ir.FloatType(), ir.IntType(32), ir.PointerType()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr]), "d0_scale")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(i32)
    i.add_incoming(ir.Constant(i32, 0), entry)
    x = b.load(b.gep(fn.args[0], [i], source_etype=f32), typ=f32)
    b.store(b.fmul(x, ir.Constant(f32, scale)), b.gep(fn.args[1], [i], source_etype=f32))
    nxt = b.add(i, ir.Constant(i32, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, ir.Constant(i32, 64)), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return module


def _entries(root: Path) -> list[Path]:
    return sorted((root / "codegen").rglob("*.o"))


def test_hit_gives_llvms_bytes_without_running_it(cache_dir: Path, llvm_runs: list,
                                                  monkeypatch) -> None:
    first = M4.emit_object(_module())
    assert len(llvm_runs) == 1 and len(_entries(cache_dir)) == 1
    again = M4.emit_object(_module())
    assert again == first and len(llvm_runs) == 1  # from the cache
    monkeypatch.setenv("MINIRT_CACHE", "off")
    assert M4.emit_object(_module()) == first  # what LLVM makes, made again
    assert len(llvm_runs) == 2


def test_other_ir_or_target_misses(cache_dir: Path, llvm_runs: list) -> None:
    base = M4.emit_object(_module())
    other = M4.emit_object(_module(scale=5.0))
    riscv = TargetInfo.load("riscv32").emit_object(_module())
    assert len(llvm_runs) == 3 and len(_entries(cache_dir)) == 3
    assert len({base, other, riscv}) == 3


def test_the_key_covers_target_machine_pipeline_and_llvm(monkeypatch) -> None:
    text = M4.ir_text(_module())
    key = CodegenCache.key(M4.codegen_recipe, text)
    assert CodegenCache.key(M4.codegen_recipe, text) == key  # stable
    assert CodegenCache.key(TargetInfo.load("cortex-m7").codegen_recipe, text) != key
    assert CodegenCache.key(M4.codegen_recipe, text + "\n") != key
    monkeypatch.setattr(object_cache, "llvm_identity", lambda: "llvmlite 0\0llvm 99")
    assert CodegenCache.key(M4.codegen_recipe, text) != key
    monkeypatch.undo()
    monkeypatch.setattr(object_cache, "_pipeline_source", lambda: b"another pipeline")
    assert CodegenCache.key(M4.codegen_recipe, text) != key


def test_the_cpu_llvm_schedules_for_is_part_of_the_key(cache_dir: Path,
                                                        llvm_runs: list) -> None:
    # cortex-m7 compiles its dispatches for the Cortex-M4 scheduling model (schedule_cpu):
    # the same descriptor without it makes its target machine for cortex-m7, so an object
    # made for the one is not the other's, though triple, cpu and features are the same.
    m7 = TargetInfo.load("cortex-m7")
    assert m7.target.schedule_cpu and m7.target.schedule_cpu != m7.target.cpu
    own = TargetInfo(dataclasses.replace(m7.target, schedule_cpu=""))
    m7.emit_object(_module())
    own.emit_object(_module())
    assert len(llvm_runs) == 2 and len(_entries(cache_dir)) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_entry_is_ignored_and_replaced(damage: str, cache_dir: Path,
                                               llvm_runs: list) -> None:
    first = M4.emit_object(_module())
    [entry] = _entries(cache_dir)
    data = entry.read_bytes()
    entry.write_bytes(data[:40] if damage == "truncate"
                      else data[:-1] + bytes([data[-1] ^ 1]))
    assert M4.emit_object(_module()) == first and len(llvm_runs) == 2
    assert entry.read_bytes() == data  # written again whole
    assert M4.emit_object(_module()) == first and len(llvm_runs) == 2


def test_cache_off_writes_nothing(cache_dir: Path, llvm_runs: list, monkeypatch) -> None:
    monkeypatch.setenv("MINIRT_CACHE", "off")
    M4.emit_object(_module())
    M4.emit_object(_module())
    assert len(llvm_runs) == 2 and not (cache_dir / "codegen").exists()


def test_least_recently_used_go_past_the_limit(tmp_path: Path) -> None:
    cache = CodegenCache(tmp_path, max_bytes=3 * (32 + 100))  # three entries of 100 B
    keys = [f"{i:02x}" + "0" * 62 for i in range(4)]
    for n, key in enumerate(keys[:3]):
        cache.put(key, bytes([n]) * 100)
        os.utime(cache._path(key), ns=(n * 10**9, n * 10**9))  # put at t = 0, 1, 2 s
    assert cache.get(keys[0]) == bytes([0]) * 100  # used now: the newest
    cache.put(keys[3], b"\3" * 100)  # one too many: keys[1], the least recently used, goes
    assert [cache.get(k) is not None for k in keys] == [True, False, True, True]


def test_unwritable_cache_still_compiles(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MINIRT_CACHE_DIR", str(blocker))
    monkeypatch.delenv("MINIRT_CACHE", raising=False)
    assert M4.emit_object(_module())[:4] == b"\x7fELF"
