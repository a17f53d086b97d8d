"""The `m["…"]` notation: lexer, parser and scope resolution.

Grammar (the book's, verbatim; postfix operators are left-associative and bind tighter than `,`,
pairs are right-associative, a trailing comma is allowed at any level):

    mapping := item ("," item)* [","]
    item    := atom (("/" | "%" | "=" | "#" | "#{*}" | "#{!}" | "#{0}") number)*
    atom    := NAME | NUMBER | "{" python-expr "}" | "(" mapping ")" | "[" mapping "]"
    number  := NUMBER | "{" python-expr "}"

Names resolve in the scope that evaluates `m[...]` (locals, then globals) to an `Axis` or a `Mapping`;
`{…}` escapes evaluate a Python expression there. Every failure is a `MappingSyntaxError` with a column.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from furiosa_opt.diagnostics import user_facing
from furiosa_opt.mapping.expr import (
    Axis,
    Mapping,
    MappingError,
    Node,
    Num,
    Op,
    Pair,
    Sym,
    check_op,
)
from furiosa_opt.mapping.factors import PadKind


class MappingSyntaxError(MappingError):
    """A malformed mapping expression; names the text, the 1-based column and what was expected.

    Examples:
        >>> I = axes(I=64)
        >>> try:
        ...     m["I / "]
        ... except MappingSyntaxError as error:
        ...     print(error)
        invalid mapping `I / ` at column 5: expected a number after the operator, found the end of the mapping
          I /
              ^
    """

    def __init__(self, text: str, column: int, reason: str):
        self.text, self.column, self.reason = text, column, reason
        caret = " " * (column - 1) + "^"
        super().__init__(f"invalid mapping `{text}` at column {column}: {reason}\n  {text}\n  {caret}")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "name", "num", "op", "brace", "end"
    text: str
    col: int  # 1-based
    kind_marker: PadKind | None = None  # for "#" tokens


_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>[0-9][0-9_]*(?:\.[0-9]*)?)|(?P<op>[/%=,()\[\]#{]))"
)
_MARKERS = {"*": PadKind.TOP, "!": PadKind.BOTTOM, "0": PadKind.ZERO}


def _brace_end(text: str, start: int) -> int:
    """Index just past the `}` that closes the `{` at `start`."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    raise MappingSyntaxError(text, start + 1, "unclosed `{`")


@lru_cache(maxsize=4096)
def tokenize(text: str) -> tuple[Token, ...]:
    tokens: list[Token] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            tokens.append(Token("end", "", pos + 1))
            return tuple(tokens)
        match = _TOKEN.match(text, pos)
        if match is None:
            raise MappingSyntaxError(text, pos + 1, f"unrecognized token `{text[pos]}`")
        col = match.start(match.lastgroup) + 1
        if match.lastgroup == "num" and "." in match.group("num"):
            raise MappingSyntaxError(text, col, f"invalid number `{match.group('num')}`: expected an integer")
        if match.group("op") == "{":
            end = _brace_end(text, col - 1)
            tokens.append(Token("brace", text[col : end - 1], col))
            pos = end
            continue
        if match.group("op") == "#":
            marker, pos = _pad_marker(text, match.end())
            tokens.append(Token("op", "#", col, marker))
            continue
        tokens.append(Token(match.lastgroup, match.group(match.lastgroup), col))
        pos = match.end()


def _pad_marker(text: str, pos: int) -> tuple[PadKind, int]:
    """`#` followed by a brace holding exactly `*`, `!` or `0` names the padding kind."""
    rest = pos
    while rest < len(text) and text[rest].isspace():
        rest += 1
    if rest < len(text) and text[rest] == "{":
        end = _brace_end(text, rest)
        inside = text[rest + 1 : end - 1].strip()
        if inside in _MARKERS:
            return _MARKERS[inside], end
    return PadKind.TOP, pos


class _Parser:
    def __init__(self, text: str, scope: tuple[dict[str, Any], dict[str, Any]], outer: tuple[dict, ...] = ()):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.globals, self.locals = scope
        self.outer = outer  # callers' locals: names a lambda or comprehension sees only by closure

    def fail(self, token: Token, reason: str) -> MappingSyntaxError:
        return MappingSyntaxError(self.text, token.col, reason)

    @property
    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, closer: str) -> bool:
        token = self.peek
        return token.kind == "end" if closer == "end" else (token.kind == "op" and token.text == closer)

    def parse(self) -> Node:
        if self.peek.kind == "end":
            raise self.fail(self.peek, "empty mapping: expected an axis, a number, `(` or `[`")
        node = self.mapping(closer="end")
        end = self.peek
        if end.kind != "end":
            raise self.fail(end, f"unexpected `{end.text}`: expected `,` or the end of the mapping")
        return node

    def mapping(self, closer: str) -> Node:
        items = [self.item()]
        while self.at(","):
            self.take()
            if self.at(closer):
                break  # trailing comma
            items.append(self.item())
        node = items[-1]
        for outer in reversed(items[:-1]):
            node = Pair(outer, node)
        return node

    def item(self) -> Node:
        node = self.atom()
        while self.peek.kind == "op" and self.peek.text in ("/", "%", "=", "#"):
            op = self.take()
            n = self.number()
            reason = check_op(node, op.text, n)
            if reason:
                raise self.fail(op, reason)
            node = Op(node, op.text, n, PadKind.TOP if op.kind_marker is None else op.kind_marker)
        return node

    def atom(self) -> Node:
        token = self.take()
        if token.kind == "name":
            return self.resolve(token, self.lookup(token))
        if token.kind == "num":
            n = int(token.text)
            if n < 1:
                raise self.fail(token, "a broadcast needs a positive size")
            return Num(n)
        if token.kind == "brace":
            return self.resolve(token, self.evaluate(token))
        if token.text in ("(", "["):
            closer = ")" if token.text == "(" else "]"
            if self.at(closer):
                raise self.fail(self.peek, "empty group: expected an axis, a number, `(` or `[`")
            node = self.mapping(closer)
            end = self.take()
            if end.text != closer:
                raise self.fail(end, f"expected `{closer}` to close the `{token.text}` at column {token.col}")
            return node
        found = "the end of the mapping" if token.kind == "end" else f"`{token.text}`"
        raise self.fail(token, f"expected an axis, a number, `(` or `[`, found {found}")

    def number(self) -> int:
        token = self.take()
        if token.kind == "num":
            return int(token.text)
        if token.kind == "brace":
            value = self.evaluate(token)
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.fail(token, f"`{{{token.text}}}` must evaluate to an integer, got {value!r}")
            return value
        found = "the end of the mapping" if token.kind == "end" else f"`{token.text}`"
        raise self.fail(token, f"expected a number after the operator, found {found}")

    def lookup(self, token: Token) -> Any:
        for namespace in (self.locals, self.globals, *self.outer):
            if token.text in namespace:
                return namespace[token.text]
        raise self.fail(token, f"unknown axis `{token.text}`: declare it with `{token.text} = axes(...)`")

    def evaluate(self, token: Token) -> Any:
        """A `{…}` expression, evaluated in a kernel module's own namespace (it has `__builtins__`); a
        mapping read from a file (resolved against a plain table of axes) is never evaluated."""
        if "__builtins__" not in self.globals:
            raise self.fail(token, f"`{{{token.text}}}` is evaluated only in a kernel's module, not in a file's text")
        try:
            return eval(token.text, self.globals, self.locals)
        except Exception as error:
            raise self.fail(token, f"cannot evaluate `{{{token.text}}}`: {error}") from None

    def resolve(self, token: Token, value: Any) -> Node:
        if isinstance(value, Axis):
            return Sym(value)
        if isinstance(value, Mapping):
            return value.node
        raise self.fail(token, f"`{token.text}` is not an axis or a mapping (it is a {type(value).__name__})")


def parse(
    text: str, globals_: dict[str, Any], locals_: dict[str, Any] | None = None, outer: tuple[dict, ...] = ()
) -> Mapping:
    """Parse `text` with names resolved in the given scope, then in `outer` namespaces in order."""
    if not isinstance(text, str):
        raise MappingError(f"a mapping expression is a string, got {type(text).__name__}")
    node = _Parser(text, (globals_, locals_ if locals_ is not None else globals_), outer).parse()
    return Mapping.from_node(node)


def _callers(frame, depth: int = 4) -> tuple[dict, ...]:
    """Locals of the frames that called `frame`: a string names an axis without capturing it, so a
    lambda or comprehension inside a function would otherwise not see the function's axes."""
    found = []
    frame = frame.f_back
    while frame is not None and len(found) < depth:
        found.append(frame.f_locals)
        frame = frame.f_back
    return tuple(found)


class _MappingLiteral:
    """`m["I / 32, J % 8"]`: a mapping whose axis names resolve in the caller's scope."""

    @user_facing
    def __getitem__(self, key: str | Axis | Mapping | int | tuple) -> Mapping:
        if isinstance(key, str):
            frame = sys._getframe(2)  # the caller of the user_facing wrapper
            return parse(key, frame.f_globals, frame.f_locals, _callers(frame))
        items = key if isinstance(key, tuple) else (key,)
        if not items:
            raise MappingError("m[()] is empty: a mapping needs at least one item")
        nodes = [_node_of(item) for item in items]
        node = nodes[-1]
        for outer in reversed(nodes[:-1]):
            node = Pair(outer, node)
        return Mapping.from_node(node)

    def __repr__(self) -> str:
        return "m"


def _node_of(item: Any) -> Node:
    if isinstance(item, Axis):
        return Sym(item)
    if isinstance(item, Mapping):
        return item.node
    if isinstance(item, int) and not isinstance(item, bool) and item > 0:
        return Num(item)
    raise MappingError(f"m[...] items must be axes, named mappings or positive integers, got {item!r}")


m = _MappingLiteral()
"""The mapping literal: `m["I / 32, J % 8"]` parses a mapping expression whose axis names resolve in
the caller's scope (an `Axis` object works too: `m[I]`).

Examples:
    >>> I = axes(I=512)
    >>> m["I / 32, I % 32"] == m["I"]          # the same layout, split in two
    True
    >>> m["I % 8 # 16"].size                    # 8 live positions padded to 16
    16
"""
