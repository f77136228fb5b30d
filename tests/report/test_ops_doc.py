"""docs/ops.md is what the op tables give (regenerate: python -m toolchain.report.ops)."""

from __future__ import annotations

from toolchain.report import ops
from toolchain.small_floats import FORMATS as SMALL_FLOATS


def test_ops_doc_is_up_to_date() -> None:
    # One generation (it measures element types: a few seconds), checked three ways.
    text = ops.render(all_sections := ops.sections())
    assert ops.DOC.read_text() == text, "docs/ops.md is stale: python -m toolchain.report.ops"
    by_title = {s.title: {r.op: r for r in s.rows} for s in all_sections}
    stablehlo = by_title["StableHLO"]
    # Every supported op with a sample takes at least one type: a sample that no longer
    # imports (or an op that broke) shows here, not as an empty cell.
    broken = [r.op for r in stablehlo.values() if r.supported
              and r.types == "none of the sampled types"]
    assert broken == []
    # Reasons come from the spec table; ops that could work but lack a converter say so.
    assert "collective" in stablehlo["all_reduce"].why_not
    assert all(r.why_not == ops.NOT_YET for r in stablehlo.values()
               if not r.supported and ops.SPEC_OPS[r.op].reason is None)
    assert by_title["StableHLO"]["is_finite"].types.split() == ["f16", "bf16", "f32", "f64",
                                                                *SMALL_FLOATS]


def test_check_mode_reports_a_stale_file(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(ops, "sections", lambda: [])  # no need to measure again
    stale = tmp_path / "ops.md"
    stale.write_text("# old\n")
    assert ops.main(["--check", "-o", str(stale)]) == 1
    assert "stale" in capsys.readouterr().err
    assert ops.main(["-o", str(stale)]) == 0
    assert ops.main(["--check", "-o", str(stale)]) == 0
