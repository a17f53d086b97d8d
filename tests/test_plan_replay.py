"""Launch plans against the language: every `@device` kernel the differential harness finds (examples/,
tests/) is launched on the CPU backend from one seed, which records its plan, then from a second seed,
which replays it; the replay must give the bytes the language gives for the second seed's inputs (run
without plans on an identical set of arguments): every output and every argument afterwards.

A kernel that cannot be replayed must be one this file names, with the reason; so must a kernel that
fails on the CPU backend (the harness's deliberate failures)."""

from __future__ import annotations

import numpy as np
import pytest
from harness import KERNELS, SEED, _bytes

from furiosa_opt import Context
from furiosa_opt.lang import plan
from furiosa_opt.lang.device import run_on_cpu
from furiosa_opt.tune.trial import random_arguments

# identity suffix → why its launch is not replayed (or does not run at all)
NOT_REPLAYED: dict[str, str] = {
    "test_device.wrong_result_kernel": "deliberately returns the wrong type: the launch fails",
    "test_views.dm_on_pdma": "deliberately issues to_dm on ctx.pdma: the launch fails",
    "test_frictions.forgets_vector_final": "deliberately omits vector_final(): the launch fails",
}


def _reason(identity: str) -> str | None:
    return next((why for key, why in NOT_REPLAYED.items() if identity.endswith(key)), None)


def _state(kernel, args: tuple, out: object) -> tuple[list[bytes], list[bytes]]:
    outputs = out if isinstance(out, tuple) else () if out is None else (out,)
    return [_bytes(o) for o in outputs], [_bytes(value) for _, _, value in kernel.bind(args)]


@pytest.mark.parametrize("identity", sorted(KERNELS))
def test_a_replayed_launch_gives_the_languages_bytes(identity):
    kernel, module = KERNELS[identity]
    reason = _reason(identity)
    plan.clear()
    with Context.acquire() as ctx:
        try:
            first = random_arguments(kernel, ctx, np.random.default_rng(SEED), module)
            plan.launch(kernel, ctx, first, run_on_cpu)  # recorded
        except Exception:
            if reason is None:
                raise
            pytest.xfail(reason)
        replayed_before = plan.COUNTS["replayed"]
        second = [random_arguments(kernel, ctx, np.random.default_rng(SEED + 1), module) for _ in range(2)]
        replayed = plan.launch(kernel, ctx, second[0], run_on_cpu)
        fresh = run_on_cpu(kernel, ctx, second[1])
    did_replay = plan.COUNTS["replayed"] == replayed_before + 1
    assert did_replay or reason is not None, f"{identity} was not replayed"
    assert not (did_replay and reason), f"{identity} is replayed now: remove it from NOT_REPLAYED"
    got, want = _state(kernel, second[0], replayed), _state(kernel, second[1], fresh)
    assert got[0] == want[0], f"{identity}: an output of the replay differs from the language's"
    assert got[1] == want[1], f"{identity}: an argument differs after the replay"
