"""Operations of MLIR text: SSA values (with uses before their definition), the generic
op form, regions and blocks with their labels and successors, and a whole file with its
alias definitions and resource section.

`Parser` is the complete grammar; which ops have a pretty (custom) form is not its
business. A bare op name is handed to `custom_op`, the dispatcher over the dialects'
op tables that the entry point passes in (`parser.py`, `custom_syntax.py`): the
dialect files build on this class, so it never imports them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from toolchain.diagnostics import CompileError, SourceFile
from toolchain.mlir.inherent import inherent_attributes
from toolchain.mlir.ir import Block, Operation, Region, Value
from toolchain.mlir.lexer import Token
from toolchain.mlir.literals import MAX_INT_DIGITS, array_from_bytes, unescape
from toolchain.mlir.locations import location_name
from toolchain.mlir.type_attribute_parser import AttributeSyntax, TypeAttributeParser
from toolchain.types import FunctionType

_RESULT_GROUP = re.compile(r":([0-9]+)")
_USE_INDEX = re.compile(r"#([0-9]+)")


def _no_custom_syntax(p: Parser) -> Operation:
    """The dispatcher of a parser given no op tables: every pretty op is unknown."""
    tok = p.lex.next()
    raise CompileError(f"unknown operation '{tok.text}'", p.lex.loc(tok.start))


class Parser(TypeAttributeParser):
    """Recursive-descent parser over one MLIR source file."""

    def __init__(self, source: SourceFile,
                 custom_op: Callable[[Parser], Operation] = _no_custom_syntax,
                 attribute_syntax: Mapping[str, AttributeSyntax] | None = None):
        super().__init__(source, attribute_syntax)
        self.custom_op = custom_op
        self.scopes: list[dict[str, list[Value]]] = [{}]
        self.resources: dict[str, bytes] = {}
        # Block labels of each open region: label -> (block, token of its first use,
        # whether its header was seen). Successors may name blocks defined further down.
        self.labels: list[dict[str, list[Any]]] = []
        # Values used before their definition (MLIR allows it: a block may use what a
        # dominating block printed further down defines), by name.
        self.forward: dict[str, list[_ForwardRef]] = {}

    # ------------------------------------------------------------------ values and ops

    def define(self, name: str, values: list[Value], offset: int) -> list[Value]:
        """Binds `%name` to `values` in the innermost scope and returns them. Earlier
        uses of the name (forward references) are pointed at them when the file has
        been read (`_replace_forward_refs`)."""
        scope = self.scopes[-1]
        if name in scope:
            raise self.lex.error(f"redefinition of SSA value '%{name}'", offset)
        if name in self.forward:
            self._resolve_forward(name, values)
        scope[name] = values
        return values

    def _resolve_forward(self, name: str, values: list[Value]) -> None:
        depth = len(self.scopes)
        scope = self.scopes[-1]
        for ref in self.forward[name]:
            # Only a use inside the scope being defined in (or inside regions nested
            # there) sees this definition; a use in a closed sibling region does not.
            if ref.target is not None or len(ref.scopes) < depth or \
                    ref.scopes[depth - 1] is not scope:
                continue
            if ref.index >= len(values):
                raise self.error(f"'%{name}' has only {len(values)} results", ref.tok)
            value = values[ref.index]
            if ref.value.type is not None and ref.value.type != value.type:
                raise self.error(f"'%{name}' is used as '{ref.value.type}' here but defined "
                                 f"as '{value.type}'", ref.tok)
            ref.target = value

    def parse_operand(self) -> Value:
        """`%name` or `%name#k`, resolved against the enclosing scopes; a name not
        defined yet is a forward reference, resolved when its definition is parsed."""
        tok = self.peek()
        if tok.kind != "value":
            raise self.error(f"expected SSA value, found {self._describe(tok)}", tok)
        self.lex.next()
        name = tok.text[1:]
        index = 0
        m = self.lex.match_raw(_USE_INDEX, skip_ws=False)
        if m:
            if len(m.group(1)) > MAX_INT_DIGITS:
                raise self.error("result number is too large", tok)
            index = int(m.group(1))
        for scope in reversed(self.scopes):
            if name in scope:
                values = scope[name]
                if index >= len(values):
                    raise self.error(f"'%{name}' has only {len(values)} results", tok)
                return values[index]
        refs = self.forward.setdefault(name, [])
        for ref in refs:  # a later use inside the first use's scope shares its placeholder
            if (ref.index == index and ref.target is None and len(ref.scopes) <= len(self.scopes)
                    and all(a is b for a, b in zip(ref.scopes, self.scopes))):
                return ref.value
        placeholder = Value(None, name)  # type: ignore[arg-type]  (typed by its first use)
        refs.append(_ForwardRef(placeholder, name, index, list(self.scopes), tok))
        return placeholder

    def parse_operands_until(self, close: str) -> tuple[list[Value], list[Token]]:
        """`%a, %b` up to (and consuming) `close`; also each operand's token, so a type
        mismatch can point at the operand that has the wrong type."""
        toks: list[Token] = []

        def operand() -> Value:
            toks.append(self.peek())
            return self.parse_operand()

        return self.parse_comma_list(operand, close), toks

    def parse_operand_list(self) -> list[Value]:
        if self.peek().kind != "value":
            return []
        return self.parse_comma_list(self.parse_operand)

    def parse_module_text(self) -> Operation:
        """A whole file: alias definitions, ops, and an optional resource section."""
        top: list[Operation] = []
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                break
            if tok.kind in ("hash", "bang") and self._is_alias_def():
                self._parse_alias_def()
                continue
            if tok.kind == "punct" and tok.text == "{-#":
                self.parse_resource_section()
                continue
            top.append(self.parse_operation())
        self._resolve_resources()
        if len(top) == 1 and top[0].name == "builtin.module":
            module = top[0]
        else:
            module = Operation("builtin.module", [], [], regions=[Region([Block(ops=top)])])
            # An empty file still gets a location, so errors about it name the file.
            module.loc = top[0].loc if top else self.lex.loc(0)
        self._replace_forward_refs(module)
        # Resolved at the end: JAX defines its location aliases after their uses.
        for op in module.walk():
            if op.loc_text:
                op.loc_name = location_name(op.loc_text, self.attr_aliases)
        return module

    def earliest(self, error: CompileError) -> CompileError:
        """`error`, or the use of an undefined value before it when the error is at
        the end of the file: nothing further can define that value, and errors are
        reported in source order (a truncated file names the undefined value first)."""
        at_end = error.loc is not None and not self.lex.text[error.loc.offset:].strip()
        if not at_end:
            return error
        for ref in sorted((r for rs in self.forward.values() for r in rs),
                          key=lambda r: r.tok.start):
            if ref.target is None and ref.tok.start < error.loc.offset:
                return self.error(f"use of undefined value '%{ref.name}'", ref.tok)
        return error

    def _replace_forward_refs(self, module: Operation) -> None:
        """Points every use of a forward reference at the value it names."""
        if not self.forward:
            return
        refs = sorted((r for rs in self.forward.values() for r in rs), key=lambda r: r.tok.start)
        for ref in refs:
            if ref.target is None:
                raise self.error(f"use of undefined value '%{ref.name}'", ref.tok)
        targets = {id(ref.value): ref.target for ref in refs}
        for op in module.walk():
            if any(id(v) in targets for v in op.operands):
                op.operands = [targets.get(id(v), v) for v in op.operands]

    def _is_alias_def(self) -> bool:
        save = self.lex.pos
        self.lex.next()
        is_def = self.peek().text == "="
        self.lex.pos = save
        self.lex._peeked = None
        return is_def

    def _parse_alias_def(self) -> None:
        tok = self.lex.next()
        self.parse_punct("=")
        if tok.kind == "hash":
            self.attr_aliases[tok.text[1:]] = self.parse_attribute()
        else:
            self.type_aliases[tok.text[1:]] = self.parse_type()

    def parse_resource_section(self) -> None:
        """`{-# dialect_resources: { builtin: { name: "0x..." } } #-}`."""
        self.parse_punct("{-#")

        def group() -> None:
            key = self.parse_bare("resource group").text
            self.parse_punct(":")
            self.parse_punct("{")

            def dialect() -> None:
                self.parse_bare("dialect name")
                self.parse_punct(":")
                self.parse_punct("{")

                def blob() -> None:
                    name_tok = self.peek()
                    if name_tok.kind not in ("bare", "string"):
                        raise self.error("expected resource name", name_tok)
                    self.lex.next()
                    self.parse_punct(":")
                    data_tok = self.peek()
                    if data_tok.kind != "string":
                        raise self.error("expected hex string for resource blob", data_tok)
                    self.lex.next()
                    hex_text = unescape(data_tok.text)
                    if not re.fullmatch(r"0x(?:[0-9a-fA-F]{2})*", hex_text):
                        raise self.error("malformed hex in resource blob", data_tok)
                    if key == "dialect_resources":
                        self.resources[name_tok.text.strip('"')] = bytes.fromhex(hex_text[2:])

                self.parse_comma_list(blob, "}")

            self.parse_comma_list(dialect, "}")

        self.parse_comma_list(group, "#-}")

    def _resolve_resources(self) -> None:
        for attr, offset in self.pending_resources:
            blob = self.resources.get(attr.resource or "")
            if blob is None:
                raise self.lex.error(f"unknown dense_resource '{attr.resource}'", offset)
            # The first 4 bytes of a blob are its alignment, not data.
            attr.array = array_from_bytes(blob[4:], attr.type,
                                           lambda m, o=offset: self.lex.error(m, o))

    def parse_operation(self) -> Operation:
        start = self.peek()
        results: list[tuple[str, int, int]] = []
        if start.kind == "value":
            def result() -> tuple[str, int, int]:
                tok = self.lex.next()
                if tok.kind != "value":
                    raise self.error("expected result name", tok)
                m = self.lex.match_raw(_RESULT_GROUP, skip_ws=False)
                if m and len(m.group(1)) > MAX_INT_DIGITS:
                    raise self.error("result count is too large", tok)
                return tok.text[1:], int(m.group(1)) if m else 1, tok.start

            results = self.parse_comma_list(result)
            self.parse_punct("=", "after result names")
        name_tok = self.peek()
        with self.nested(name_tok):
            if name_tok.kind == "string":
                op = self.parse_generic_operation()
            elif name_tok.kind == "bare":
                op = self.custom_op(self)
            else:
                raise self.error(f"expected operation, found {self._describe(name_tok)}",
                                 name_tok)
        op.loc = self.lex.loc(name_tok.start)
        op.loc_text = self.skip_optional_loc()
        _normalize_inherent(op)
        want = sum(n for _, n, _ in results)
        if results and want != len(op.results):
            raise self.lex.error(
                f"operation '{op.name}' defines {len(op.results)} results "
                f"but {want} names were given", start.start)
        i = 0
        for rname, n, off in results:
            vals = self.define(rname, op.results[i : i + n], off)
            for k, v in enumerate(vals):
                v.name = rname if n == 1 else f"{rname}#{k}"
            i += n
        return op

    def parse_generic_operation(self) -> Operation:
        """`"d.op"(%a)[^bb1] <{props}> ({regions}) {attrs} : (T) -> T`."""
        name_tok = self.lex.next()
        name = unescape(name_tok.text)
        return self.parse_generic_body(name)

    def parse_generic_body(self, name: str) -> Operation:
        """Everything of a generic op after its name; also what some ops print after
        their bare name (`stablehlo.constant() <{value = ...}> : () -> T`)."""
        self.parse_punct("(", "to open the operand list")
        operands, operand_toks = self.parse_operands_until(")")
        successors: list[Block] = []
        successor_args: list[Value] = []  # the older `[^bb1(%a : T)]`: typed right there
        if self.parse_optional_punct("["):
            successors = self.parse_comma_list(
                lambda: self.parse_successor(successor_args), "]")
        props: dict = {}
        if self.parse_optional_punct("<"):
            props = dict(self.parse_attr_dict().items)
            self.parse_punct(">", "to close the properties")
        regions: list[Region] = []
        if self.peek().kind == "punct" and self.peek().text == "(":
            self.lex.next()
            regions = self.parse_comma_list(self.parse_region, ")")
        attrs = self.parse_optional_attr_dict()
        results = self.parse_functional_type(operands, operand_toks)
        op = Operation(name, operands + successor_args, results, attrs, props, regions)
        op.successors = successors
        return op

    def parse_successor(self, operands: list[Value] | None = None,
                        toks: list[Token] | None = None) -> Block:
        """`^bb1`, or `^bb1(%a, %b : T1, T2)` whose arguments are appended to
        `operands` (MLIR keeps a successor's arguments among the op's operands)."""
        tok = self.peek()
        if tok.kind != "block":
            raise self.error(f"expected block name, found {self._describe(tok)}", tok)
        if not self.labels:
            raise self.error("a branch must be inside a region", tok)
        self.lex.next()
        entry = self.labels[-1].get(tok.text)
        if entry is None:
            entry = self.labels[-1][tok.text] = [Block(label=tok.text), tok, False]
        if self.peek().text == "(" and operands is not None:
            self.lex.next()
            args, arg_toks = [], []
            if not self.parse_optional_punct(")"):
                args, arg_toks = self.parse_operands_until(":")
                ty_tok = self.peek()
                types = self.parse_comma_list(self.parse_type, ")")
                self.check_operand_types(args, types, arg_toks, ty_tok)
            operands.extend(args)
            if toks is not None:
                toks.extend(arg_toks)
        return entry[0]

    def parse_functional_type(self, operands: list[Value], toks: list[Token],
                              whose: str = "the operation's") -> list[Value]:
        """`: (T1, T2) -> (R1, R2)`, checked against `operands` (their tokens locate a
        mismatch); returns the results. `whose` names the type in the error when the
        colon is missing."""
        self.parse_punct(":", f"before {whose} type")
        ty_tok = self.peek()
        fty = self.parse_type("function type")
        if not isinstance(fty, FunctionType):
            raise self.error("expected function type '(...) -> ...'", ty_tok)
        self.check_operand_types(operands, list(fty.inputs), toks, ty_tok)
        return [Value(t) for t in fty.results]

    def check_operand_types(self, operands: list[Value], types: list, toks: list[Token],
                            ty_tok: Token) -> None:
        if len(operands) != len(types):
            raise self.error(f"operation has {len(operands)} operands but its type lists "
                             f"{len(types)}", ty_tok)
        for i, (v, t) in enumerate(zip(operands, types)):
            if v.type is None:  # a forward reference: its use gives its type
                v.type = t
            elif v.type != t:
                raise self.error(f"operand {i} ('%{v.name}') has type '{v.type}' but the "
                                 f"operation's type says '{t}'", toks[i] if toks else ty_tok)

    def parse_region(self) -> Region:
        open_tok = self.parse_punct("{", "to open a region")
        with self.nested(open_tok):
            self.scopes.append({})
            self.labels.append({})
            blocks: list[Block] = []
            block = Block()
            while True:
                tok = self.peek()
                if tok.kind == "punct" and tok.text == "}":
                    self.lex.next()
                    break
                if tok.kind == "eof":
                    raise self.error("unexpected end of file: region is not closed", tok)
                if tok.kind == "block":
                    if block.ops or blocks or block.label:
                        blocks.append(block)
                    block = self.parse_block_header()
                    continue
                block.ops.append(self.parse_operation())
            if block.ops or block.label or not blocks:
                blocks.append(block)
            for _, use, defined in self.labels.pop().values():
                if not defined:
                    raise self.error(f"reference to an undefined block '{use.text}'", use)
            self.scopes.pop()
        return Region(blocks)

    def parse_block_header(self) -> Block:
        tok = self.lex.next()
        entry = self.labels[-1].get(tok.text) if self.labels else None
        if entry is not None and entry[2]:
            raise self.error(f"redefinition of block '{tok.text}'", tok)
        if entry is None:
            entry = [Block(label=tok.text), tok, False]
            if self.labels:
                self.labels[-1][tok.text] = entry
        entry[2] = True
        args: list[Value] = []
        if self.parse_optional_punct("("):
            args = self.parse_comma_list(self.parse_block_arg, ")")
        self.parse_punct(":", "after block label")
        block = entry[0]
        block.args = args
        return block

    def parse_block_arg(self) -> Value:
        tok = self.peek()
        if tok.kind != "value":
            raise self.error(f"expected block argument, found {self._describe(tok)}", tok)
        self.lex.next()
        self.parse_punct(":", "after block argument name")
        v = Value(self.parse_type(), tok.text[1:])
        self.skip_optional_loc()
        return self.define(v.name, [v], tok.start)[0]


class _ForwardRef:
    """A use of `%name#index` before its definition (see Parser.parse_operand)."""

    def __init__(self, value: Value, name: str, index: int, scopes: list, tok: Token):
        self.value = value
        self.name = name
        self.index = index
        self.scopes = scopes
        self.tok = tok
        self.target: Value | None = None


def _normalize_inherent(op: Operation) -> None:
    """Moves the op's inherent attributes from the attribute dictionary to its
    properties, as MLIR does when it reads a registered op: `{comparison_direction =
    ...}` and `<{comparison_direction = ...}>` are one op."""
    if not op.attributes:
        return
    names = inherent_attributes(op.name)
    if names and any(k in names for k in op.attributes):
        for key in [k for k in op.attributes if k in names]:
            op.properties.setdefault(key, op.attributes.pop(key))
