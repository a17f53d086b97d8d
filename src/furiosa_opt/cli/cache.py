"""`furiosa-opt cache ls|explain|verify|clean`: what the per-kernel cache holds and why it is stale.

`verify` checks each artifact against its record and its file name (`cache.verify`) and counts what is
wrong; `clean` removes the selected kernels' artifacts, `clean --orphans` those of kernels that no longer
exist in the selected packages (and nothing else). Every path printed comes from a checked identity.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from furiosa_opt.cli.compile import Reporter, Target, filtered, reported_targets, selection
from furiosa_opt.compiler import cache
from furiosa_opt.files import printable


def run_cache(options: argparse.Namespace) -> int:
    report = Reporter(False)
    selected = selection(options.package, report)
    if selected is None:
        return 1
    out, packages = selected
    found, unreadable = reported_targets(packages, report)
    imports, identities = [i for p in packages for i in p.imports], {t.source.identity for t in found}
    if getattr(options, "orphans", False):
        if options.action != "clean":
            print("error: --orphans goes with `cache clean`", file=sys.stderr)
            return 2
        if unreadable:  # a module that does not parse may define kernels: its artifacts are not orphans
            print("error: some modules cannot be read, so which kernels exist is not known", file=sys.stderr)
            return 1
        status = _guarded(lambda: _clean_orphans(out, imports, identities))
        return 1 if status is None else status
    chosen = filtered(found, options.filters, report)
    problems = _guarded(lambda: sum(_one(options.action, target, out) for target in chosen))
    if problems is None:
        return 1
    if options.action == "clean":
        for folder in {out / t.source.identity.split(".")[0] for t in chosen}:
            _remove_if_empty(folder)
        print(f"removed the artifacts of {len(chosen)} kernel(s) from {out}")
    if options.action == "verify":
        stray = cache.orphans(out, [i for p in packages for i in p.imports], {t.source.identity for t in found})
        if stray:
            print(f"note: {len(stray)} artifact file(s) of kernels that no longer exist (remove them with "
                  "`furiosa-opt cache clean --orphans`)", file=sys.stderr)  # fmt: skip
        print(f"verified {len(chosen)} artifact(s): {problems} problem(s)", file=sys.stderr)
    return 1 if problems else 0


def _guarded(action):
    """The action's result, or None once its one-line error (an artifact path refused, a file that cannot
    be read or removed) is printed."""
    try:
        return action()
    except (cache.ArtifactError, OSError) as error:
        where = f"{error.filename}: " if getattr(error, "filename", None) else ""
        print(f"error: {printable(where + (getattr(error, 'strerror', None) or str(error)))}", file=sys.stderr)
        return None


def _one(action: str, target: Target, out: Path) -> int:
    """Do `action` for one kernel; the number of problems found (verify)."""
    identity = target.source.identity
    edf_path, record_path = cache.paths(out, identity)
    if action == "clean":
        for path in (edf_path, record_path):
            path.unlink(missing_ok=True)
        return 0
    record = cache.read_record(record_path)
    if action == "verify":
        problems, notes = cache.verify(identity, edf_path, record_path)
        for text in problems:
            print(printable(f"{identity}: {text}"), file=sys.stderr)  # records and EDFs are files: escaped
        for text in notes:
            print(printable(f"{identity}: note: {text}"), file=sys.stderr)
        return len(problems)
    state = cache.artifact_state(edf_path, record)
    if action == "ls":
        size = edf_path.stat().st_size if edf_path.is_file() else 0
        print(printable(f"{identity}  {size:>8} B  {edf_path}  [{'ok' if state is None else state}]"))
    else:
        data = cache.data_files(record)
        key = cache.fast_key(target.source, target.package.root, target.package.source, data)
        causes = cache.explain(key, record, edf_path)
        print(printable(f"{identity}: " + ("up to date" if not causes else "; ".join(causes))))
    return 0


def _clean_orphans(out: Path, imports: list[str], identities: set[str]) -> int:
    stray = cache.orphans(out, imports, identities)
    for path in stray:
        path.unlink(missing_ok=True)
    for name in imports:
        _remove_if_empty(out / name)
    kernels = len({path.name.rsplit(".", 1)[0] for path in stray})
    print(f"removed {len(stray)} artifact file(s) of {kernels} kernel(s) that no longer exist from {out}")
    return 0


def _remove_if_empty(folder: Path) -> None:
    if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()
