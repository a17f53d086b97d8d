"""The compiler's error model: one `Diagnostic` renders both like rustc and as a JSON line."""

from __future__ import annotations

import json
import linecache
import os
import re
import traceback
from dataclasses import asdict, dataclass, field, replace

from furiosa_opt.diagnostics import FuriosaOptError, VerifyError, is_internal
from furiosa_opt.mapping.parse import MappingSyntaxError


@dataclass(frozen=True)
class Span:
    file: str
    line: int
    column: int = 1
    end_line: int = 0
    end_column: int = 0
    label: str = ""


@dataclass
class Diagnostic:
    code: str
    message: str
    stage: str
    kernel: str | None = None
    spans: list[Span] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    help: list[str] = field(default_factory=list)
    level: str = "error"

    def rendered(self, color: bool = False) -> str:
        hue = "\x1b[33;1m" if self.level == "warning" else "\x1b[31;1m"
        hue, blue, bold, reset = (hue, "\x1b[34;1m", "\x1b[1m", "\x1b[0m") if color else ("",) * 4
        lines = [f"{hue}{self.level}[{self.code}]{reset}{bold}: {self.message}{reset}"]
        for span in self.spans:
            number = str(span.line)
            pad = " " * len(number)
            lines.append(f"{pad}{blue}-->{reset} {_shown(span.file)}:{span.line}:{span.column}")
            source = linecache.getline(span.file, span.line).rstrip("\n")
            if source:
                width = max(1, (span.end_column - span.column) if span.end_line == span.line else 1)
                caret = " " * (span.column - 1) + "^" * width
                lines += [
                    f"{pad} {blue}|{reset}",
                    f"{blue}{number} |{reset} {source}",
                    f"{pad} {blue}|{reset} {hue}{caret}{reset} {span.label}".rstrip(),
                ]
        lines += [f"  = note: {note}" for note in self.notes]
        lines += [f"  = help: {text}" for text in self.help]
        return "\n".join(lines)

    def to_json(self) -> str:
        record = self.record()
        record["rendered"] = self.rendered()
        return json.dumps(record, sort_keys=True)

    def record(self) -> dict:
        """The diagnostic as plain data (JSON-ready); `from_record` reads it back."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict) -> Diagnostic:
        fields = {k: v for k, v in record.items() if k in cls.__dataclass_fields__}
        return cls(**{**fields, "spans": [Span(**s) for s in record.get("spans", [])]})

    def denied(self) -> Diagnostic:
        """A warning turned into an error by `--deny warnings` (an error stays as it is)."""
        if self.level != "warning":
            return self
        return replace(self, level="error", notes=[*self.notes, "`--deny warnings` turns this warning into an error"])


def _shown(path: str) -> str:
    """A path as the user would type it: relative to the current directory when below it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def from_error(error: BaseException, stage: str, kernel: str | None) -> Diagnostic:
    """The diagnostic for an error raised while compiling `kernel`."""
    if isinstance(error, VerifyError):
        loc = error.location
        spans = [Span(loc.file, loc.line, loc.column, loc.end_line or loc.line, loc.end_column)] if loc else []
        return Diagnostic(error.rule, error.message, stage, kernel, spans, list(error.notes))
    if isinstance(error, MappingSyntaxError):
        note = f"in `{error.text}`, column {error.column}"
        return Diagnostic("mapping-syntax", f"invalid mapping: {error.reason}", stage, kernel, _spans(error), [note])
    if isinstance(error, FuriosaOptError):
        return Diagnostic(error_code(error), str(error).splitlines()[0], stage, kernel, _spans(error))
    frame = _user_frame(error)
    spans = [Span(frame.filename, frame.lineno, (frame.colno or 0) + 1)] if frame else []
    return Diagnostic("python-error", f"{type(error).__name__}: {error}", stage, kernel, spans)


def error_code(error: FuriosaOptError) -> str:
    """A specific code for an error that names no rule: its class (`MappingError` → `mapping`) and, when
    the message opens with the operation that refused (`carve: piece …`, `Unconsumed: …`), that too:
    `mapping-carve`, `sequencer-unconsumed`."""
    kind = re.sub(r"(?<!^)(?=[A-Z])", "-", type(error).__name__.removesuffix("Error")).lower() or "furiosa-opt"
    operation = re.match(r"([A-Za-z][A-Za-z_]*):", str(error))
    if operation is None:
        return kind
    return f"{kind}-{re.sub(r'(?<!^)(?=[A-Z])', '-', operation[1]).replace('_', '-').lower()}"


def _spans(error: FuriosaOptError) -> list[Span]:
    """Where an error without its own rule location happened: recorded, else from the traceback."""
    loc = error.location
    if loc is not None:
        return [Span(loc.file, loc.line, loc.column, loc.end_line or loc.line, loc.end_column)]
    frame = _user_frame(error)
    if frame is None:
        return []
    return [
        Span(
            frame.filename,
            frame.lineno,
            (frame.colno or 0) + 1,
            frame.end_lineno or frame.lineno,
            (frame.end_colno or 0) + 1,
        )
    ]


def _user_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The innermost traceback frame outside furiosa_opt (where the user's code raised)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not is_internal(f.filename)]
    return frames[-1] if frames else None
