"""A device function works on its arguments; a host tensor made inside it cannot reach the device."""

import numpy as np

from furiosa_opt import *

A = axes(A=256)


@device
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> None:
    host = HostTensor.from_numpy(np.zeros(256, np.int32), i32, m["A"])
    host.to_hbm(ctx.pdma)  # refused[visa]: foreign-value
