"""minirt from Python: ``minirt.build(model, board).run(inputs)``.

The names are toolchain.api's (README.md, "Python API"): build, reference, Build, Run,
SizeReport, Profile, and the errors Error, InputError, FirmwareError, Mismatch,
BudgetExceeded, Timeout.
"""

from toolchain.api import (
    BudgetExceeded,
    Build,
    Error,
    FirmwareError,
    InputError,
    Mismatch,
    Profile,
    Run,
    SizeReport,
    Timeout,
    build,
    reference,
)

__all__ = ["Build", "BudgetExceeded", "Error", "FirmwareError", "InputError", "Mismatch",
           "Profile", "Run", "SizeReport", "Timeout", "build", "reference"]
