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


def test_each_viewer_names_itself(open_page, gemm_dumps):
    page = open_page()
    assert page.title() == "furiosa-opt viewer" and page.text_content("#title") == "furiosa-opt viewer"
    graph = open_page(gemm_dumps["graph"])
    assert graph.text_content("#title") == "IR Graph Viewer"
    assert graph.title() == "furiosa-opt IR Graph Viewer: base_template.kernel.gemm_kernel.gemm_kernel"
    schedule = open_page(gemm_dumps["schedule"])
    assert schedule.text_content("#title") == "Schedule Viewer" and not schedule.is_visible("#graph-legend")


def test_the_legend_names_each_edge_style_as_drawn(open_page, gemm_dumps):
    page = open_page(gemm_dumps["graph"])
    assert page.is_visible("#graph-legend")
    text = page.text_content("#graph-legend")
    assert all(f"{kind}:" in text for kind in ("data", "order", "sync"))
    styles = {
        kind: page.evaluate(
            f"""(() => {{ const s = getComputedStyle(document.querySelector('#graph-legend .edge.{kind}'));
            return [s.borderTopStyle, s.borderTopColor]; }})()"""
        )
        for kind in ("data", "order", "sync")
    }  # the canvas draws data solid #666, order dashed #1f77b4, sync dashed #d62728 (graph.js)
    assert styles == {
        "data": ["solid", "rgb(102, 102, 102)"],
        "order": ["dashed", "rgb(31, 119, 180)"],
        "sync": ["dashed", "rgb(214, 39, 40)"],
    }


def test_the_graph_fills_the_window_on_load(open_page, gemm_dumps):
    page = open_page(gemm_dumps["graph"])
    canvas = page.locator("#canvas").bounding_box()
    assert canvas["y"] + canvas["height"] <= 900 and canvas["y"] + canvas["height"] >= 900 - 20  # down to the bottom
    box = page.evaluate("window.viewerApi.graphBox()")
    assert canvas["x"] <= box["left"] and box["right"] <= canvas["x"] + canvas["width"]
    assert canvas["y"] <= box["top"] and box["bottom"] <= canvas["y"] + canvas["height"]
    filled = max(
        (box["right"] - box["left"]) / (canvas["width"] - 40), (box["bottom"] - box["top"]) / (canvas["height"] - 40)
    )
    assert filled > 0.97  # one dimension spans the canvas less its margin
    centre = (box["left"] + box["right"]) / 2, (box["top"] + box["bottom"]) / 2
    assert abs(centre[0] - (canvas["x"] + canvas["width"] / 2)) < 2
    assert abs(centre[1] - (canvas["y"] + canvas["height"] / 2)) < 2


def test_edges_point_from_producer_to_consumer(open_page, gemm_dumps):
    """An arrowhead is drawn where an edge enters its consumer, and none where it leaves its producer."""
    data = json.loads(gemm_dumps["graph"].read_text())
    outs = {n["id"]: [e for e in data["edges"] if e["from"] == n["id"]] for n in data["nodes"]}
    ins = {n["id"]: [e for e in data["edges"] if e["to"] == n["id"]] for n in data["nodes"]}
    edge = next(
        e for e in data["edges"] if e["kind"] == "data" and len(outs[e["from"]]) == 1 and len(ins[e["to"]]) == 1
    )
    page = open_page(gemm_dumps["graph"])
    zoom, height = state(page)["zoom"], page.evaluate("window.FV.NODE_H")
    source = page.evaluate("(id) => window.viewerApi.locate(id)", edge["from"])
    target = page.evaluate("(id) => window.viewerApi.locate(id)", edge["to"])
    start = (source["x"], source["y"] + height * zoom / 2)  # bottom middle of the producer
    tip = (target["x"], target["y"] - height * zoom / 2)  # top middle of the consumer
    length = ((tip[0] - start[0]) ** 2 + (tip[1] - start[1]) ** 2) ** 0.5
    ux, uy = (tip[0] - start[0]) / length, (tip[1] - start[1]) / length
    size = max(4, 7 * zoom)

    def alpha(x: float, y: float) -> int:
        return page.evaluate("([x, y]) => window.viewerApi.pixel(x, y)", [x, y])[3]

    beside = 0.28 * size  # off the line, inside the head's half-width at 0.7 of its length
    assert alpha(tip[0] - 0.7 * size * ux + beside * uy, tip[1] - 0.7 * size * uy - beside * ux) > 100
    assert alpha(tip[0] - 0.7 * size * ux - beside * uy, tip[1] - 0.7 * size * uy + beside * ux) > 100
    back = (start[0] + 0.7 * size * ux, start[1] + 0.7 * size * uy)  # the same spot at the producer's end
    assert alpha(back[0] + beside * uy, back[1] - beside * ux) == 0
