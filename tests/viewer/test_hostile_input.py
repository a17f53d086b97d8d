"""The page fed hostile JSON: prototype names as strings, a schedule the CLI refuses or accepts, and a
200,000-node chain graph. The `open_page` fixture fails a test on any uncaught page error."""

import json
import time
from pathlib import Path

from furiosa_opt.cli.main import main as cli

BASE = json.loads((Path(__file__).parent / "fixtures" / "complete.schedule.json").read_text())


def state(page) -> dict:
    return page.evaluate("JSON.parse(JSON.stringify(window.viewerState))")


def cli_summary(path: Path, capsys) -> tuple[int, str]:
    """`furiosa-opt schedule summary FILE`: its exit code and what it said on stderr."""
    code = cli(["schedule", "summary", str(path)])
    return code, capsys.readouterr().err


def test_prototype_names_are_only_strings(open_page, tmp_path, capsys):
    data = json.loads(json.dumps(BASE))
    data["instructions"][0].update({"contexts": ["__proto__", "constructor", "DmaEngine"], "tpe": "__proto__"})
    data["instructions"][1].update({"name": "__proto__", "tpe": "hasOwnProperty", "index": "constructor"})
    data["tensors"][0].update({"buffer_type": "__proto__", "name": "toString", "__proto__": {"polluted": 1}})
    path = tmp_path / "proto.json"
    path.write_text(json.dumps(data))
    assert cli_summary(path, capsys)[0] == 0  # the CLI reads it: so must the page
    page = open_page(path)
    s = state(page)
    assert s["mode"] == "schedule" and s["error"] == "", s["error"]
    assert set(s["visibleInstructions"]) == {"O0", "__proto__"}
    assert page.evaluate("({}).polluted") is None
    point = page.evaluate("window.viewerApi.locate('__proto__')")
    page.mouse.click(point["x"], point["y"])
    assert state(page)["selection"] == {"kind": "instruction", "name": "__proto__"}
    assert "hasOwnProperty" in page.text_content("#details")
    graph = {"format": "furiosa-opt-lir-graph", "nodes": [{"id": "__proto__", "kind": "__proto__"},
             {"id": "constructor", "kind": "toString", "label": "hasOwnProperty", "op": {"toString": 1},
              "loc": {"__proto__": {"valueOf": 2}}}],
             "edges": [{"from": "__proto__", "to": "constructor", "kind": "__proto__"}]}  # fmt: skip
    assert page.evaluate("(text) => window.viewerApi.load(text, 'g.json')", json.dumps(graph))
    s = state(page)
    assert s["mode"] == "graph" and s["error"] == "" and set(s["visibleNodes"]) == {"__proto__", "constructor"}
    assert dict(page.evaluate("window.viewerApi.graphLayers()")) == {"__proto__": 0, "constructor": 1}
    page.fill("#search", "hasown")  # fields that are objects with a `toString` of their own are not text
    assert state(page)["matches"] == ["constructor"]
    point = page.evaluate("window.viewerApi.locate('constructor')")
    page.mouse.click(point["x"], point["y"])
    assert '{"toString": 1}' in page.text_content("#details")  # shown as JSON, never called


def test_an_instruction_that_ends_before_it_begins_is_refused_as_the_cli_refuses_it(open_page, tmp_path, capsys):
    data = json.loads(json.dumps(BASE))
    data["instructions"][1]["lifetime"] = {"begin": 12, "end": 11}
    path = tmp_path / "backwards.json"
    path.write_text(json.dumps(data))
    code, err = cli_summary(path, capsys)
    message = "instructions[1].lifetime: ends at 11, before it begins at 12"
    assert code == 1 and f"{path}: {message}" in err, err
    page = open_page()
    page.set_input_files("#file", str(path))
    page.until("window.viewerState.error !== ''")
    assert page.text_content("#error") == f"backwards.json: {message}"
    assert state(page)["mode"] == "empty"


def test_a_tensor_without_an_address_is_accepted_as_the_cli_accepts_it(open_page, tmp_path, capsys):
    data = json.loads(json.dumps(BASE))
    del data["tensors"][1]["address"]
    path = tmp_path / "unplaced.json"
    path.write_text(json.dumps(data))
    assert cli_summary(path, capsys)[0] == 0
    page = open_page(path)
    s = state(page)
    assert s["mode"] == "schedule" and s["error"] == ""
    assert s["visibleTensors"] == ["T0"]  # T1 has no place in a memory pane, so no box
    point = page.evaluate("window.viewerApi.locate('O0')")
    page.mouse.click(point["x"], point["y"])
    page.get_by_role("button", name="T1 %1 (Sram)").click()  # but it is there, with its details
    assert state(page)["selection"] == {"kind": "tensor", "name": "T1"}
    assert "address" not in page.text_content("#details")


GOOD = {"rule": "hbm-channels", "shown": "4 of 32 HBM channels carry the reads", "fix": "walk address bits 8-12"}
REPORTS = [  # hand-edited `memory` reports: the loaders check only that each is an object
    {},
    {"findings": "none"},
    {"findings": [1, None, {"rule": 2, "shown": "s", "fix": "f"}, {"rule": "r", "shown": "s"}]},
    {"findings": [{"rule": "r", "shown": "s"}, GOOD]},  # one finding well-formed: marked with it alone
    {"cycles": "many", "bottleneck": [], "read": "hbm", "write": {"memory": "hbm"}, "findings": [GOOD]},
    {"read": {"memory": "dm", "dmns": None, "dmn_balance": "x"}, "findings": []},
    {"__proto__": {"findings": [GOOD]}, "constructor": 1},  # an own key named __proto__, not a prototype
]


def test_hand_edited_memory_reports_mark_what_the_cli_summary_lists(open_page, tmp_path, capsys):
    data = json.loads(json.dumps(BASE))
    del data["makespan"]
    for k, report in enumerate(REPORTS):  # one DMA per report, each in its own time slot
        begin = 40 + 10 * k
        data["instructions"].append(
            {"index": 2 + k, "name": f"M{k}", "tpe": "DmaLoad", "contexts": ["DmaEngine"],
             "lifetime": {"begin": begin, "end": begin + 8}, "memory": report}
        )  # fmt: skip
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    assert cli(["schedule", "summary", str(path), "--json"]) == 0
    listed = {d["name"] for d in json.loads(capsys.readouterr().out)["dma_findings"]}
    assert listed == {"O0", "M3", "M4"}  # the fixture's own DMA and the two reports with a well-formed finding
    page = open_page(path)
    assert set(state(page)["marked"]) == listed and "3 DMA(s) with memory findings" in page.text_content("#summary")
    sides = {}
    for k in range(len(REPORTS)):  # every sidebar is drawn (open_page fails the test on a page error)
        point = page.evaluate("(n) => window.viewerApi.locate(n)", f"M{k}")
        page.mouse.click(point["x"], point["y"])
        assert state(page)["selection"] == {"kind": "instruction", "name": f"M{k}"}
        sides[k] = page.text_content("#details")
        assert "undefined" not in sides[k] and "NaN" not in sides[k], sides[k]
        findings = page.locator("#details ul.findings li").all_text_contents()
        assert findings == ([f"{GOOD['rule']}: {GOOD['shown']}. Fix: {GOOD['fix']}"] if f"M{k}" in listed else [])
    # a field missing or of another type shows as "?"
    assert (
        "? cycles, bound by ?" in sides[4]
        and "HBM ?/32 channels, stacks ?, row conflicts ?, partial writes ?" in sides[4]
    )
    assert "DM ? DMN(s), balance ?" in sides[5]


CHAIN = """(count) => {
  const nodes = [], edges = [];
  for (let i = 0; i < count; i++) nodes.push({ id: `N${i}`, kind: i % 2 ? "command" : "tensor", label: `node ${i}` });
  for (let i = 1; i < count; i++) edges.push({ from: `N${i - 1}`, to: `N${i}`, kind: "data" });
  const loaded = window.viewerApi.load(JSON.stringify({ format: "furiosa-opt-lir-graph", nodes, edges }), "chain.json");
  const layers = window.viewerApi.graphLayers(), s = window.viewerState;
  return {
    loaded, mode: s.mode, error: s.error, visible: s.visibleNodes.length, frameMs: s.lastFrameMs,
    count: layers.length, inOrder: layers.every(([id, layer], i) => id === `N${i}` && layer === i),
  };
}"""


def test_a_200000_node_chain_graph_is_laid_out(open_page):
    page = open_page()
    started = time.monotonic()
    result = page.evaluate(CHAIN, 200_000)
    assert result["loaded"] and result["mode"] == "graph" and result["error"] == "", result
    assert result["count"] == 200_000 and result["inOrder"], result  # node i on layer i: the chain, laid out
    assert result["visible"] == 200_000 and result["frameMs"] < 2000, result  # fitted: every node drawn
    assert time.monotonic() - started < 20
    page.fill("#search", "node 199999")  # the view still answers: search centres the last node
    assert page.evaluate("window.viewerState.matches") == ["N199999"]
