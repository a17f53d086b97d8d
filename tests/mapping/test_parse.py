"""The `m["…"]` notation: grammar, scope resolution, escaped constants and error columns."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from furiosa_opt.mapping import Axis, Mapping, MappingError, MappingSyntaxError, PadKind, axes, m
from furiosa_opt.mapping.parse import parse

A, B = axes(A=4, B=2)


def test_axes_declares_in_order_and_single_keyword_returns_one_axis():
    i, j, k = axes(I=512, J=512, K=64)
    assert (i.name, i.size, j.name, k.size) == ("I", 512, "J", 64)
    out = axes(Out=64)
    assert isinstance(out, Axis) and out.size == 64


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: axes(a=3), "must start with an uppercase"),
        (lambda: axes(A=0), "positive integer size"),
        (lambda: axes(A=2.5), "positive integer size"),
        (lambda: axes(), "at least one"),
    ],
)
def test_axes_refuses_bad_declarations(call, message):
    with pytest.raises(MappingError, match=message):
        call()


def test_postfix_operators_are_left_associative_and_bind_tighter_than_comma():
    I = axes(I=2048)
    assert m["I / 8 # 256"].size == 256
    assert m["I / 8 % 4"] == m["(I / 8) % 4"]
    assert m["I # 4096 / 2"].size == 2048


def test_pairs_are_right_associative_and_brackets_are_interchangeable():
    C = axes(C=3)
    assert m["A, B, C"] == m["A, (B, C)"] == m["[A, B], C"] == m["[[A], [B], [C]]"]
    assert m["A, B, C"].size == 24


def test_trailing_commas():  # mapping.md §9.2
    assert m["A,"] == m["A"]
    assert m["A, B,"] == m["A, B"]
    assert m["(A, B,)"] == m["A, B"]
    assert m["(A, B,)"].cell(5).index == {"A": 2, "B": 1}


def test_escaped_constants_resolve_in_the_callers_scope():  # mapping.md §9.1
    A, Out = axes(A=512, Out=64)
    n = 8
    assert m["1 # {Out.size}"] == m["1 # 64"]
    assert m["A # {n * 128}"] == m["A # 1024"]
    assert m["A / {n}"] == m["A / 8"]
    assert m["A % {n}"] == m["A % 8"]
    assert m["A = {n}"] == m["A = 8"]
    assert m["A #{!} {Out.size * 8}"] == m["A #{!} 512"]
    assert m["A #{0} {n * 64}"] == m["A #{0} 512"]
    inner = m["A"]
    assert m["{ inner }"] == m["A"]
    assert m["A / {32} = 8"].cell(0).index == {}
    assert m["A % {32}"].cell(3).index == {"A": 3}


def test_names_may_denote_mappings_and_numbers_broadcast():
    Slice = m["A / 2"]
    assert m["Slice, A % 2"] == m["A"]
    assert m["1, A, 1"] == m["A"]
    assert m["A, 3"].size == 12 and m["A, 3"].cell(5).index == {"A": 1}


def test_item_form_builds_pairs_from_axes():
    assert m[A, B] == m["A, B"]
    assert m[A] == m["A"]
    assert m[A, 2] == m["A, 2"]


def test_padding_kinds():
    assert m["A # 8"].cell(5).padding == "top"
    assert m["A #{*} 8"].cell(5).padding == "top"
    assert m["A #{0} 8"].cell(5).padding == "zero"
    assert m["A #{!} 8"].cell(5).padding == "bottom"
    assert m["A #{!} 8"].factors[0].k == PadKind.BOTTOM


def test_display_round_trips():
    for text in ["A", "A, B", "A / 2 # 8, B", "[A, B] % 4", "A #{!} 8", "A #{0} 8, 2"]:
        mapping = m[text]
        assert m[str(mapping)] == mapping
        assert m[mapping.canonical()] == mapping


@pytest.mark.parametrize(
    ("text", "column", "reason"),
    [
        ("", 1, "empty mapping"),
        ("A,,B", 3, "expected an axis"),
        (",A", 1, "expected an axis"),
        (",", 1, "expected an axis"),
        ("()", 2, "empty group"),
        ("A / 3", 3, "stride 3 does not divide the size 4"),
        ("A % 3", 3, "modulo 3 does not divide"),
        ("A = 5", 3, "resize to 5 exceeds"),
        ("A # 2", 3, "padding to 2 is smaller"),
        ("A * 2", 3, "unrecognized token `*`"),
        ("A $ 2", 3, "unrecognized token `$`"),
        ("Q", 1, "unknown axis `Q`"),
        ("A, pytest", 4, "is not an axis or a mapping"),
        ("A / 2.5", 5, "invalid number"),
        ("A /", 4, "expected a number"),
        ("A / B", 5, "expected a number"),
        ("(A, B", 6, "expected `)`"),
        ("A B", 3, "expected `,`"),
        ("A # {!}", 8, "expected a number"),
        ("A / {undefined_name}", 5, "cannot evaluate"),
        ("A / {'x'}", 5, "must evaluate to an integer"),
        ("A / {1", 5, "unclosed"),
        ("0", 1, "positive size"),
    ],
)
def test_malformed_expressions_name_the_column(text, column, reason):
    with pytest.raises(MappingSyntaxError) as info:
        m[text]
    assert info.value.column == column
    assert reason in info.value.reason
    assert info.value.text == text
    assert f"column {column}" in str(info.value)


def test_error_message_shows_the_text_with_a_caret():
    with pytest.raises(MappingSyntaxError) as info:
        m["A, B / 3"]
    lines = str(info.value).splitlines()
    assert lines[1].strip() == "A, B / 3"
    assert lines[2].index("^") - lines[1].index("A") == 5


@settings(max_examples=examples(400), deadline=None)
@given(st.text(alphabet="AB12 ,/%=#()[]{}!*0xyQ.$", max_size=24))
def test_no_other_exception_escapes_the_parser(text):
    try:
        mapping = parse(text, {"A": A, "B": B})
    except MappingSyntaxError as error:
        assert 1 <= error.column <= len(text) + 1
    else:
        assert isinstance(mapping, Mapping) and mapping.size >= 1
