"""`furiosa-opt cache ls|explain|verify|clean`: what the per-kernel cache holds and why it is stale."""

from __future__ import annotations

import argparse
import shutil
import sys

from furiosa_opt.cli.compile import Reporter, filtered, reported_targets, selection
from furiosa_opt.compiler import cache


def run_cache(options: argparse.Namespace) -> int:
    report = Reporter(False)
    selected = selection(options.package, report)
    if selected is None:
        return 1
    out, packages = selected
    found, _ = reported_targets(packages, report)
    chosen = filtered(found, options.filters, report)
    problems = 0
    for target in chosen:
        identity = target.source.identity
        edf_path, record_path = cache.paths(out, identity)
        record = cache.read_record(record_path)
        if options.action == "clean":
            for path in (edf_path, record_path):
                path.unlink(missing_ok=True)
            continue
        state = cache.artifact_state(edf_path, record)
        if options.action == "ls":
            size = edf_path.stat().st_size if edf_path.is_file() else 0
            status = "ok" if state is None else state
            print(f"{identity}  {size:>8} B  {edf_path}  [{status}]")
        elif options.action == "verify":
            if state is not None and record is not None:
                problems += 1
                print(f"{identity}: {state}", file=sys.stderr)
        else:
            key = cache.fast_key(target.source, target.package.root, target.package.source)
            causes = cache.explain(key, record, edf_path)
            print(f"{identity}: " + ("up to date" if not causes else "; ".join(causes)))
    if options.action == "clean":
        for folder in {cache.paths(out, t.source.identity)[0].parent for t in chosen}:
            if folder.is_dir() and not any(folder.iterdir()):
                shutil.rmtree(folder)
        print(f"removed the artifacts of {len(chosen)} kernel(s) from {out}")
    if options.action == "verify":
        print(f"verified {len(chosen)} artifact(s): {problems} problem(s)", file=sys.stderr)
    return 1 if problems else 0
