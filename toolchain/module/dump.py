"""Human-readable dump of a .mrt module, in the spirit of iree-dump-module.

dump_module(data) prints the header, a section table with offsets and sizes, the I/O
signature, the command list and the constant table. The CRC is checked and reported
rather than enforced, so a module whose bytes were damaged can still be inspected as
long as its structure parses.
"""

from __future__ import annotations

from toolchain.module import format as fmt
from toolchain.module.pack import QuantParams, TensorSig
from toolchain.module.reader import Module, read_module

_RULE = "//===" + "-" * 70 + "===//"


def _banner(title: str) -> list[str]:
    return [_RULE, f"// {title}", _RULE]


def _tensor(t: TensorSig) -> str:
    shape = "x".join(str(d) for d in t.shape)
    typ = f"tensor<{shape}x{t.dtype.name}>" if t.shape else f"tensor<{t.dtype.name}>"
    return f"{t.name:<16} {typ:<24} {t.byte_size} bytes"


def _sections(m: Module) -> list[tuple[str, int, int]]:
    """(name, offset, size) of every region, in file order, padding included."""
    h = m.header
    table_end = m.constant_table_offset + m.constant_table_size
    return [
        ("header", 0, fmt.HEADER_SIZE),
        ("signature", m.signature_offset, h.signature_size),
        ("commands", m.commands_offset, h.commands_size),
        ("constant_table", m.constant_table_offset, m.constant_table_size),
        ("padding", table_end, h.pool_offset - table_end),
        ("constant_pool", h.pool_offset, h.total_size - h.pool_offset),
    ]


def dump_module(data: bytes) -> str:
    """Returns a text dump; raises ModuleFormatError if the structure does not parse."""
    m = read_module(data, check_crc=False, strict=False)
    h = m.header
    out = _banner(f"module: {m.target}, version {h.version}, {h.total_size} bytes")
    out += [
        "",
        "Header:",
        f"  magic          {h.magic.decode('ascii', 'replace')}",
        f"  version        {h.version}",
        f"  target         {m.target} (id {h.target_id})",
        f"  crc32          0x{h.crc32:08x} ({'ok' if m.crc_ok else 'MISMATCH'})",
        f"  total size     {h.total_size} bytes",
        f"  arena size     {h.arena_size} bytes",
        f"  dispatches     {m.dispatch_count} (highest ordinal + 1)",
        "",
        "Sections:",
        f"  {'name':<16} {'offset':>8} {'size':>8}",
    ]
    out += [f"  {name:<16} 0x{off:06x} {size:>8}" for name, off, size in _sections(m)]

    out += ["", *_banner(f"Signature: {len(m.inputs)} inputs, {len(m.outputs)} outputs")]
    out += [f"  input  {i:<3} {_tensor(t)}" for i, t in enumerate(m.inputs)]
    out += [f"  output {i:<3} {_tensor(t)}" for i, t in enumerate(m.outputs)]

    out += ["", *_banner(f"Commands: {len(m.commands)}")]
    for i, cmd in enumerate(m.commands):
        kind = "branch  " if cmd.ordinal & fmt.BRANCH_FLAG else "dispatch"
        out.append(f"  #{i:<3} {kind} {cmd.ordinal & ~fmt.BRANCH_FLAG:<4} "
                   f"({len(cmd.bindings)} bindings)")
        out += [f"         [{j}] {b}" for j, b in enumerate(cmd.bindings)]

    pool_bytes = sum(c.size for c in m.constants)
    out += ["", *_banner(f"Constants: {len(m.constants)} ({pool_bytes} data bytes)")]
    for i, c in enumerate(m.constants):
        elems = c.size // c.storage_dtype.itemsize * c.storage_dtype.per_byte
        typ = c.dtype.name
        if c.storage_dtype != c.dtype:
            typ += f" stored as {c.storage_dtype.name}"
        line = f"  #{i:<3} pool+0x{c.offset:06x} {c.size:>8} bytes  {elems:>7} x {typ}"
        if isinstance(c.params, QuantParams):
            q = c.params
            axis = "per-tensor" if q.axis == -1 else f"axis {q.axis}"
            line += f"  quant {axis}, {len(q.scales)} scale(s)"
            if len(q.scales) == 1:
                line += f" scale={q.scales[0]:.6g} zp={q.zero_points[0]}"
            else:
                # Every scale, a line of eight at a time: they are what the engineer
                # checks when a channel's accuracy looks off.
                zps = "all 0" if not any(q.zero_points) else ", ".join(map(str, q.zero_points))
                line += f" (zero points {zps}), scales {min(q.scales):.6g}..{max(q.scales):.6g}"
                out.append(line)
                for k in range(0, len(q.scales), 8):
                    chunk = ", ".join(f"{v:.6g}" for v in q.scales[k:k + 8])
                    out.append(f"{'':8}scales[{k}:{min(k + 8, len(q.scales))}] = {chunk}")
                continue
        elif c.params_size:
            line += f"  params {c.params_size} bytes @ pool+0x{c.params_offset:06x}"
        out.append(line)
    if m.constants:
        wasted = h.total_size - h.pool_offset - pool_bytes
        out.append(f"  pool: {h.total_size - h.pool_offset} bytes, {wasted} alignment/params")
    out.append("")
    return "\n".join(out)
