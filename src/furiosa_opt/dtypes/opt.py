"""Upstream's initialized-or-not cell value (``Opt<D>``, scalar.rs)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Opt:
    """Upstream's ``Opt<D>``: a value (``Opt.Init(v)``) or no value (``Opt.Uninit``).

    Upstream uses it for cells a kernel never wrote; ``+`` and ``*`` combine two through ``zip_map``,
    so anything with an uninitialized side stays uninitialized.

    >>> (Opt.Init(2) + Opt.Init(3)).unwrap(), Opt.Init(2) * Opt.Uninit
    (5, Opt.Uninit)
    """

    value: object = None
    is_init: bool = False

    @classmethod
    def Init(cls, value: object) -> Opt:
        """An initialized value: ``Opt.Init(7).unwrap() == 7``."""
        return cls(value, True)

    def map(self, f) -> Opt:
        """``f`` applied to the value; ``Uninit`` stays ``Uninit``.

        >>> Opt.Init(4).map(lambda v: v * 10), Opt.Uninit.map(lambda v: v * 10)
        (Opt.Init(40), Opt.Uninit)
        """
        return Opt.Init(f(self.value)) if self.is_init else self

    def zip_map(self, other: Opt, f) -> Opt:
        """``f(a, b)`` of two initialized values, else ``Uninit``.

        >>> Opt.Init(6).zip_map(Opt.Init(4), lambda a, b: a - b), Opt.Uninit.zip_map(Opt.Init(4), max)
        (Opt.Init(2), Opt.Uninit)
        """
        return Opt.Init(f(self.value, other.value)) if self.is_init and other.is_init else Opt.Uninit

    def unwrap(self) -> object:
        """The value; an uninitialized one is an error (upstream panics).

        >>> Opt.Init(1.5).unwrap()
        1.5
        """
        if not self.is_init:
            raise ValueError("unwrap of an uninitialized Opt value")
        return self.value

    def is_zero(self) -> bool:
        """Upstream's ``Zero::is_zero``: an initialized zero (``Uninit`` is not zero).

        >>> Opt.Init(0).is_zero(), Opt.Uninit.is_zero()
        (True, False)
        """
        return self.is_init and self.value == 0

    def __add__(self, other: Opt) -> Opt:
        return self.zip_map(other, lambda a, b: a + b)

    def __mul__(self, other: Opt) -> Opt:
        return self.zip_map(other, lambda a, b: a * b)

    def __repr__(self) -> str:
        return f"Opt.Init({self.value!r})" if self.is_init else "Opt.Uninit"


Opt.Uninit = Opt()
