"""`furiosa-opt compile`: select kernels, run the compiler's stages, report like cargo."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from furiosa_opt.cli.workspace import WorkspaceError, kernels, locate, select
from furiosa_opt.compiler import lir, visa
from furiosa_opt.compiler.dfg import dump_dfg
from furiosa_opt.compiler.diagnostics import Diagnostic
from furiosa_opt.compiler.driver import Compiled, compile_kernel, compile_visa


class Reporter:
    """Human lines on stderr, or one JSON object per line on stdout."""

    def __init__(self, json_format: bool):
        self.json = json_format
        self.color = not json_format and sys.stderr.isatty() and "NO_COLOR" not in os.environ

    def diagnostic(self, diagnostic: Diagnostic) -> None:
        if self.json:
            print(diagnostic.to_json(), flush=True)
        else:
            print(diagnostic.rendered(self.color) + "\n", file=sys.stderr, flush=True)

    def status(self, verb: str, text: str, **record: object) -> None:
        if self.json:
            print(json.dumps({"reason": verb.lower().replace(" ", "-"), "message": text, **record}, sort_keys=True))
        else:
            print(f"{verb:>12} {text}", file=sys.stderr, flush=True)


def _write(path: Path, data: bytes) -> None:
    """Atomically: stage next to the target, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as handle:
        handle.write(data)
        staged = Path(handle.name)
    staged.replace(path)


def _filtered(found: list, filters: list[str], report: Reporter) -> list:
    if not filters:
        return found
    needles = [f.replace("::", ".") for f in filters]
    for original, needle in zip(filters, needles, strict=True):
        if not any(needle in k.identity for k in found):
            report.status("Warning", f"filter `{original}` matched no kernel", filter=original)
    return [k for k in found if any(n in k.identity for n in needles)]


def run_compile(options: argparse.Namespace) -> int:
    report = Reporter(options.message_format == "json")
    dumps = [d for d in (options.dump_visa, options.dump_dfg, options.dump_ir, options.dump_graph) if d is not None]
    if options.visa is not None:
        results = [compile_visa(options.visa)]
    else:
        try:
            workspace = locate(Path.cwd())
            packages = select(workspace, options.package)
        except WorkspaceError as error:
            report.diagnostic(error.diagnostic)
            return 1
        found, root_of = [], {}
        for package in packages:
            package_kernels, problems = kernels(package)
            for problem in problems:
                report.diagnostic(problem)
            if problems:
                return 1
            found += package_kernels
            root_of |= {k.identity: package.root for k in package_kernels}
        selected = _filtered(found, options.filters, report)
        if not selected:
            report.status("Error", "no kernel selected" + (f" (of {len(found)})" if found else ""))
            return 1
        if dumps and len(selected) != 1:
            names = "\n".join(f"    {k.identity}" for k in selected)
            report.status("Error", f"dump flags need exactly one kernel, {len(selected)} match:\n{names}")
            return 1
        results = []
        for kernel in selected:
            results.append(compile_kernel(kernel, root_of[kernel.identity]))
    return _finish(results, options, report)


def _finish(results: list[Compiled], options: argparse.Namespace, report: Reporter) -> int:
    failed = 0
    for result in results:
        for diagnostic in result.diagnostics:
            report.diagnostic(diagnostic)
        if not result.ok:
            failed += 1
            report.status("Failed", result.identity, kernel=result.identity, success=False)
            continue
        ops, commands = len(result.visa.ops), len(result.lir.commands)
        seconds = sum(result.seconds.values())
        report.status(
            "Compiled",
            f"{result.identity} ({ops} vISA ops → {commands} LIR commands, {seconds:.3f} s)",
            kernel=result.identity,
            success=True,
            ops=ops,
            commands=commands,
        )
        if options.dump_visa is not None:
            _write(options.dump_visa, visa.print_kernel(result.visa).encode())
        if options.dump_dfg is not None:
            _write(options.dump_dfg, dump_dfg(result.visa))
        if options.dump_ir is not None:
            _write(options.dump_ir, lir.dump(result.lir))
        if options.dump_graph is not None:
            _write(options.dump_graph, json.dumps(lir.graph(result.lir), indent=1, sort_keys=True).encode())
    summary = f"{len(results) - failed} kernel(s) compiled, {failed} failed"
    report.status("Finished" if not failed else "Error", summary, compiled=len(results) - failed, failed=failed)
    return 1 if failed else 0
