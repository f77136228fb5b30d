"""Transposed convolutions by output phase: the nests compute exactly the kernel's
outputs, and never read a zero that lhs_dilation inserts."""

from __future__ import annotations

from dataclasses import replace
from math import prod

import numpy as np

from toolchain.kernel.form import Load, postorder
from toolchain.kernel.interpret import run_kernel
from toolchain.loops import nest_kernel, phases_of
from toolchain.types import TensorType


def _phase_results(k, args):
    """Each phase's outputs from its own nest kernel, and where they belong."""
    for phases in phases_of(k):
        nk = nest_kernel(k, phases)
        shape = nk.domain[:nk.n_parallel]
        got = run_kernel(replace(nk, result=TensorType(shape, k.result.dtype)), args)
        where = [slice(None)] * k.n_parallel
        for p in phases:
            where[p.dim] = slice(p.residue, None, p.factor)
        yield phases, nk, got, tuple(where)


def _transposed(dispatches):
    return [(k, args) for k, args in dispatches if phases_of(k)]


def test_phases_cover_every_output_once(float_dispatches) -> None:
    found = _transposed(float_dispatches)
    # The two transposed convolutions and the base-dilated sum pooling (pad 0).
    assert len(found) == 3
    for k, args in found:
        want = run_kernel(k, args)
        seen = np.zeros(want.shape, int)
        for _, _, got, where in _phase_results(k, args):
            np.testing.assert_allclose(got, want[where], rtol=1e-5, atol=1e-6)
            seen[where] += 1
        assert (seen == 1).all()


def test_no_phase_reads_an_inserted_zero(float_dispatches) -> None:
    for k, args in _transposed(float_dispatches):
        full = prod(k.domain)
        work = 0
        for phases, nk, _, _ in _phase_results(k, args):
            guarded = [e for e in postorder(nk.body) if isinstance(e, Load) and
                       e.valid is not None]
            assert guarded == []  # the dilation test folded away
            assert all(nk.domain[p.tap] <= -(-k.domain[p.tap] // p.step) for p in phases)
            work += prod(nk.domain)
        dilation = prod(p.step for p in phases_of(k)[0])
        # About 1/dilation of the multiplies (taps do not divide evenly by the step).
        assert work <= full / dilation * 1.5, (k.name, work, full)


def test_a_phase_without_taps_is_an_empty_sum(float_dispatches) -> None:
    # transposed_strided: lhs_dilation 2 over a 3-tap kernel dim with stride 1... and
    # lhs_dilation 3 over a 2-tap one: some output residues meet no input element.
    empty = 0
    for k, args in _transposed(float_dispatches):
        want = run_kernel(k, args)
        for _, nk, got, where in _phase_results(k, args):
            if 0 in nk.domain[nk.n_parallel:]:
                empty += 1
                assert (got == 0).all() and (want[where] == 0).all()
    assert empty > 0


def test_int8_transposed_with_zero_point_padding_keeps_its_guard(int8_dispatches) -> None:
    # lhs_dilation's own padding is 0 in the int8 kernel too (the zero point is folded
    # into the bias): the phases are exact, bit for bit.
    assert _transposed(int8_dispatches)
    for k, args in _transposed(int8_dispatches):
        want = run_kernel(k, args)
        for _, _, got, where in _phase_results(k, args):
            np.testing.assert_array_equal(got, want[where])
