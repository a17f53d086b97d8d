"""`furiosa-opt tune` end to end on scaffolded copies of the base template, whose gemm declares a search
space (`space(tile_i=..., tile_j=..., cluster=...)`). The oracle is brute force through the ordinary
path: for every point, a tuned-choices file written by hand and `furiosa-opt compile --dump-schedule`,
whose schedule gives the makespan or whose error gives the rule."""

import json
import os
import re
import subprocess
import sys
import uuid
from itertools import product
from pathlib import Path

import pytest

from furiosa_opt.analysis.schedule import load_schedule
from furiosa_opt.cli.new import create

TOOL = Path(sys.executable).with_name("furiosa-opt")
KERNEL = "gemm_kernel"
# A small space: tile_i = 16 with tile_j = 32 puts 512 slices on the grid and is refused (slice-size).
SMALL = {"tile_i": [32, 16], "tile_j": [32, 64, 128], "cluster": ["1 # 2"]}


def scaffold(tmp_path: Path, space: dict | None = SMALL) -> Path:
    """A copy of the base template; its gemm's space replaced by `space` (None keeps the template's)."""
    root = create(f"tu_{uuid.uuid4().hex[:8]}", tmp_path)
    if space is not None:
        module = module_of(root)
        text = module.read_text()
        declared = re.search(r"^choices = space\(.*\)$", text, re.M)
        assert declared, "the base template's gemm declares its space on one line"
        arguments = ", ".join(f"{name}={values!r}" for name, values in space.items())
        module.write_text(text.replace(declared.group(0), f"choices = space({arguments})"))
    return root


def module_of(root: Path) -> Path:
    return next(root.glob("src/*/kernel/gemm_kernel.py"))


def tool(root: Path, *args: str, out: str = "out") -> tuple[int, str]:
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(root.parent / out), "COLUMNS": "200"}
    done = subprocess.run([str(TOOL), *args], cwd=root, env=environment, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def study_of(root: Path, out: str = "out") -> list[dict]:
    path = next((root.parent / out / "tune").glob("*gemm_kernel/study.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def brute_force(root: Path, space: dict) -> dict[tuple, int | str]:
    """Each point's makespan (or refusal rule) through `furiosa-opt compile` with a hand-written tuned file."""
    tuned = module_of(root).with_name("gemm_kernel.tuned.json")
    found = {}
    for values in product(*space.values()):
        point = dict(zip(space, values, strict=True))
        tuned.write_text(json.dumps({"choices": point}))
        schedule = root.parent / "brute.schedule.json"
        code, text = tool(root, "compile", KERNEL, "--dump-schedule", str(schedule), out="brute")
        if code == 0:
            found[values] = load_schedule(schedule).makespan
        else:
            found[values] = re.search(r"error\[([a-z0-9-]+)\]", text).group(1)
    tuned.unlink()
    return found


def key(choices: dict, space: dict) -> tuple:
    return tuple(choices[name] for name in space)


def test_a_grid_search_finds_the_brute_force_best_and_recompiling_reproduces_it(tmp_path):
    root = scaffold(tmp_path)
    expected = brute_force(root, SMALL)
    assert expected[(32, 32, "1 # 2")] == 72359  # the defaults: today's layout
    assert expected[(16, 32, "1 # 2")] == "slice-size"
    best_value = min(v for v in expected.values() if isinstance(v, int))
    best_point = next(p for p, v in expected.items() if v == best_value)
    # The default's 64-byte result rows leave every HBM write part of a 256-byte unit (read-modify-write,
    # the book's ~50×); tile_j = 128 writes whole units, and the search moves there.
    assert best_point[1] == 128 and expected[(32, 32, "1 # 2")] > 7 * best_value

    code, text = tool(root, "tune", KERNEL, "--trials", "20", "--workers", "2")
    assert code == 0, text
    header, *trials = study_of(root)
    assert header["space"] == SMALL and header["sampler"] == "grid" and header["objective"] == "static"
    assert sorted(t["number"] for t in trials) == list(range(len(expected)))  # each point once, no more
    first = next(t for t in trials if t["number"] == 0)  # the study lists trials in finishing order
    assert first["choices"] == {"tile_i": 32, "tile_j": 32, "cluster": "1 # 2"}  # trial 0: the defaults
    for record in trials:
        wanted = expected[key(record["choices"], SMALL)]
        if isinstance(wanted, int):
            assert record["state"] == "ok" and record["makespan"] == wanted, record
            assert record["lower_bound"] <= record["makespan"] and record["ratio"] >= 1
        else:  # refused with its rule and the kernel's source line, not as an error
            assert record["state"] == "refused" and record["rule"] == wanted, record
            assert re.search(r"gemm_kernel\.py:\d+\)$", record["message"]), record
    assert "defaults (today's layout): 72359 cycles" in text
    assert f"best: {best_value} cycles" in text and "best trials (static objective)" in text

    tuned = json.loads(module_of(root).with_name("gemm_kernel.tuned.json").read_text())
    assert key(tuned["choices"], SMALL) == best_point and tuned["makespan"] == best_value
    schedule = tmp_path / "best.schedule.json"
    code, text = tool(root, "compile", KERNEL, "--dump-schedule", str(schedule))
    assert code == 0 and load_schedule(schedule).makespan == best_value, text
    code, text = tool(root, "test", "-q", "-p", "no:cacheprovider", "tests/test_gemm.py")
    assert code == 0 and "2 passed" in text, text  # the tuned layout still computes the oracle's numbers


def test_the_tuned_file_is_part_of_the_kernels_cache_key(tmp_path):
    root = scaffold(tmp_path)
    tuned = module_of(root).with_name("gemm_kernel.tuned.json")
    code, text = tool(root, "compile", KERNEL)
    assert code == 0 and "makespan 72359 cycles" in text, text
    tuned.write_text(json.dumps({"choices": {"tile_j": 128}}))
    code, text = tool(root, "compile", KERNEL)
    assert code == 0 and "Compiled" in text and "makespan 72359" not in text, text
    tuned.unlink()
    code, text = tool(root, "compile", KERNEL)
    assert code == 0 and "makespan 72359 cycles" in text, text


def test_resume_skips_the_finished_trials(tmp_path):
    root = scaffold(tmp_path)
    code, text = tool(root, "tune", KERNEL, "--trials", "2", "--workers", "1")
    assert code == 0, text
    _, *first = study_of(root)
    assert len(first) == 2 and first[0]["number"] == 0
    assert first[0]["choices"] == {"tile_i": 32, "tile_j": 32, "cluster": "1 # 2"}  # trial 0: the defaults

    code, text = tool(root, "tune", KERNEL, "--trials", "20", "--workers", "2", "--resume")
    assert code == 0, text
    _, *trials = study_of(root)
    assert trials[:2] == first  # kept as they were, not measured again
    assert len(trials) == 6 and sorted(t["number"] for t in trials) == list(range(6))
    assert len({key(t["choices"], SMALL) for t in trials}) == 6
    trial_dirs = sorted(p.name for p in next((root.parent / "out" / "tune").iterdir()).glob("trial-*"))
    assert trial_dirs == [f"trial-{n:05d}" for n in range(6)]  # six compiles in all

    code, text = tool(root, "tune", KERNEL, "--resume", "--sampler", "tpe")  # nothing left to measure
    assert code == 0 and "6 trials in the study" in text, text
    assert study_of(root)[1:] == trials

    code, text = tool(root, "tune", KERNEL, "--resume", "--objective", "simulated")
    assert code == 1 and "the study's objective is 'static'" in text and "Traceback" not in text, text


def test_the_simulated_objective_checks_every_candidate_against_the_cpu_backend(tmp_path):
    space = {"tile_i": [32], "tile_j": [32, 128], "cluster": ["1 # 2", "I / 256"]}
    root = scaffold(tmp_path, space)
    code, text = tool(root, "tune", KERNEL, "--objective", "simulated", "--workers", "2")
    assert code == 0, text
    _, *trials = study_of(root)
    ok = [t for t in trials if t["state"] == "ok"]
    refused = [t for t in trials if t["state"] == "refused"]
    assert len(ok) + len(refused) == 4 and len(ok) >= 2, trials
    for record in ok:  # the bit-identical simulator reproduces the compiler's schedule here
        assert record["simulated"] == record["makespan"], record
    assert "best trials (simulated objective)" in text


WRONG = """
import json, sys
from furiosa_opt.cli.compile import Reporter, filtered, reported_targets, selection
from furiosa_opt.tune import trial

trial._outputs = lambda kernel, backend, seed: [b"cpu" if backend == "cpu" else b"npu"]  # a wrong candidate
out, packages = selection([], Reporter(False))
(target,) = filtered(reported_targets(packages, Reporter(False))[0], ["gemm_kernel"], Reporter(False))
request = trial.Request(target.package, target.source, {"tile_i": 32, "tile_j": 32, "cluster": "1 # 2"},
                        out / "wrong", "simulated")
print(json.dumps(trial.run(request)))
"""


def test_a_candidate_whose_outputs_differ_from_the_cpu_backend_is_wrong(tmp_path):
    root = scaffold(tmp_path)
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(tmp_path / "out")}
    done = subprocess.run([sys.executable, "-c", WRONG], cwd=root, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.splitlines()[-1])
    assert record["state"] == "wrong" and record["simulated"] > 0, record
    assert record["message"] == "output 0 differs between the simulator and the CPU backend on random inputs (seed 0)"


def test_bad_requests_are_one_line_errors(tmp_path):
    root = scaffold(tmp_path)
    code, text = tool(root, "tune", "gemv_kernel")
    assert code == 1 and "declares no search space (`choices = space(name=[...])`)" in text, text
    code, text = tool(root, "tune", "kernel")
    assert code == 1 and "tune needs exactly one kernel, 5 match `kernel`" in text, text
    code, text = tool(root, "tune", KERNEL, "--address", "auto")
    assert code == 2 and "--address names a Ray cluster: add --executor ray" in text, text
    code, text = tool(root, "tune", KERNEL, "--executor", "ray", "--address", "127.0.0.1:1")  # nothing listens
    assert code == 1 and "cannot reach a Ray cluster at 127.0.0.1:1: Connection refused" in text, text
    code, text = tool(root, "tune", KERNEL, "--executor", "ray", "--address", "bogus")
    assert code == 1 and "--address 'bogus' is not auto, host:port or ray://host:port" in text, text
    code, text = tool(root, "tune", KERNEL, "--trials", "0")
    assert code == 2 and "'0' is not a positive integer" in text, text
    tuned = module_of(root).with_name("gemm_kernel.tuned.json")
    tuned.write_text(json.dumps({"choices": {"tile_i": 48}}))
    code, text = tool(root, "compile", KERNEL)
    assert code == 1 and "error[tune-choices]" in text and "sets `tile_i` = 48" in text, text
    assert "tune again or delete the file" in text and "Traceback" not in text
    tuned.write_text("{")
    code, text = tool(root, "compile", KERNEL)
    assert code == 1 and "error[tune-choices]" in text and "not JSON" in text and "Traceback" not in text, text
    for text in (tool(root, "tune", KERNEL)[1], tool(root, "compile", KERNEL)[1]):
        assert "Traceback" not in text


@pytest.mark.parametrize(
    ("declaration", "problem"),
    [
        ("space()", "space() needs at least one named choice"),
        ("space(tile=[])", "choice `tile` needs a non-empty list of values"),
        ("space(tile=[32, 32])", "choice `tile` lists a value twice: [32, 32]"),
        ("space(tile=[32, 1.5])", "choice `tile`: 1.5 is not an integer or a mapping string"),
        ("space(tile=[True])", "choice `tile`: True is not an integer or a mapping string"),
        ("space(options=[1])", "`options` cannot name a choice"),
    ],
)
def test_a_bad_space_is_refused_at_its_line(tmp_path, declaration, problem):
    from furiosa_opt.diagnostics import VerifyError

    module = tmp_path / "spaced.py"
    module.write_text(f"from furiosa_opt.tune import space\n\nchoices = {declaration}\n")
    with pytest.raises(VerifyError) as raised:
        exec(compile(module.read_text(), str(module), "exec"), {"__name__": "spaced", "__file__": str(module)})
    assert raised.value.rule == "tune-space" and problem in str(raised.value)
    assert (raised.value.location.file, raised.value.location.line) == (str(module), 3)


def test_a_space_reads_its_defaults_then_its_tuned_file(tmp_path):
    from furiosa_opt.tune import space

    module = tmp_path / "spaced.py"
    namespace = {"__name__": "spaced_defaults", "__file__": str(module), "space": space}
    exec("choices = space(tile=[32, 64], split=['1 # 2', 'I / 256'])", namespace)
    choices = namespace["choices"]
    assert (choices.tile, choices.split, choices.source) == (32, "1 # 2", "defaults")
    assert choices.defaults == {"tile": 32, "split": "1 # 2"} and list(choices) == ["tile", "split"]
    with pytest.raises(AttributeError, match="the search space has no choice `tiles` \\(it has tile, split\\)"):
        _ = choices.tiles
    module.with_name("spaced.tuned.json").write_text(json.dumps({"choices": {"split": "I / 256"}}))
    exec("choices = space(tile=[32, 64], split=['1 # 2', 'I / 256'])", namespace)
    choices = namespace["choices"]
    assert (choices.tile, choices.split) == (32, "I / 256")
    assert choices.source == str(module.with_name("spaced.tuned.json"))


@pytest.mark.slow  # starts a Ray instance (~17 s): `make bench` runs it
def test_a_study_on_a_local_ray_instance_agrees_with_the_local_executor(tmp_path, monkeypatch):
    import ray

    from furiosa_opt.cli.compile import Reporter, filtered, reported_targets, selection
    from furiosa_opt.tune import search
    from furiosa_opt.tune.executors import LocalExecutor, RayExecutor

    root = scaffold(tmp_path)
    monkeypatch.chdir(root)
    report = Reporter(False)
    _, packages = selection([], report)
    (target,) = filtered(reported_targets(packages, report)[0], [KERNEL], report)
    settings = search.Settings(trials=20)
    local = LocalExecutor(2)
    try:
        by_process = search.tune(target.package, target.source, tmp_path / "local", local, settings)
    finally:
        local.close()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 << 20, log_to_driver=False)
    try:
        remote = RayExecutor()
        assert not remote.owned and remote.workers == 2  # it uses the instance this test started
        by_ray = search.tune(target.package, target.source, tmp_path / "ray", remote, settings)
    finally:
        ray.shutdown()

    def outcomes(study):
        return {key(t["choices"], SMALL): (t["state"], t.get("makespan"), t.get("rule")) for t in study.trials}

    assert len(by_ray.trials) == len(by_process.trials) == 6
    assert outcomes(by_ray) == outcomes(by_process)
    best_ray, best_local = by_ray.ranked()[0], by_process.ranked()[0]
    assert best_ray["choices"] == best_local["choices"] and best_ray["makespan"] == best_local["makespan"]
    assert best_local["makespan"] == min(t["makespan"] for t in by_process.trials if t["state"] == "ok")


def trial_workers() -> set[int]:
    """The processes of this machine that run a tuning trial (the forkserver preloads the trial module)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"furiosa_opt.tune.trial" in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def test_sigterm_stops_the_search_keeps_the_finished_trials_and_leaves_no_worker(tmp_path):
    import signal
    import time

    root = scaffold(tmp_path, space=None)  # the template's 18 points
    before = trial_workers()
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(tmp_path / "out")}
    command = subprocess.Popen([str(TOOL), "tune", KERNEL, "--workers", "2"], cwd=root, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    study = tmp_path / "out" / "tune"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(len(p.read_text().splitlines()) >= 3 for p in study.rglob("*.jsonl")):
        time.sleep(0.02)
    command.send_signal(signal.SIGTERM)
    stdout, stderr = command.communicate(timeout=120)  # a hang guard, not a speed check: a loaded CI machine is slow
    assert command.returncode == 143, stdout + stderr
    assert (
        stderr.strip().splitlines()[-1].strip().startswith("Error stopped by SIGTERM: the trials that finished are in")
    )
    assert "Traceback" not in stderr and "--resume" in stderr
    _, *trials = study_of(root)
    assert 2 <= len(trials) < 18 and all(t["state"] in ("ok", "refused") for t in trials)
    deadline = time.monotonic() + 10
    while trial_workers() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not trial_workers() - before, "a trial worker outlived the command"
    code, text = tool(root, "tune", KERNEL, "--workers", "2", "--resume")
    assert code == 0 and "18 trials in the study" in text, text


def test_the_examples_of_the_space_docstrings_run():
    import doctest

    from furiosa_opt.tune import choices

    result = doctest.testmod(choices)
    assert result.attempted >= 5 and result.failed == 0


def test_the_tpe_sampler_measures_as_many_distinct_points_as_asked(tmp_path):
    root = scaffold(tmp_path)
    code, text = tool(root, "tune", KERNEL, "--sampler", "tpe", "--trials", "4", "--workers", "2", "--seed", "3")
    assert code == 0, text
    header, *trials = study_of(root)
    assert header["sampler"] == "tpe" and len(trials) == 4
    assert len({key(t["choices"], SMALL) for t in trials}) == 4  # a point proposed twice is not measured twice
    first = next(t for t in trials if t["number"] == 0)
    assert key(first["choices"], SMALL) == (32, 32, "1 # 2")
