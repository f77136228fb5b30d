"""Graph -> Program: fused dispatches in order, every buffer placed at build time."""

from toolchain.schedule.program import Program, schedule

__all__ = ["Program", "schedule"]
