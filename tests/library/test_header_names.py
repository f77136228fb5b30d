"""The library header's table of layers (library/sources.py): the model's names as
comments, which no name can end early."""

from __future__ import annotations

import re

from toolchain.library.sources import LibrarySpec, header_source


def _spec(layers) -> LibrarySpec:
    return LibrarySpec(name="net", model="net.tflite", board="cortex-m4", target="cortex-m4",
                       triple="thumbv7em-none-eabihf", cflags=("-mcpu=cortex-m4",),
                       inputs=(), outputs=(), arena_size=64, arena="static", hosted=False,
                       quantization={}, layers=layers)


def test_layers_are_listed_in_comments() -> None:
    header = header_source(_spec((
        ("conv1", "convolution", 1000, 288, ("model/conv1/Conv2D", "model/relu1/Relu")),
        ("evil", "add", 0, 0, ("a */ int x; /* b\nnext line",)),
    )))
    assert re.search(r"^ \*    0  conv1  convolution +1,000 MACs +288 B$", header, re.M)
    assert " *    0  model/relu1/Relu" in header
    # A name holding '*/', '/*' or a newline stays inside its comment, on one line.
    assert "a * / int x; / * b next line" in header
    body = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    assert "int x" not in body and "model/" not in body


def test_no_layers_no_table() -> None:
    assert "dispatches of one inference" not in header_source(_spec(()))
