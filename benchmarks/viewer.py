"""The Schedule Viewer on a synthetic 100,000-instruction schedule, in headless Chromium:

* load + first render: from navigation until the page has fetched, parsed, indexed and drawn `/data`,
  target < 3 s;
* frame time of pans and zooms (a render of the new range), target < 50 ms per frame, measured on the
  whole schedule (every instruction visible) and on zoomed-in windows.

One DMA in four carries a memory report with a finding, so the frames also draw the marks of
pathological DMAs (amber band and warning triangle).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import machine
from playwright.sync_api import sync_playwright

from furiosa_opt.viewer.server import make_server, url_of

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
CONTEXTS = [("Main", ["MainContext"]), ("Main", ["MainContext", "VectorEngine"]), ("Sub", ["SubContext"]),
            ("DmaLoad", ["DmaEngine"]), ("DmaStore", ["DmaEngine"]), ("DmaLoad", ["PcieDma"])]  # fmt: skip
BUFFERS = ["Sram", "Trf", "Vrf", "Spm", "Dram"]
FINDING = {"rule": "hbm-partial-write", "shown": "256 of 256 HBM writes cover part of a 256-byte unit",
           "fix": "make the packet a multiple of 256 bytes"}  # fmt: skip


def synthetic(count: int, seed: int = 0) -> dict:
    """`count` instructions on six in-order streams, each writing one tensor the next one reads."""
    rng = random.Random(seed)
    clock = dict.fromkeys(range(len(CONTEXTS)), 0)
    instructions, tensors = [], []
    for i in range(count):
        stream = rng.randrange(len(CONTEXTS))
        tpe, contexts = CONTEXTS[stream]
        begin = clock[stream] + rng.randrange(0, 20)
        end = begin + rng.randrange(5, 200)
        clock[stream] = end
        tensors.append(
            {"index": i, "name": f"T{i}", "visa_name": f"%{i}", "buffer_type": BUFFERS[i % 5],
             "address": rng.randrange(0, 1 << 16) * 64, "size": 512 * 64 * rng.randrange(1, 64), "dtype": "bf16",
             "mapping": "I, J", "lifetime": {"begin": begin, "end": end + rng.randrange(0, 400),
                                             "block_begin": i, "block_end": i + 1}}
        )  # fmt: skip
        instructions.append(
            {"index": i, "name": f"O{i}", "tpe": tpe, "contexts": contexts, "lifetime": {"begin": begin, "end": end},
             "util": {"total_util": 1.0}, "description": f"{tpe} --> synthetic.py:{i}",
             "input_tensors": [i - 1] if i else [], "output_tensors": [i], "source": f"synthetic.py:{i}"}
        )  # fmt: skip
        if tpe.startswith("Dma") and i % 4 == 0:  # by index: the random draws, and so the timeline, stay as before
            instructions[-1]["memory"] = {"cycles": end - begin, "bottleneck": "HBM", "findings": [FINDING]}
    makespan = max(o["lifetime"]["end"] for o in instructions)
    return {"format": "furiosa-opt-schedule", "version": 1, "kernel": "synthetic", "makespan": makespan,
            "instructions": instructions, "tensors": tensors}  # fmt: skip


FRAMES = """(windows) => windows.map(([t0, t1]) => {
  window.viewerApi.setRange(t0, t1);
  return window.viewerState.lastFrameMs;
})"""


def main() -> int:
    print(machine())
    count = 100_000
    data = synthetic(count)
    makespan = data["makespan"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.schedule.json"
        path.write_text(json.dumps(data))
        server = make_server(path, port=0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            start = time.perf_counter()
            page.goto(url_of(server))
            while not page.evaluate("window.viewerState && window.viewerState.ready === true"):
                page.wait_for_timeout(10)  # not wait_for_function: it evaluates strings, which the CSP refuses
            load = time.perf_counter() - start
            visible = page.evaluate("window.viewerState.visibleInstructions.length")
            marked = page.evaluate("window.viewerState.marked.length")
            full = page.evaluate(FRAMES, [[0, makespan + k] for k in range(20)])
            width = makespan / 50  # zoomed in: about 2 % of the schedule on screen
            pans = page.evaluate(FRAMES, [[k * width / 4, k * width / 4 + width] for k in range(60)])
            middle = makespan / 2
            zooms = page.evaluate(FRAMES, [[middle - middle / 2**k, middle + middle / 2**k] for k in range(16)])
            browser.close()
        server.shutdown()
        size = path.stat().st_size
    print(f"synthetic schedule: {count:,} instructions, {count:,} tensors, {size / 1e6:.1f} MB, makespan {makespan:,}")
    print(
        f"load + first render: {load * 1e3:7.0f} ms (target < 3000 ms); {visible:,} instructions visible, "
        f"{marked:,} marked"
    )
    for name, frames in (("full view (all visible)", full), ("pan, zoomed in", pans), ("zoom in steps", zooms)):
        print(f"{name:24} median {statistics.median(frames):6.1f} ms  max {max(frames):6.1f} ms (target < 50 ms)")
    worst = max(max(full), max(pans), max(zooms))
    print(f"worst frame: {worst:.1f} ms; {'OK' if load < 3 and worst < 50 else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
