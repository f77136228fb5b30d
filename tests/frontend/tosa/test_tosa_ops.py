"""Every TOSA op on the numpy reference against the specification's semantics: the
graph the converters build, run op by op, gives what tosa_spec.py (the spec's
pseudo-code in plain Python) gives, bit for bit for integers, within isclose for floats
(tosa_cases.py says which tolerance and why)."""

from __future__ import annotations

import re

import pytest
from tosa_cases import CASES
from tosa_programs import assert_output, run_reference


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_op_matches_the_specification(case) -> None:
    got = run_reference([case])
    assert len(got) == len(case.expected)
    for i, (g, w) in enumerate(zip(got, case.expected)):
        assert_output(case, g, w, f" output {i}")


def test_every_converter_has_a_case() -> None:
    """Each op the importer compiles is exercised by a case here or in the pre-1.0 test."""
    from test_tosa_legacy import LEGACY

    from toolchain.frontend.tosa import CONVERTERS, UNSUPPORTED

    text = "\n".join(line for case in CASES for line in case.body) + LEGACY
    used = set(re.findall(r"\btosa\.(\w+)", text))
    compiled = {name for name in CONVERTERS if name not in UNSUPPORTED}
    assert sorted(n for n in compiled if n.removeprefix("tosa.") not in used) == []
