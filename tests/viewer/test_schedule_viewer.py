"""The Schedule Viewer in headless Chromium on the gemm schedule compiled from the example package.

Drawing is on a canvas, so assertions go through `window.viewerState`, which the render pass that
paints the canvas fills in; clicks and drags go to coordinates from `viewerApi.locate`/`paneRect`."""

import json
from pathlib import Path

import pytest

from furiosa_opt import *
from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.schedule import schedule, schedule_json

FIXTURES = Path(__file__).parent / "fixtures"
LANE_OF = {"MainContext": "Main", "SubContext": "Sub", "VectorEngine": "VE", "DmaEngine": "TDMA", "PcieDma": "PDMA"}


def lanes(instruction: dict) -> set[str]:
    found = {LANE_OF[c] for c in instruction["contexts"] if c in LANE_OF}
    return found | ({"Core"} if instruction["tpe"] == "Core" else set())


def visible_instructions(data: dict, t0: float, t1: float) -> set[str]:
    """The visibility rule, restated: on a lane, and its closed lifetime meets the closed range."""
    return {
        o.get("name", f"O{o['index']}")
        for o in data["instructions"]
        if lanes(o) and o["lifetime"]["begin"] <= t1 and o["lifetime"]["end"] >= t0
    }


def state(page) -> dict:
    return page.evaluate("JSON.parse(JSON.stringify(window.viewerState))")


def click(page, name: str) -> None:
    point = page.evaluate("(n) => window.viewerApi.locate(n)", name)
    page.mouse.click(point["x"], point["y"])


def test_loads_from_the_command_line_file_and_shows_everything(open_page, gemm_dumps):
    data = json.loads(gemm_dumps["schedule"].read_text())
    page = open_page(gemm_dumps["schedule"])
    s = state(page)
    assert s["mode"] == "schedule" and s["error"] == ""
    assert s["range"] == [0, data["makespan"]] and s["makespan"] == data["makespan"]
    assert set(s["visibleInstructions"]) == visible_instructions(data, 0, data["makespan"])
    assert set(s["visibleTensors"]) == {t["name"] for t in data["tensors"]}
    last = max((o for o in data["instructions"] if lanes(o)), key=lambda o: o["lifetime"]["end"])
    assert s["criticalPath"][-1] == last["name"]  # the chain ends with the instruction that ends last
    assert f"makespan {data['makespan']} cycles" in page.text_content("#summary")


def test_clicking_an_instruction_shows_its_details_and_highlights_its_tensors(open_page, gemm_dumps):
    data = json.loads(gemm_dumps["schedule"].read_text())
    main = next(o for o in data["instructions"] if o["tpe"] == "Main")
    page = open_page(gemm_dumps["schedule"])
    tensor_names = {data["tensors"][i]["name"] for i in main["input_tensors"] + main["output_tensors"]}
    point = page.evaluate("(n) => window.viewerApi.locate(n)", main["name"])
    page.mouse.move(point["x"], point["y"])
    assert set(state(page)["highlighted"]) == {main["name"], *tensor_names}  # hover highlights, too
    page.mouse.click(point["x"], point["y"])
    s = state(page)
    assert s["selection"] == {"kind": "instruction", "name": main["name"]}
    assert set(s["highlighted"]) == {main["name"], *tensor_names}
    side = page.text_content("#details")
    begin, end = main["lifetime"]["begin"], main["lifetime"]["end"]
    for text in (main["name"], f"{begin} – {end}", "MainContext", main["description"], main["source"]):
        assert text in side
    visa = data["tensors"][main["output_tensors"][0]]
    assert visa["visa_name"] in side
    # following a tensor link selects the tensor: its vISA name, mapping and operators
    page.get_by_role("button", name=f"{visa['name']} {visa['visa_name']} (Sram)").click()
    side = page.text_content("#details")
    assert state(page)["selection"] == {"kind": "tensor", "name": visa["name"]}
    assert visa["mapping"] in side and main["name"] in side


def test_cycle_range_inputs_and_axis_drag_set_the_visible_set(open_page, gemm_dumps):
    data = json.loads(gemm_dumps["schedule"].read_text())
    main = next(o for o in data["instructions"] if o["tpe"] == "Main")
    last = max(data["instructions"], key=lambda o: o["lifetime"]["end"])
    begin, end = main["lifetime"]["begin"], main["lifetime"]["end"]
    page = open_page(gemm_dumps["schedule"])
    page.fill("#range-start", str(begin + 1))
    page.fill("#range-end", str(end - 1))
    page.dispatch_event("#range-end", "change")
    s = state(page)
    assert s["range"] == [begin + 1, end - 1]
    assert set(s["visibleInstructions"]) == visible_instructions(data, begin + 1, end - 1)
    assert main["name"] in s["visibleInstructions"] and len(s["visibleInstructions"]) < len(data["instructions"])
    page.click("#reset")
    assert state(page)["range"] == [0, data["makespan"]]
    # drag on the time axis from the middle of the Main instruction to the middle of the last one
    a, b = (page.evaluate("(n) => window.viewerApi.locate(n)", o["name"]) for o in (main, last))
    axis_y = page.locator("#canvas").bounding_box()["y"] + 10
    page.mouse.move(a["x"], axis_y)
    page.mouse.down()
    page.mouse.move(b["x"], axis_y, steps=4)
    page.mouse.up()
    t0, t1 = state(page)["range"]
    assert begin < t0 < end and last["lifetime"]["begin"] < t1 < data["makespan"]
    assert set(state(page)["visibleInstructions"]) == visible_instructions(data, t0, t1)
    assert {main["name"], last["name"]} <= visible_instructions(data, t0, t1)


def test_the_address_brush_limits_a_memory_pane(open_page, gemm_dumps):
    data = json.loads(gemm_dumps["schedule"].read_text())
    page = open_page(gemm_dumps["schedule"])
    page.click("#brush")
    assert state(page)["brush"] is True
    pane = page.evaluate("window.viewerApi.paneRect('Sram')")
    width, height = pane["right"] - pane["left"], pane["bottom"] - pane["top"]
    page.mouse.move(pane["left"] + 0.4 * width, pane["top"] + 2)
    page.mouse.down()
    page.mouse.move(pane["right"] - 2, pane["top"] + 0.4 * height, steps=4)
    page.mouse.up()
    s = state(page)
    (t0, t1), (lo, hi) = s["range"], s["addressRanges"]["Sram"]
    sram = [t for t in data["tensors"] if t["buffer_type"] == "Sram"]
    top = max(t["address"] + t["size"] / 512 for t in sram)
    assert 0.35 * data["makespan"] < t0 < t1 and 0.5 * top < lo < hi <= top
    expected = {
        t["name"]
        for t in data["tensors"]
        if t["buffer_type"] == "Sram" and t["lifetime"]["begin"] <= t1 and t["lifetime"]["end"] >= t0
        and t["address"] + t["size"] / 512 > lo and t["address"] < hi
    }  # fmt: skip
    assert {n for n in s["visibleTensors"] if data["tensors"][int(n[1:])]["buffer_type"] == "Sram"} == expected
    assert 0 < len(expected) < len(sram)  # the brush kept some SRAM tensors and hid others
    page.click("#reset")
    assert state(page)["addressRanges"] == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "not valid JSON"), ('{"instructions": 3}', "schedule: missing `tensors`"),
     ('{"instructions": [{"index": 0, "tpe": "Main", "contexts": [], "lifetime": {"begin": 0, "end": 1}, '
      '"input_tensors": [7]}], "tensors": []}', "instructions[0].input_tensors[0]: tensor 7 is not in `tensors`")],
)  # fmt: skip
def test_a_malformed_file_shows_an_error_and_keeps_the_view(open_page, gemm_dumps, tmp_path, text, message):
    page = open_page(gemm_dumps["schedule"])
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    page.set_input_files("#file", str(bad))
    page.until("window.viewerState.error !== ''")
    assert page.is_visible("#error") and message in page.text_content("#error")
    assert state(page)["file"] == "/data" and state(page)["visibleInstructions"]


def test_an_upstream_shaped_schedule_loads(open_page):
    data = json.loads((FIXTURES / "upstream.schedule.json").read_text())
    page = open_page()
    assert page.is_visible("#drop")
    page.set_input_files("#file", str(FIXTURES / "upstream.schedule.json"))
    page.until("window.viewerState.mode === 'schedule'")
    s = state(page)
    assert s["makespan"] == 18000 and s["error"] == ""
    assert set(s["visibleInstructions"]) == visible_instructions(data, 0, 18000)
    assert set(s["visibleTensors"]) == {f"T{i}" for i in range(7)}
    assert s["criticalPath"][-1] == "O66"  # the Core op at the very end
    click(page, "O63")
    side = page.text_content("#details")
    assert "MainContext, VectorEngine" in side and "Main, VE" in side and "src/kernel/mnist.rs:20" in side


def test_strings_from_the_file_are_text_never_html(open_page, gemm_dumps, tmp_path):
    payload = "<img src=x onerror=window.pwned=1><script>window.pwned=1</script>"
    data = json.loads(gemm_dumps["schedule"].read_text())
    data["instructions"][9]["description"] = payload
    data["tensors"][5]["visa_name"] = payload
    data["kernel"] = payload
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(data))
    page = open_page(hostile)
    click(page, data["instructions"][9]["name"])
    page.wait_for_timeout(100)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert payload in page.text_content("#details") and payload in page.text_content("#summary")
    assert page.locator("#details img, #details script, #summary img").count() == 0


def test_dmas_with_memory_findings_are_marked_and_explained(open_page, gemm_dumps, tmp_path):
    data = json.loads(gemm_dumps["schedule"].read_text())
    flagged = [o for o in data["instructions"] if o.get("memory") and o["memory"]["findings"]]
    assert flagged, "the default gemm stores partial 256-byte units: its store has a finding"
    page = open_page(gemm_dumps["schedule"])
    assert state(page)["marked"] == [o["name"] for o in flagged]
    assert f"{len(flagged)} DMA(s) with memory findings" in page.text_content("#summary")
    store = flagged[0]
    click(page, store["name"])
    side = page.text_content("#details")
    memory = store["memory"]
    assert f"{memory['cycles']} cycles, bound by {memory['bottleneck']}" in side
    for finding in memory["findings"]:
        assert f"{finding['rule']}: {finding['shown']}. Fix: {finding['fix']}" in side
    clean = next(o for o in data["instructions"] if o.get("memory") and not o["memory"]["findings"])
    click(page, clean["name"])
    assert "Memory findings" not in page.text_content("#details")
    # without reports (an upstream schedule) nothing is marked
    for o in data["instructions"]:
        o.pop("memory", None)
    bare = tmp_path / "bare.schedule.json"
    bare.write_text(json.dumps(data))
    page = open_page(bare)
    assert state(page)["marked"] == [] and "memory findings" not in page.text_content("#summary")


# Two DMAs the memory model calls pathological (tests/compiler/test_memory_timing.py prices them): the book's
# Example 4, whose load steps the HBM row bits fastest (hbm-row-conflicts), and a store of 128-byte rows,
# half a 256-byte unit each (hbm-partial-write; its load is clean).
A, B, C = axes(A=64, B=2048, C=1024)
R, W = axes(R=256, W=64)


@device
def rows_conflict(ctx: Context, x: HbmTensor[i8, m["1"], m["A, B, C"]]) -> None:
    x.to_dm(ctx.tdma, m["B / 1024"], m["B / 256 % 4, A"], m["B % 256, C"])


@device
def rows_of_128_bytes(ctx: Context, x: HbmTensor[bf16, m["1"], m["R, W"]]) -> HbmTensor[bf16, m["1"], m["R, W"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["W"])
    return dm.to_hbm(ctx.tdma, m["R, W"])


AMBER = [255, 127, 14, 255]  # schedule.js MARK_FILL, opaque


@pytest.fixture(scope="module", params=[rows_conflict, rows_of_128_bytes], ids=lambda k: k.__name__)
def pathological(request, tmp_path_factory) -> Path:
    """The kernel's schedule JSON, compiled in process."""
    path = tmp_path_factory.mktemp("memory") / f"{request.param.__name__}.schedule.json"
    path.write_text(json.dumps(schedule_json(schedule(lower(trace(request.param)[0])))))
    return path


def side_text(side: dict, verb: str) -> str:
    """One side of a memory report as the sidebar words it."""
    if side["memory"] == "hbm":
        stack = "both stacks" if side["stack_toggles"] else "one stack"
        conflicts = round(100 * side["row_conflict_share"])
        return (
            f"HBM {side['channels']}/32 channels, {stack}, row conflicts {conflicts}%, partial {verb} {side['partial']}"
        )
    return f"DM {side['dmns']} DMN(s), balance {round(100 * side['dmn_balance'])}%"


def test_a_pathological_dma_is_drawn_marked_and_its_findings_explained(open_page, pathological):
    data = json.loads(pathological.read_text())
    flagged = [o for o in data["instructions"] if o.get("memory", {}).get("findings")]
    assert flagged, "the memory model reports this kernel's pathology"
    page = open_page(pathological)
    assert state(page)["marked"] == [o["name"] for o in flagged]
    assert f"{len(flagged)} DMA(s) with memory findings" in page.text_content("#summary")
    pixel = lambda x, y: page.evaluate("([x, y]) => window.viewerApi.pixel(x, y)", [x, y])  # noqa: E731
    for o in data["instructions"]:
        box = page.evaluate("(n) => window.viewerApi.box(n)", o["name"])
        if box is None:
            continue  # a sync (Noop) has no lane
        middle = (box["left"] + box["right"]) / 2
        band = pixel(middle, box["top"] + 2)  # the top 4 pixels of a marked box are the amber band
        assert (band == AMBER) == (o in flagged), (o["name"], band)
        if o in flagged:  # and, the box being wide, a warning triangle at its right end (left of its "!")
            assert pixel(box["right"] - 11, box["bottom"] - 3) == AMBER
    for o in flagged:
        click(page, o["name"])
        side = page.text_content("#details")
        memory = o["memory"]
        assert f"{memory['cycles']} cycles, bound by {memory['bottleneck']}" in side
        assert side_text(memory["read"], "reads") in side and side_text(memory["write"], "writes") in side
        items = page.locator("#details ul.findings li").all_text_contents()
        assert items == [f"{f['rule']}: {f['shown']}. Fix: {f['fix']}" for f in memory["findings"]]
    for o in data["instructions"]:
        if o.get("memory") and not o["memory"]["findings"]:  # a clean DMA: its numbers, no findings
            click(page, o["name"])
            side = page.text_content("#details")
            assert side_text(o["memory"]["read"], "reads") in side and "Memory findings" not in side
