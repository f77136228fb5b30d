"""minirt: compiles small neural-network models into bare-metal firmware."""

__version__ = "0.1.0"
