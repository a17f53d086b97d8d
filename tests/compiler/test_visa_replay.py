"""Hand-written vISA that applies an op to a value without it is refused at the op's own line, with the
operand kinds named (not an AttributeError from the replay)."""

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
