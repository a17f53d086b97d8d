"""The IR graph viewer in headless Chromium on the gemm LIR graph: layout, search, details, pan/zoom."""

import json


def state(page) -> dict:
    return page.evaluate("JSON.parse(JSON.stringify(window.viewerState))")


def test_loads_lays_out_and_shows_every_node(open_page, gemm_dumps):
    data = json.loads(gemm_dumps["graph"].read_text())
    page = open_page(gemm_dumps["graph"])
    s = state(page)
    assert s["mode"] == "graph" and s["error"] == ""
    assert set(s["visibleNodes"]) == {n["id"] for n in data["nodes"]}
    assert page.is_visible("#search") and not page.is_visible("#range-start")
    # longest-path layering: every data/order edge points to a later layer
    layer = page.evaluate("Object.fromEntries(window.viewerApi.graphLayers())")
    for edge in data["edges"]:
        assert layer[edge["from"]] < layer[edge["to"]], edge


def test_search_highlights_and_centres_matches(open_page, gemm_dumps):
    data = json.loads(gemm_dumps["graph"].read_text())
    page = open_page(gemm_dumps["graph"])
    page.fill("#search", "to_hbm")
    fields = ("id", "label", "value", "op", "command", "loc")
    expected = [n["id"] for n in data["nodes"] if any("to_hbm" in str(n.get(f, "")).lower() for f in fields)]
    s = state(page)
    assert s["matches"] == expected and expected
    centre = page.evaluate("(id) => window.viewerApi.locate(id)", expected[0])
    box = page.locator("#canvas").bounding_box()
    assert abs(centre["x"] - (box["x"] + box["width"] / 2)) < 2
    page.fill("#search", "")
    assert state(page)["matches"] == []


def test_clicking_a_node_shows_its_details(open_page, gemm_dumps):
    data = json.loads(gemm_dumps["graph"].read_text())
    node = next(n for n in data["nodes"] if n["kind"] == "command" and n["context"] == "main")
    page = open_page(gemm_dumps["graph"])
    point = page.evaluate("(id) => window.viewerApi.locate(id)", node["id"])
    page.mouse.click(point["x"], point["y"])
    assert state(page)["selection"] == {"kind": "node", "name": node["id"]}
    side = page.text_content("#details")
    assert node["label"] in side and node["loc"] in side and "Inputs" in side
    sources = [e["from"] for e in data["edges"] if e["to"] == node["id"]]
    labels = {n["id"]: n["label"] for n in data["nodes"]}
    for source in sources:
        assert labels[source] in side


def test_pan_and_zoom(open_page, gemm_dumps):
    page = open_page(gemm_dumps["graph"])
    box = page.locator("#canvas").bounding_box()
    zoom = state(page)["zoom"]
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
    page.mouse.wheel(0, -300)
    page.until(f"window.viewerState.zoom > {zoom}")  # wheel events arrive asynchronously
    before = page.evaluate("window.viewerApi.locate('T0')")
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 80, box["y"] + 140, steps=4)
    page.mouse.up()
    after = page.evaluate("window.viewerApi.locate('T0')")
    assert abs(after["x"] - before["x"] - 80) < 1 and abs(after["y"] - before["y"] - 40) < 1
    assert state(page)["selection"] is None  # a drag is not a click
