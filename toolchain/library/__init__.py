"""A model as a static library for the user's own firmware (`minirt-build --emit
library`): names.py picks its C name, sources.py writes its header, entry and build
snippets, build.py compiles and packs it."""

from toolchain.library.build import LIBRARY_RUNTIME_PARTS, LibraryResult, build_library
from toolchain.library.names import check_name, default_name
from toolchain.library.sources import ARENA_MODES, LibrarySpec

__all__ = ["ARENA_MODES", "LIBRARY_RUNTIME_PARTS", "LibraryResult", "LibrarySpec",
           "build_library", "check_name", "default_name"]
