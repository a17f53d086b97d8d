"""`python -m furiosa_opt.sim` on hostile binaries and inputs, each under a 1 GiB address-space limit set in
the child (`resource.setrlimit(RLIMIT_AS)`): the issue's three memory exhaustions (an input read to EOF
from /dev/zero, a first DMA loop of 10⁹ iterations, a buffer of 2⁶⁰ bytes) end in one line and exit 1,
quickly; the host-memory budget and its variable; inputs read by size; a deadlocking EDF writes nothing."""

import json

import pytest
from hostile.support import GIB, PYTHON, Done, good_edf, one_line_error, rewrite, run

KERNEL = "base_template.kernel.constant_add_kernel.constant_add_kernel"
INPUT_BYTES = 8192  # constant_add's one argument: 2048 i32
TIMINGS: dict[str, float] = {}


def simulate(tmp_path, edf: bytes, *inputs: str, limit: int | None = GIB, **env: str) -> Done:
    (tmp_path / "k.edf").write_bytes(edf)
    (tmp_path / "in.bin").write_bytes(bytes(range(256)) * (INPUT_BYTES // 256))
    args = [PYTHON, "-m", "furiosa_opt.sim", "k.edf", *(inputs or ["in.bin"]), "--out", "out.bin"]
    return run(args, tmp_path, limit=limit, **env)


def first_loop(size: int):
    """The first DMA's loop run `size` times over the same bytes (strides 0): every address stays inside its
    buffer, so before the reader checked loop counts the simulator copied all of them."""
    return lambda body: body["streams"]["tdma"][0]["dma"]["loops"][0].update(size=size, src=0, dst=0)


def buffer_bytes(size: int):
    return lambda body: body["buffers"][0].update(bytes=size)


@pytest.mark.parametrize(
    ("case", "edit", "inputs", "fragments"),
    [
        ("/dev/zero as an input", None, ["/dev/zero"], ["/dev/zero", "argument input is 8192 bytes", "holds more"]),
        ("a first DMA loop of 10^9", first_loop(10**9), [], ["malformed EDF", "loops[0].size", "command 1 (to_dm)",
                                                             "1000000000 iterations", "65536"]),
        ("a buffer of 2^60 bytes", buffer_bytes(1 << 60), [], ["malformed EDF", "body.buffers[0].bytes",
                                                               "1152921504606846976 bytes", "HBM of 1 chip"]),
    ],
)  # fmt: skip
def test_the_issue_exhaustions_end_in_one_line_under_a_1_gib_limit(tmp_path, case, edit, inputs, fragments):
    edf = good_edf() if edit is None else rewrite(good_edf(), edit)
    done = simulate(tmp_path, edf, *inputs)
    line = one_line_error(done, *fragments)
    assert KERNEL in line
    assert not (tmp_path / "out.bin").exists()
    assert done.seconds < 30, f"{case} took {done.seconds:.1f} s"
    TIMINGS[case] = done.seconds
    print(f"{case}: exit {done.code} after {done.seconds:.2f} s under a 1 GiB address-space limit: {line}")


def test_the_good_edf_runs_under_the_same_limit(tmp_path):
    done = simulate(tmp_path, good_edf())
    assert done.code == 0, done.text
    expected = (int.from_bytes(bytes(range(256))[i : i + 4], "little") + 1 for i in range(0, 256, 4))
    got = (tmp_path / "out.bin").read_bytes()
    assert [int.from_bytes(got[i : i + 4], "little") for i in range(0, 256, 4)] == list(expected)


def test_inputs_are_read_by_their_buffer_size(tmp_path):
    (tmp_path / "short.bin").write_bytes(bytes(INPUT_BYTES - 1))
    (tmp_path / "long.bin").write_bytes(bytes(INPUT_BYTES + 1))
    one_line_error(simulate(tmp_path, good_edf(), "short.bin"), "short.bin", "is 8192 bytes, the file holds 8191")
    one_line_error(simulate(tmp_path, good_edf(), "long.bin"), "long.bin", "is 8192 bytes, the file holds 8193")
    one_line_error(simulate(tmp_path, good_edf(), "."), "Is a directory")
    one_line_error(simulate(tmp_path, good_edf(), "missing.bin"), "missing.bin", "No such file")
    done = run(["sh", "-c", f"head -c 100 /dev/zero | {PYTHON} -m furiosa_opt.sim k.edf /dev/stdin --out o.bin"],
               tmp_path)  # fmt: skip
    one_line_error(done, "/dev/stdin", "the file ends after 100")


def test_a_valid_edf_over_the_budget_is_refused_before_allocating(tmp_path):
    """40 GiB of DRAM fits the HBM (the reader accepts it) but not the budget; the variable and the option
    set the budget, and a bad value is a usage error."""
    big = rewrite(
        good_edf(), lambda b: (b["buffers"][0].update(bytes=40 * GIB), b["arguments"][0].update(bytes=40 * GIB))
    )
    line = one_line_error(simulate(tmp_path, big), KERNEL, "needs about", "budget")
    budget = int(line.split("over the ")[1].split("-byte")[0])
    assert budget <= GIB // 2  # the default: at most half the address-space limit
    line = one_line_error(simulate(tmp_path, good_edf(), FURIOSA_OPT_SIM_MEMORY="64K"), "over the 65536-byte budget")
    assert "needs about" in line
    done = simulate(tmp_path, good_edf(), "in.bin", FURIOSA_OPT_SIM_MEMORY="lots")
    one_line_error(done, "FURIOSA_OPT_SIM_MEMORY", "is not a size", code=2)
    args = [PYTHON, "-m", "furiosa_opt.sim", "k.edf", "in.bin", "--out", "o.bin", "--memory-budget", "0"]
    done = run(args, tmp_path)
    assert done.code == 2 and "--memory-budget" in done.stderr and "is not a size" in done.stderr


def test_running_out_of_memory_below_the_budget_is_one_line(tmp_path):
    """A budget set above what the process may allocate: the allocation fails, and says so in one line."""
    big = rewrite(
        good_edf(), lambda b: (b["buffers"][0].update(bytes=2 * GIB), b["arguments"][0].update(bytes=2 * GIB))
    )
    (tmp_path / "big.bin").write_bytes(b"")
    done = simulate(tmp_path, big, "big.bin", FURIOSA_OPT_SIM_MEMORY="8G")
    one_line_error(done, "big.bin", "is 2147483648 bytes, the file holds 0")  # refused before reading it
    with (tmp_path / "big.bin").open("wb") as handle:
        handle.truncate(2 * GIB)  # sparse: no disk used
    done = simulate(tmp_path, big, "big.bin", FURIOSA_OPT_SIM_MEMORY="8G")
    one_line_error(done, KERNEL, "ran out of memory")
    assert not (tmp_path / "out.bin").exists()


def test_a_deadlocking_edf_is_refused_and_writes_no_output(tmp_path):
    def deadlock(body):
        body["streams"]["main"][0]["waits"] = [7]  # main's sync waits for tdma's last DMA, which waits for main

    done = simulate(tmp_path, rewrite(good_edf(), deadlock))
    one_line_error(done, KERNEL, "body.streams.main[0].waits", "command 3 (sync) waits for command 7", "deadlock")
    assert not (tmp_path / "out.bin").exists()


def test_the_trace_and_outputs_follow_a_successful_run_only(tmp_path):
    args = [PYTHON, "-m", "furiosa_opt.sim", "k.edf", "in.bin", "--out", "out.bin", "--trace", "t.json"]
    (tmp_path / "k.edf").write_bytes(rewrite(good_edf(), buffer_bytes(1 << 60)))
    (tmp_path / "in.bin").write_bytes(bytes(INPUT_BYTES))
    one_line_error(run(args, tmp_path), "malformed EDF")
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "out.bin").exists()
    (tmp_path / "k.edf").write_bytes(good_edf())
    assert run(args, tmp_path).code == 0
    assert json.loads((tmp_path / "t.json").read_text())["simulated"] is True


def test_an_engine_config_that_would_run_code_is_refused(tmp_path):
    """Text where a Vector Engine op's code belongs is refused unread; a mapping `{…}`, which its parser
    would evaluate, is refused from a file."""
    marker = tmp_path / "pwned"

    def op(body):
        exec_command = next(c for c in body["streams"]["main"] if c["kind"] == "exec")
        stage = next(e for e in exec_command["engines"] if e["stage"] == "vector_fxp")
        escape = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'catch_warnings'][0]()"
        stage["op"] = f"FpBinaryOp.MulF({escape}._module.__builtins__['open']('{marker}', 'w'))"

    def mapping(body):
        body["buffers"][0]["levels"][1] = f"A # {{open('{marker}', 'w') and 2048}}"

    for edit, fragment in ((op, "fields are integers"), (mapping, "Python expression")):
        one_line_error(simulate(tmp_path, rewrite(good_edf(), edit)), "malformed EDF", fragment)
        assert not marker.exists()


def test_control_characters_in_an_edf_are_refused_not_echoed(tmp_path):
    evil = "\x1b]0;owned\x07\x1b[2J"
    done = simulate(tmp_path, rewrite(good_edf(), lambda b: b["streams"]["main"][1].update(opcode=evil)))
    line = one_line_error(done, "control character")
    assert "\x1b" not in done.stderr and "\\x1b" in line
