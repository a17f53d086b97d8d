"""Hand-written vISA that applies an op to a value without it is refused at the op's own line, with the
operand kinds named (not an AttributeError from the replay)."""

from pathlib import Path

from furiosa_opt.compiler.driver import compile_visa

MEMSET_ON_HBM = """kernel t.k chip=1 pe=8
axes A=2048
arg x %0: hbm<i32, [1], [A]>
%1: view_mut<i32, [1], [A]> = view_mut %0  // t.py:7
memset %1 ctx=sub code=0  // t.py:8
%2: view<i32, [1], [A]> = view %0  // t.py:9
%3: dm<i32, [1], [1 # 2], [A / 8 # 256], [A % 8]> = to_dm %2 ctx=tdma cluster=[1 # 2] \
slice=[A / 8 # 256] element=[A % 8]
%4: view<i32, [1], [1 # 2], [A / 8 # 256], [A % 8]> = view %3  // t.py:10
%5: hbm<i32, [1], [A]> = to_hbm %4 ctx=tdma element=[A]  // t.py:10
return %5
"""


def test_an_op_the_operand_does_not_have_is_refused_at_its_line(tmp_path):
    path = tmp_path / "k.visa"
    path.write_text(MEMSET_ON_HBM)
    (diagnostic,) = compile_visa(path).diagnostics
    assert diagnostic.code == "visa-operands"
    assert diagnostic.message == "`memset` does not apply to HbmTensorViewMut"
    assert (diagnostic.spans[0].file, diagnostic.spans[0].line) == ("t.py", 8)


def _kept_loop_text() -> str:
    from hostile.seed_kernels import kept_loop

    from furiosa_opt.compiler.driver import compile_kernel

    result = compile_kernel(kept_loop)
    assert result.ok, result.diagnostics
    return result.visa_text


def test_regions_must_nest_and_an_end_loop_must_name_what_its_loop_carries(tmp_path):
    """Found by the vISA fuzzer: with the `if` line gone, its `end_if` was taken to close the loop, and
    stage 2 failed inside its loop planning (a ValueError from zip) instead of refusing the text; a
    second `end_loop` failed there too (an AttributeError)."""
    import hostile.seed_kernels as seeds

    text = _kept_loop_text()
    source = Path(seeds.__file__).read_text().splitlines()
    loop = next(n for n, line in enumerate(source, 1) if "device_range(3)" in line)
    lines = text.splitlines(keepends=True)
    (if_line,) = [line for line in lines if line.startswith("if ")]
    (end_if,) = [line for line in lines if line.startswith("end_if")]
    (end_loop,) = [line for line in lines if line.startswith("end_loop ")]
    when = next(n for n, line in enumerate(source, 1) if "when(i == 1)" in line)
    cases = {
        "no-if": (text.replace(if_line, ""), f"`end_if` closes the `loop` of line {loop}, which `end_loop` closes"),
        "no-end-if": (text.replace(end_if, ""), f"`end_loop` closes the `if` of line {when}, which `end_if` closes"),
        "end-loop-bare": (text.replace(end_loop, "end_loop  //" + end_loop.split("//")[1]),
                          f"`end_loop` names 0 value(s), the loop of line {loop} carries 1"),
        "end-loop-twice": (text.replace(end_loop, end_loop * 2), "`end_loop` closes no open region"),
        "no-end-loop": (text.replace(end_loop, ""), "`loop` is never closed by `end_loop`"),
    }  # fmt: skip
    for name, (broken, message) in cases.items():
        path = tmp_path / f"{name}.visa"
        path.write_text(broken)
        diagnostics = compile_visa(path).diagnostics
        assert [(d.code, d.message) for d in diagnostics][:1] == [("visa-region", message)], (name, diagnostics)
