"""Port of upstream `furiosa-opt-examples/tests/test_profile.rs`: with `TUC_PROFILE_LEVEL=info`, launching
`i8_contract` on the NPU backend emits on-device profile spans, which a listener counts.

Upstream installs a `tracing` layer that counts spans of the target `span::npu`; here the spans arrive as
records of the `logging` logger `furiosa_opt.profile` (`runtime/profile.py`). Upstream's test refuses to
run without the variable; this one sets it, so it always runs.
"""

import logging

import numpy as np
from backends import backend
from upstream.test_contract_element_types import K8, A, R, i8_contract

from furiosa_opt import Context, HostTensor, i8, m


class Counter(logging.Handler):
    """Counts profile spans as they are emitted."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += hasattr(record, "span")


def test_profile_i8_contract(monkeypatch):
    monkeypatch.setenv("TUC_PROFILE_LEVEL", "info")
    monkeypatch.delenv("FURIOSA_OPT_PROFILE", raising=False)
    counter = Counter()
    logger = logging.getLogger("furiosa_opt.profile")
    logger.addHandler(counter)
    try:
        with backend("npu") as launch, Context.acquire() as ctx:
            input = HostTensor.from_numpy(np.ones((A.size, K8.size), np.int8), i8, m["A, K8"]).to_hbm(ctx.pdma)
            trf = HostTensor.from_numpy(np.ones((R.size, K8.size), np.int8), i8, m["R, K8"]).to_hbm(ctx.pdma)
            out = launch(i8_contract, ctx, input, trf).to_host(ctx.pdma).to_numpy()
    finally:
        logger.removeHandler(counter)
    assert counter.count > 0, "expected on-device profile spans"
    np.testing.assert_array_equal(out, np.full((A.size, R.size), K8.size, np.int32))  # the run itself is right
