"""The one generic kernel form every dispatch is described in, and its lowering."""
