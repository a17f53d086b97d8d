"""The page and the CLI read schedules by the same rules: every input below is refused by both with the
same message, or accepted by both. The CLI side is `furiosa_opt.analysis.schedule.parse_schedule`; the
page side is `FV.read` in headless Chromium, what the page's loader calls.

The inputs are mutations of a complete schedule: every field of the top level, of a tensor, of its
lifetime, of an instruction, of its lifetime, util and memory report, deleted or replaced by each of a
list of values (null, booleans, integers small and beyond 2^53, floats that print in fixed and in
exponent form, strings with quotes, controls and non-ASCII, lists, objects, a deep list), plus
written-out cases."""

import copy
import json
import threading
from pathlib import Path

import pytest

from furiosa_opt.analysis.schedule import ScheduleError, parse_schedule
from furiosa_opt.viewer.server import make_server, url_of

FIXTURES = Path(__file__).parent / "fixtures"

BASE = json.loads((FIXTURES / "complete.schedule.json").read_text())  # every field of our format

DEEP: list = []
for _ in range(60):
    DEEP = [DEEP]
VALUES = [
    None, True, False, 0, -1, 7, 2**60, -(2**70), 1.0, 1.5, -0.0, 0.0001, 0.00001, 1e15, 1e16, 123456.789, 1e300,
    2.5e-300, "", "x", 'quote " and \\ and \n\t\x01\x7f', "é ∑ \u2028 😀", "y" * 100, [], [1, "a", None, 2.5],
    {}, {"b": 1.0, "a": [2, "c"]}, {"total_util": 1.0}, DEEP,
]  # fmt: skip
MISSING = object()

PATHS = [
    (), ("makespan",), ("kernel",), ("tensors",), ("instructions",),
    ("tensors", 0), *[("tensors", 0, key) for key in BASE["tensors"][0]],
    ("tensors", 1, "lifetime", "begin"), ("tensors", 1, "lifetime", "end"),
    ("instructions", 0), *[("instructions", 0, key) for key in BASE["instructions"][0]],
    ("instructions", 1, "lifetime", "begin"), ("instructions", 1, "lifetime", "end"),
    ("instructions", 1, "util", "total_util"), ("instructions", 1, "contexts", 1),
    ("instructions", 0, "input_tensors", 0), ("instructions", 0, "output_tensors", 0),
    # a DMA's memory report: the loaders check that it is an object, and nothing inside may break the page's
    *[("instructions", 0, "memory", key) for key in ("cycles", "read", "findings")],
    ("instructions", 0, "memory", "read", "channels"), ("instructions", 0, "memory", "findings", 0),
    *[("instructions", 0, "memory", "findings", 0, key) for key in ("rule", "shown", "fix")],
]  # fmt: skip


def mutated(path: tuple, value) -> dict:
    data = copy.deepcopy(BASE)
    if not path:
        return value
    holder = data
    for step in path[:-1]:
        holder = holder[step]
    if value is MISSING:
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    return data


def documents() -> list[tuple[str, str]]:
    """(what, JSON text) for every case."""
    cases = [
        (f"{'.'.join(map(str, p)) or 'top'} = {v!r:.40}", json.dumps(mutated(p, v))) for p in PATHS for v in VALUES
    ]
    cases += [(f"{'.'.join(map(str, p))} deleted", json.dumps(mutated(p, MISSING))) for p in PATHS if p]
    special = copy.deepcopy(BASE)
    special["instructions"][1]["lifetime"] = {"begin": 12, "end": 11}
    cases.append(("end < begin", json.dumps(special)))
    special = copy.deepcopy(BASE)
    special["tensors"][1]["index"] = 0
    cases.append(("duplicate tensor index", json.dumps(special)))
    special = copy.deepcopy(BASE)
    special["makespan"] = 29
    cases.append(("makespan before the last end", json.dumps(special)))
    special = copy.deepcopy(BASE)  # beyond 2^53 a double cannot tell these apart
    special["instructions"][1]["lifetime"] = {"begin": 2**62 + 1, "end": 2**62}
    cases.append(("end < begin beyond 2^53", json.dumps(special)))
    special["instructions"][1]["lifetime"] = {"begin": 2**62, "end": 2**62 + 1}
    special["makespan"] = 2**62
    cases.append(("makespan < end beyond 2^53", json.dumps(special)))
    special = copy.deepcopy(BASE)
    del special["makespan"], special["kernel"], special["tensors"][0]["address"]
    special["tensors"][1]["address"] = None
    cases.append(("no makespan, tensors without an address", json.dumps(special)))
    special = copy.deepcopy(BASE)
    special["instructions"][0].update({"contexts": ["__proto__", "constructor", "DmaEngine"], "tpe": "__proto__"})
    special["tensors"][0].update({"buffer_type": "__proto__", "__proto__": {"polluted": 1}, "name": "toString"})
    special["instructions"][1]["index"] = "__proto__"
    cases.append(("prototype names as strings and keys", json.dumps(special)))
    text = json.dumps(BASE)
    begin, index = '"begin": 10, "end": 30', '"index": 1, "name": "T1"'
    assert begin in text and index in text
    literals = ["1E1", "2.50", "-0", "-0.0", "1e400", "12345678901234567890", "100000000000000000000.0"]
    literals += [str(2**63 - 1), str(2**63), str(-(2**63)), str(-(2**63) - 1)]  # the 64-bit bounds
    for literal in literals:
        cases.append((f"begin {literal}", text.replace(begin, begin.replace("10", literal))))
        cases.append((f"tensor index {literal}", text.replace(index, index.replace("1", literal))))
    cases.append(("upstream fixture", (FIXTURES / "upstream.schedule.json").read_text()))
    return cases


def cli_verdict(text: str) -> str | None:
    try:
        parse_schedule(json.loads(text), "f")
    except ScheduleError as error:
        message = str(error)
        assert message.startswith("f: "), message
        return message[3:]
    return None


PAGE = """(texts) => texts.map((text) => {
  try {
    window.FV.read(text);
    return null;
  } catch (e) {
    return e.message;
  }
})"""


@pytest.fixture(scope="module")
def page_of(browser):
    """One page for every case: the loader functions need no file of their own."""
    server = make_server(None, port=0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    page = browser.new_page()
    page.goto(url_of(server))
    yield page
    page.close()
    server.shutdown()
    server.server_close()


def test_the_page_and_the_cli_refuse_the_same_schedules_with_the_same_messages(page_of):
    cases = documents()
    assert len(cases) > 700
    page_verdicts = page_of.evaluate(PAGE, [text for _, text in cases])
    differences = []
    for (what, text), page in zip(cases, page_verdicts, strict=True):
        cli = cli_verdict(text)
        if cli != page:
            differences.append(f"{what}:\n    cli:  {cli}\n    page: {page}")
    assert not differences, f"{len(differences)} of {len(cases)} differ:\n" + "\n".join(differences[:20])
    refused = sum(cli_verdict(text) is not None for _, text in cases)
    assert 500 < refused < len(cases)  # most mutations are refused, the rest accepted: both kinds are covered
