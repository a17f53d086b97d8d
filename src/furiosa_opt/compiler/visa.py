"""vISA: the stage-1 IR — one op per kernel-language call, in SSA form, with full types and locations.

Text form (one op per line; `print(parse(text)) == text`):

    kernel base_template.kernel.gemm_kernel.gemm_kernel chip=1 pe=8
    axes I=512 J=512 K=64
    arg a %0: hbm<bf16, [1], [I, K]>
    %2: view<bf16, [1], [I, K]> = view %0  // gemm_kernel.py:17
    %3: dm<bf16, [1], [1 # 2], [I / 32, J / 32], [I % 32, K]> = to_dm %2 ctx=tdma cluster=[1 # 2] …  // …
    return %20

Types are `kind<dtype, [mapping], …>` (one mapping per level); attributes are `key=value` with mappings in
brackets, dtypes, contexts, integers and the Vector Engine's op values (`FxpBinaryOp.AddFxp`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from furiosa_opt.mapping import Axis, Mapping, MappingError
from furiosa_opt.mapping.parse import parse as parse_mapping


class VisaSyntaxError(ValueError):
    """Malformed vISA text: names the line and what was expected."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(f"vISA line {line}: {message}")


@dataclass(frozen=True, slots=True)
class Type:
    kind: str  # hbm, dm, trf, vrf, host, view, view_mut, stream, vector, contraction
    dtype: str
    params: tuple[Mapping, ...]

    def __str__(self) -> str:
        inner = ", ".join([self.dtype, *(f"[{p}]" for p in self.params)])
        return f"{self.kind}<{inner}>"


@dataclass(frozen=True, slots=True)
class Value:
    name: str  # "%3"
    type: Type


@dataclass(frozen=True, slots=True)
class Loc:
    file: str
    line: int
    column: int = field(default=1, compare=False)  # kept in memory for diagnostics, not printed

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Op:
    opcode: str
    results: tuple[Value, ...]
    operands: tuple[str, ...]
    attrs: tuple[tuple[str, object], ...]
    loc: Loc | None = None

    def attr(self, key: str, default: object = None) -> object:
        return dict(self.attrs).get(key, default)


@dataclass(frozen=True)
class Kernel:
    identity: str
    chip: int
    pe: int
    axes: tuple[Axis, ...]
    args: tuple[Value, ...]
    ops: tuple[Op, ...]
    returns: tuple[str, ...]
    values: dict[str, Value] = field(default_factory=dict, compare=False, repr=False)
    paths: tuple[str, ...] = ()  # each argument's place in the kernel's parameters (`inputs.x`), as args

    def path(self, index: int) -> str:
        """Where argument `index` sits among the parameters (its SSA name for hand-written vISA without one)."""
        return self.paths[index] if index < len(self.paths) else self.args[index].name


# ---- printing ---------------------------------------------------------------------------------------


def format_attr(value: object) -> str:
    if isinstance(value, Mapping):
        return f"[{value}]"
    if isinstance(value, bool) or value is None:
        return repr(value)
    name = getattr(value, "name", None)
    if type(value).__name__ in ("DType", "TuContext", "DmaContext"):
        return name
    return repr(value)


def print_kernel(kernel: Kernel) -> str:
    lines = [f"kernel {kernel.identity} chip={kernel.chip} pe={kernel.pe}"]
    lines.append("axes " + " ".join(f"{a.name}={a.size}" for a in kernel.axes) if kernel.axes else "axes")
    lines += [f"arg {kernel.path(i)} {v.name}: {v.type}" for i, v in enumerate(kernel.args)]
    for op in kernel.ops:
        head = ", ".join(f"{v.name}: {v.type}" for v in op.results)
        body = " ".join([op.opcode, *op.operands, *(f"{k}={format_attr(v)}" for k, v in op.attrs)])
        text = f"{head} = {body}" if head else body
        lines.append(f"{text}  // {op.loc}" if op.loc else text)
    lines.append("return " + " ".join(kernel.returns) if kernel.returns else "return")
    return "\n".join(lines) + "\n"


# ---- parsing ----------------------------------------------------------------------------------------

_HEADER = re.compile(r"kernel (?P<identity>\S+) chip=(?P<chip>\d+) pe=(?P<pe>\d+)\Z")
_TYPE = re.compile(r"(?P<kind>[a-z_]+)<(?P<inner>.*)>\Z")


def _split_top(text: str, separator: str) -> list[str]:
    """Split at `separator` outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "(": 1, "<": 1, "]": -1, ")": -1, ">": -1}.get(ch, 0)
        if depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
    parts.append(text[start:])
    return [p for p in parts if p != ""] if separator == " " else parts


class _Reader:
    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.scope: dict[str, Axis] = {}
        self.values: dict[str, Value] = {}

    def mapping(self, text: str, line: int) -> Mapping:
        if not (text.startswith("[") and text.endswith("]")):
            raise VisaSyntaxError(line, f"expected a mapping in brackets, got `{text}`")
        try:
            return parse_mapping(text[1:-1], self.scope)
        except MappingError as error:
            raise VisaSyntaxError(line, str(error).splitlines()[0]) from None

    def type(self, text: str, line: int) -> Type:
        match = _TYPE.match(text.strip())
        if not match:
            raise VisaSyntaxError(line, f"expected a type `kind<dtype, [mapping], …>`, got `{text}`")
        dtype, *params = [p.strip() for p in _split_top(match["inner"], ",")]
        return Type(match["kind"], dtype, tuple(self.mapping(p, line) for p in params))

    def value(self, text: str, line: int) -> Value:
        name, _, type_text = text.partition(":")
        name = name.strip()
        if not re.fullmatch(r"%\d+", name):
            raise VisaSyntaxError(line, f"expected an SSA name such as `%3`, got `{name}`")
        if name in self.values:
            raise VisaSyntaxError(line, f"`{name}` is defined twice")
        value = Value(name, self.type(type_text, line))
        self.values[name] = value
        return value

    def attr(self, text: str, line: int) -> object:
        from furiosa_opt.compiler.attrs import parse_attr

        if text.startswith("["):
            return self.mapping(text, line)
        try:
            return parse_attr(text)
        except ValueError as error:
            raise VisaSyntaxError(line, str(error)) from None

    def op(self, text: str, line: int) -> Op:
        body, _, loc_text = text.partition("  // ")
        loc = None
        if loc_text:
            file, _, number = loc_text.rpartition(":")
            if not (number.isascii() and number.isdigit()):
                raise VisaSyntaxError(line, f"expected `// file:line`, got `// {loc_text}`")
            loc = Loc(file, int(number))
        sides = _split_top(body, " = ")  # a mapping may hold ` = ` itself (`[B = 4 # 8]`)
        head, eq, rhs = (sides[0], " = ", " = ".join(sides[1:])) if len(sides) > 1 else ("", "", body)
        results = tuple(self.value(v, line) for v in _split_top(head, ", ")) if eq else ()
        words = _split_top(rhs.strip(), " ")
        if not words:
            raise VisaSyntaxError(line, "expected an opcode")
        opcode, operands, attrs = words[0], [], []
        for word in words[1:]:
            if word.startswith("%"):
                if word not in self.values:
                    raise VisaSyntaxError(line, f"`{word}` is used before it is defined")
                operands.append(word)
            else:
                key, sep, value = word.partition("=")
                if not sep:
                    raise VisaSyntaxError(line, f"expected `key=value`, got `{word}`")
                attrs.append((key, self.attr(value, line)))
        return Op(opcode, results, tuple(operands), tuple(attrs), loc)

    def kernel(self) -> Kernel:
        lines = [(i + 1, text) for i, text in enumerate(self.lines) if text.strip()]
        if len(lines) < 3:
            raise VisaSyntaxError(len(self.lines), "expected `kernel …`, `axes …`, the ops and `return …`")
        number, text = lines[0]
        header = _HEADER.match(text)
        if not header:
            raise VisaSyntaxError(number, "expected `kernel <identity> chip=<n> pe=<n>`")
        number, text = lines[1]
        if not (text == "axes" or text.startswith("axes ")):
            raise VisaSyntaxError(number, "expected `axes Name=size …`")
        for word in text.split()[1:]:
            name, _, size = word.partition("=")
            if not (size.isascii() and size.isdigit()):  # `²`.isdigit() too
                raise VisaSyntaxError(number, f"expected `Name=size`, got `{word}`")
            self.scope[name] = Axis(name, int(size))
        args, paths, ops = [], [], []
        for number, text in lines[2:-1]:
            if text.startswith("arg "):
                path, _, value = text[4:].partition(" ") if not text[4:].startswith("%") else ("", "", text[4:])
                args.append(self.value(value, number))
                paths.append(path or args[-1].name)
            else:
                ops.append(self.op(text, number))
        number, text = lines[-1]
        if not (text == "return" or text.startswith("return ")):
            raise VisaSyntaxError(number, "expected `return …` last")
        returns = tuple(text.split()[1:])
        for name in returns:
            if name not in self.values:
                raise VisaSyntaxError(number, f"`{name}` is returned but never defined")
        return Kernel(
            header["identity"],
            int(header["chip"]),
            int(header["pe"]),
            tuple(self.scope.values()),
            tuple(args),
            tuple(ops),
            returns,
            dict(self.values),
            tuple(paths),
        )


def parse_kernel(text: str) -> Kernel:
    return _Reader(text).kernel()
