"""A code table: the values a config field names by number, declared once as a tuple whose positions are
the codes. Encoding (`code`), decoding (`value`), the reader's check (`problem`) and what a display shows
(`describe`) all read that one tuple, so no second, hand-kept table can drift from it.

    OPS = CodeTable("Vector Engine op", all_ops())
    OPS.code(FxpBinaryOp.AddFxp)   # its position
    OPS.value(6)                   # the op at position 6
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class CodeTable(Generic[T]):
    """The values of one kind, each coded by its position in `values`."""

    def __init__(self, what: str, values: tuple[T, ...]):
        self.what, self.values = what, values
        self._codes = {value: code for code, value in enumerate(values)}
        if len(self._codes) != len(values):
            raise ValueError(f"the {what} code table names a value twice")

    @property
    def bits(self) -> int:
        """The width a field holding these codes needs."""
        return max(1, (len(self.values) - 1).bit_length())

    def code(self, value: T) -> int:
        try:
            return self._codes[value]
        except (KeyError, TypeError):
            raise ValueError(f"{value!r} is not a {self.what} this table codes") from None

    def value(self, code: int) -> T:
        why = self.problem(code)
        if why is not None:
            raise ValueError(f"{self.what} code {why}")
        return self.values[code]

    def problem(self, code: object) -> str | None:
        """Why `code` names no value of this table, or None."""
        if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code < len(self.values):
            return f"{code!r} is not a known {self.what} code (0 to {len(self.values) - 1})"
        return None

    def describe(self, code: int) -> str:
        """The value's printed form, for displays of a config; never raises."""
        return repr(self.values[code]) if self.problem(code) is None else f"<unknown {self.what} {code!r}>"
