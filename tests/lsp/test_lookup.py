"""The language server's pure parts: position lookups over text, the stages allowed next (checked against
the stage table and the Vector Engine's chain), the fixes a diagnostic carries, the rules' documentation."""

from __future__ import annotations

from furiosa_opt.lsp import lookup
from furiosa_opt.lsp.fixes import fixes
from furiosa_opt.lsp.members import members_after, next_stages, signature
from furiosa_opt.lsp.rules import rule_documentation
from furiosa_opt.stages import STAGES, VECTOR_CHAIN

CHAIN = """\
out = (
    ctx.main.begin(a.view())
    .fetch(m["I % 32, J"], m["K"])  # a comment with ( and "
    .collect(m["1 # 2, K / 16"], m["K % 16"])
    .
"""


def test_previous_method_skips_arguments_strings_and_comments():
    assert lookup.previous_method(CHAIN) == "collect"
    assert lookup.previous_method(CHAIN.rsplit("\n    .collect", 1)[0] + "\n    .cas") == "fetch"
    assert lookup.previous_method("x = y.") is None  # not after a call
    assert lookup.previous_method("print(x)") is None  # no dot


def test_open_call_counts_top_level_commas():
    assert lookup.open_call('s.collect(m["A, B"], ') == ("collect", 1)
    assert lookup.open_call('s.fetch(m["A"]') == ("fetch", 0)
    assert lookup.open_call("s.fetch(m[x") is None  # inside the subscript, not the call
    assert lookup.open_call("x = 1") is None


def test_next_stages_follow_the_table_and_the_vector_chain():
    assert next_stages("fetch") == ("fetch_table_lookup", "fetch_cast", "fetch_zero_point_sub", "switch", "collect")
    after_fxp = next_stages("vector_fxp")
    rank = VECTOR_CHAIN["fxp"].rank
    for name in after_fxp:
        slot = STAGES[name].slot
        assert slot is None or VECTOR_CHAIN[slot].rank >= rank or name == "vector_final", name
    assert "vector_fp_unary" in after_fxp and "vector_intra_slice_tag" not in after_fxp
    assert "vector_fxp_zip" in after_fxp  # the fxp slot repeats
    allowed, others = members_after("contract_outer")
    assert allowed == ("contract_packet",) and "contract_time" in others
    assert members_after("not_a_stage") is None


def test_signature_of_a_stage_method():
    label, parameters, doc = signature("collect")
    assert label == "collect(time: 'Mapping', packet: 'Mapping')"
    assert len(parameters) == 2 and "flit" in doc


def test_value_at_prefers_the_variable_then_the_innermost_call():
    text = "x = s.fetch(a)\ny = x.collect(b)\n"
    fetch = {"line": 1, "column": 7, "end_line": 1, "end_column": 15, "opcode": "fetch"}
    collect = {"line": 2, "column": 7, "end_line": 2, "end_column": 17, "opcode": "collect"}
    analysis = {"values": [fetch, collect]}
    assert lookup.value_at(analysis, text, 2, 5) is fetch  # `x` on line 2 holds the fetch's stream
    assert lookup.value_at(analysis, text, 2, 9) is collect
    assert lookup.value_at(analysis, text, 2, 1) is collect  # `y`: assigned from the collect
    assert lookup.value_at(analysis, text, 1, 20) is None


def test_levels_name_each_mapping():
    stream = {"kind": "stream", "params": ["1", "1 # 2", "S", "T", "P"], "sizes": [1, 2, 4, 8, 16]}
    assert [n for n, _, _ in lookup.levels(stream)] == ["Chip", "Cluster", "Slice", "Time", "Packet"]
    trf = {"kind": "trf", "params": ["1", "1", "S", "L", "E"], "sizes": [1, 1, 4, 8, 64]}
    assert [n for n, _, _ in lookup.levels(trf)] == ["Chip", "Cluster", "Slice", "Lane", "Element"]
    assert lookup.hint({**stream, "opcode": "fetch"}) == "Time [T] Packet [P]"


def test_axis_fixes_offer_close_names_and_a_declaration_after_the_last():
    text = 'I, K = axes(I=8, K=64)\nX = m["Kk % 16"]\n'
    span = {"line": 2, "column": 8, "end_line": 2, "end_column": 10}
    record = {"message": "invalid mapping: unknown axis `Kk`: declare it with `Kk = axes(...)`", "spans": [span]}
    found = fixes(record, text, {"axes": {"I": 8, "K": 64}})
    assert found[0] == {"title": "Did you mean `K`?", **span, "text": "K"}
    assert found[-1]["title"] == "Declare axis `Kk`" and found[-1]["text"] == "Kk = axes(Kk=16)  # its size: check it\n"
    assert (found[-1]["line"], found[-1]["column"]) == (2, 1)


def test_rule_documentation_reads_the_checking_function():
    documentation = rule_documentation()
    assert "check_collect" in documentation["collect-packet-mismatch"]
    assert "verify/stream.py" in documentation["collect-packet-mismatch"]
    assert "verify/memory.py" in documentation["dma-tail-alignment"]
    assert "Lane::SIZE must be 1, 2, 4, or 8" in documentation["trf-lane-size"]  # the message as written
