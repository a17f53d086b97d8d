"""The 64-access rule summed over the engines that hold a DM bank at once (`compiler.hazards`): the book's
figures on hand-made schedules, a traced kernel warned at its lines, and the CLI's warning severity and
`--deny warnings`."""

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from bank_starvation_kernels import J2, I, J, starving, under_the_limit

from furiosa_opt.cli.new import create
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.hazards import RULE, bank_starvation
from furiosa_opt.compiler.lir import DM_BASE, Buffer, Command, DmaWalk, Entry, Lir, Loop, Sequencer
from furiosa_opt.compiler.schedule import schedule

KERNELS = Path(__file__).resolve().parents[1] / "bank_starvation_kernels.py"
TOOL = Path(sys.executable).with_name("furiosa-opt")


def _buffer(name, memory="sram", address=0):
    return Buffer(name, f"%{name}", memory, "i32", ["1"], address, 1 << 16, 0, 0)


def _holding(index, context, source, target, accesses):
    """An exec command whose fetch reads 32 bytes `accesses` times, 128 bytes apart: every access holds
    the same 4 banks (0–3) of each slice."""
    fetch = Sequencer(source, 0, [Entry(accesses, 128, 1)], [Entry(8, 4, 1)], 32)
    return Command(index, context, "exec", index, "commit", f"k.py:{index}", [source], [target], fetch=fetch)


def _book_schedule(main_accesses, sub_accesses):
    """Main and sub holding bank 0 side by side while a DMA into DM runs: the book's schedule.md case."""
    buffers = [_buffer(n, address=i << 16) for i, n in enumerate("ABCDE")] + [_buffer("H", "dram")]
    dma = Command(2, "tdma", "dma", 2, "to_dm", "k.py:2", ["H"], ["E"],
                  dma=DmaWalk(0, DM_BASE + (4 << 16), 256, [Loop(64, 256, 256)]))  # fmt: skip
    commands = [_holding(0, "main", "A", "B", main_accesses), _holding(1, "sub", "C", "D", sub_accesses), dma]
    return schedule(Lir("k", 1, 8, buffers, commands, [], []))


@pytest.mark.parametrize(("main", "sub", "warned"), [(30, 35, True), (30, 20, False), (40, 23, True), (40, 22, False)])
def test_the_books_totals(main, sub, warned):
    """main 30 + sub 35 + DMA 1 = 66 starves, main 30 + sub 20 + DMA 1 = 51 is safe (schedule.md); the limit
    falls between a total of 63 and 64."""
    plan = _book_schedule(main, sub)
    starts = {s.costed.command.index: (s.start, s.end) for s in plan.slots}
    assert starts[0][0] < starts[1][1] and starts[1][0] < starts[0][1]  # they do run side by side
    warnings = bank_starvation(plan, [])
    assert [w.code for w in warnings] == ([RULE] if warned else [])
    if warned:
        assert f"{main} + {sub} consecutive accesses" in warnings[0].message
        assert f"{main + sub + 1} with the DMA's own" in warnings[0].message


def test_no_warning_without_a_dma_beside_them():
    plan = _book_schedule(30, 35)
    plan.slots = [s for s in plan.slots if s.costed.command.kind != "dma"]
    assert bank_starvation(plan, []) == []


def _line(text: str) -> int:
    """The line of `bank_starvation_kernels.py` that holds `text` (once)."""
    lines = [n for n, line in enumerate(KERNELS.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_traced_kernel_is_warned_at_the_lines_that_hold_the_bank():
    result = compile_kernel(starving)
    assert result.ok and result.edf is not None  # a warning does not refuse the kernel
    [warning] = result.diagnostics
    assert (warning.code, warning.level, warning.stage) == (RULE, "warning", "edf")
    runs = (I.size, J.size // 8)  # main: A's rows in a row; sub: B's rows 8 apart, one bank each time
    assert f"{runs[0]} + {runs[1]} consecutive accesses" in warning.message
    assert [(Path(s.file).name, s.line) for s in warning.spans] == [
        ("bank_starvation_kernels.py", _line(".commit(m[")),
        ("bank_starvation_kernels.py", _line(".to_trf(")),
        ("bank_starvation_kernels.py", _line("c_dm = c.to_dm(")),
    ]
    assert warning.rendered().startswith(f"warning[{RULE}]: DM bank starvation")
    assert "4,096-cycle acknowledgement window" in warning.rendered()


def test_under_the_limit_the_same_schedule_is_not_warned():
    result = compile_kernel(under_the_limit)
    assert result.ok and result.diagnostics == []
    assert I.size + J2.size // 8 + 1 < 64


@pytest.fixture
def package(tmp_path):
    """A scaffolded package holding only these kernels (`tunable` at its default, the starving `J` rows):
    the template's own kernel modules are removed, so that `check` and `build` compile three kernels."""
    name = f"bs_{uuid.uuid4().hex[:8]}"
    root = create(name, tmp_path)
    for module in (root / "src" / name / "kernel").glob("*_kernel.py"):
        module.unlink()
    shutil.copy(KERNELS, root / "src" / name / "starvation.py")
    return root


def tool(root: Path, *args: str, out: str) -> tuple[int, str, str]:
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(root.parent / out)}
    environment.pop("FURIOSA_OPT_BACKEND", None)
    done = subprocess.run([str(TOOL), *args], cwd=root, env=environment, capture_output=True, text=True)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_compile_reports_a_warning_and_deny_warnings_fails_it(package):
    out = f"out-{uuid.uuid4().hex[:6]}"
    code, stdout, _ = tool(package, "compile", "starving", "--message-format", "json", out=out)
    records = [json.loads(line) for line in stdout.splitlines()]
    warnings = [r for r in records if r.get("code") == RULE]
    assert code == 0 and [w["level"] for w in warnings] == ["warning"], stdout
    assert warnings[0]["rendered"].startswith("warning[dm-bank-starvation]")
    assert list((package.parent / out).rglob("*.starving.edf"))  # published

    code, _, err = tool(package, "compile", "starving", out=out)  # up to date: the warning again
    assert code == 0 and f"warning[{RULE}]" in err and "Fresh" in err, err
    code, _, err = tool(package, "compile", "starving", "--deny", "warnings", out=out)
    assert code == 1 and f"error[{RULE}]" in err and "`--deny warnings` turns this warning into an error" in err

    fresh = f"out-{uuid.uuid4().hex[:6]}"
    code, _, err = tool(package, "compile", "starving", "--deny", "warnings", out=fresh)
    assert code == 1 and f"error[{RULE}]" in err and "Failed" in err, err
    assert not list((package.parent / fresh).rglob("*.edf"))  # a denied warning publishes nothing
    code, _, err = tool(package, "compile", "under_the_limit", "--deny", "warnings", out=fresh)
    assert code == 0 and "warning[" not in err and "error[" not in err, err


def test_check_and_build_take_deny_warnings(package):
    out = f"out-{uuid.uuid4().hex[:6]}"
    code, _, err = tool(package, "check", out=out)  # `starving` and `tunable`, of the 3 kernels
    assert code == 0 and err.count(f"warning[{RULE}]") == 2 and "3 kernel(s) checked, 0 failed" in err, err
    code, _, err = tool(package, "check", "--deny", "warnings", out=out)
    assert code == 1 and err.count(f"error[{RULE}]") == 2 and "3 kernel(s) checked, 2 failed" in err, err
    code, _, err = tool(package, "build", "--deny=warnings", out=out)
    assert code == 1 and err.count(f"error[{RULE}]") == 2 and "2 failed" in err, err
    code, _, err = tool(package, "build", "--deny", "errors", out=out)
    assert code == 2 and "takes no arguments but `--deny warnings`" in err, err


def test_tune_refuses_the_starving_choice_and_keeps_the_other(package):
    out = f"out-{uuid.uuid4().hex[:6]}"
    code, stdout, err = tool(package, "tune", "tunable", "--workers", "1", out=out)
    study = next((package.parent / out / "tune").glob("*tunable/study.jsonl"))
    states = {
        tuple(r["choices"].items()): (r["state"], r.get("rule"))
        for r in map(json.loads, study.open())
        if "choices" in r
    }
    assert states[(("rows", "J"),)] == ("refused", RULE), states
    assert states[(("rows", "J2"),)] == ("ok", None), states
    tuned = json.loads(next(package.glob("src/*/starvation.tuned.json")).read_text())
    assert code == 0 and tuned["choices"] == {"rows": "J2"}, stdout + err
