"""Conformance runners: ONNX's backend node tests and the StableHLO interpreter's tests
run through minirt (the numpy reference, then a deterministic sample on boards under
QEMU), each case judged pass / refused (a one-line error) / wrong / crash (a traceback).
`bench/conformance.py` (`make conformance`) writes bench/results/conformance.{json,md};
tests/testing/test_conformance.py runs a fast sample in `make test`.
"""
