"""`@device` on a nested function: refused when the module is imported (it has no stable identity)."""

from furiosa_opt import *


def factory():
    @device
    def inner(ctx: Context) -> None:  # refused[import]: device-nested
        pass

    return inner


factory()
