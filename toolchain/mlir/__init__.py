"""MLIR text: lexer, parser to a generic operation tree, and generic-form printer."""

from toolchain.mlir.ir import Block, Operation, Region, Value
from toolchain.mlir.parser import parse_file, parse_text

__all__ = ["Block", "Operation", "Region", "Value", "parse_file", "parse_text"]
