from furiosa_opt import *

A = axes(A=256)


@device
def missing_annotation(ctx: Context, x) -> None:  # refused[visa]: device-annotation
    pass


@device
def host_argument(ctx: Context, x: HostTensor[i32, m["A"]]) -> None:  # refused[visa]: device-annotation
    pass
