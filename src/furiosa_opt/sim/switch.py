"""The Switch Engine's stage: the ring's routing, from the config's numbers (the variant's code and sizes,
`switch.from_config`, or a CustomBroadcast's routing table), its input's slices and its output's layout."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import Command
from furiosa_opt.configs.records import EngineConfig
from furiosa_opt.sim.stream import Stream, Unit
from furiosa_opt.stages import register
from furiosa_opt.switch import SwitchConfig, from_config


@register("simulator", "switch")
def route(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """The ring's routing, from the config's numbers alone: each cluster's slices as an array
    `[slice2, slice1, slice0, time…, packet]` whose axes a named config permutes and broadcasts, or the
    routing table a CustomBroadcast carries (which input slice each output slice reads per moved step)."""
    ring = RNGD.slices_per_cluster  # the switch's ring has a router on every slice of a cluster
    n = config.in_slices
    steps, lanes = stream.steps, stream.lanes
    clusters = stream.values.reshape(-1, ring, steps, lanes)
    cfg = from_config(config)
    if cfg.kind == "CustomBroadcast":
        sources = np.asarray(config.sources, dtype=np.int64).reshape(-1, config.moved)
        moved = clusters[:, np.maximum(sources, 0)].transpose(0, 1, 3, 2, 4)  # [g, out, steps, moved, lanes]
        moved = np.where((sources >= 0)[None, :, None, :, None], moved, 0)
    else:
        moved = _named_route(cfg, clusters[:, :n], steps, lanes)
    out = np.zeros((clusters.shape[0], ring, moved[0, 0].size), dtype=stream.values.dtype)
    out[:, : moved.shape[1]] = moved.reshape(moved.shape[0], moved.shape[1], -1)
    return replace(stream.reshaped(config), values=out.reshape(stream.values.shape[0], -1))


def _named_route(cfg: SwitchConfig, x: np.ndarray, steps: int, lanes: int) -> np.ndarray:
    """A named config on `x` [clusters, slices, steps, lanes]: [clusters, slices, out steps, lanes]."""
    if cfg.kind == "Forwarding":
        return x
    g, s1, s0 = x.shape[0], cfg.slice1, cfg.slice0
    s2 = x.shape[1] // (s1 * s0)
    if cfg.kind == "Broadcast01":  # [s2, s1, s0 | t1, t0] → [s2, X, Y | t1, s1, t0, s0]
        t0 = cfg.time0
        y = x.reshape(g, s2, s1, s0, steps // t0, t0, lanes).transpose(0, 1, 4, 2, 5, 3, 6)
        y = np.broadcast_to(y[:, :, None, None], (g, s2, s1, s0, *y.shape[2:]))
    elif cfg.kind == "Broadcast1":  # [s2, s1, s0 | t0] → [s2, X, s0 | t0, s1]
        y = x.reshape(g, s2, s1, s0, steps, lanes).transpose(0, 1, 3, 4, 2, 5)
        y = np.broadcast_to(y[:, :, None], (g, s2, s1, *y.shape[2:]))
    elif cfg.kind == "Transpose":  # [s2, s1, s0 | T] → [s2, s0, s1 | T]
        y = x.reshape(g, s2, s1, s0, steps, lanes).transpose(0, 1, 3, 2, 4, 5)
    elif cfg.kind == "InterTranspose":  # [s2, s1, s0 | t2, t1, t0] → [s2, t1, s0 | t2, t0, s1]
        t0 = cfg.time0
        y = x.reshape(g, s2, s1, s0, steps // (s1 * t0), s1, t0, lanes).transpose(0, 1, 5, 3, 4, 6, 2, 7)
    else:  # TransposedBroadcast1: [s2, s1, s0 | t0] → [s2, Y, s1 | t0, s0]
        y = x.reshape(g, s2, s1, s0, steps, lanes).transpose(0, 1, 2, 4, 3, 5)
        y = np.broadcast_to(y[:, :, None], (g, s2, s0, *y.shape[2:]))
    return y.reshape(g, x.shape[1], -1, lanes)
