"""No text becomes code in src/: no call of `eval` or `exec`, and no `compile` to code that could run, anywhere
in the package, functions included — with one exception, named here with its reason.

Readers of text (vISA, EDF engine configs, schedules, `pyproject.toml`) build their values from what they
parse; `vector/ops/text.py` walks an op value's syntax tree instead of evaluating it.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# (file under src/, enclosing function) -> why it may evaluate text.
ALLOWED = {
    ("furiosa_opt/mapping/parse.py", "_Parser.evaluate"): (
        "a mapping's `{…}` escape is the language's syntax for a Python expression in the kernel's own module "
        '(`m["I / {TILE}"]`); it is evaluated only with that module\'s namespace, and text from a file never '
        "reaches it (files.expression_problem refuses braces other than padding markers)"
    ),
}
RUNNABLE_MODES = {"exec", "eval", "single"}


def _is_builtin(func: ast.expr, *names: str) -> bool:
    """`eval(…)`, or `builtins.eval(…)` / `__builtins__.eval(…)`."""
    if isinstance(func, ast.Name):
        return func.id in names
    return (
        isinstance(func, ast.Attribute)
        and func.attr in names
        and isinstance(func.value, ast.Name)
        and func.value.id in ("builtins", "__builtins__")
    )


def _compiles_code(call: ast.Call) -> bool:
    """A builtin `compile` whose mode is one that gives runnable code, or a mode that is not a literal."""
    if not _is_builtin(call.func, "compile"):
        return False
    mode = next((k.value for k in call.keywords if k.arg == "mode"), call.args[2] if len(call.args) > 2 else None)
    return not (isinstance(mode, ast.Constant) and mode.value not in RUNNABLE_MODES)


class _Finder(ast.NodeVisitor):
    """Each call that evaluates text, with the qualified name of the function it sits in."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: list[tuple[str, int]] = []

    def _scoped(self, node: ast.AST) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        if _is_builtin(node.func, "eval", "exec") or _compiles_code(node):
            self.found.append((".".join(self.scope) or "<module>", node.lineno))
        self.generic_visit(node)


def evaluating_calls() -> dict[tuple[str, str], list[int]]:
    calls: dict[tuple[str, str], list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        finder = _Finder()
        finder.visit(ast.parse(path.read_text(), filename=str(path)))
        for scope, line in finder.found:
            calls.setdefault((path.relative_to(SRC).as_posix(), scope), []).append(line)
    return calls


def test_no_text_is_evaluated_outside_the_one_documented_place():
    calls = evaluating_calls()
    unexpected = {
        f"{file}:{lines} in {scope}" for (file, scope), lines in calls.items() if (file, scope) not in ALLOWED
    }
    assert not unexpected, f"eval/exec/compile of text in src/: {sorted(unexpected)}"
    assert all(len(lines) == 1 for lines in calls.values()), f"one evaluating call per allowed place: {calls}"
    assert set(calls) == set(ALLOWED), f"an allowed place no longer evaluates text; drop it from ALLOWED: {calls}"


def test_the_finder_sees_every_spelling():
    source = """
eval("1")
def f():
    exec("x = 1")
class C:
    def g(self, mode):
        builtins.eval("1"); compile("1", "<s>", "eval"); compile("1", "<s>", mode=mode)
        compile("1", "<s>", mode="exec"); re.compile("a"); ast.literal_eval("1"); self.eval("1")
"""
    finder = _Finder()
    finder.visit(ast.parse(source))
    assert finder.found == [("<module>", 2), ("f", 4), ("C.g", 7), ("C.g", 7), ("C.g", 7), ("C.g", 8)]
