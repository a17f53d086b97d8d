"""`read_edf` checks a binary against `arch` before anything is allocated: each rule refuses one damaged
field with one `EdfError` naming the kernel, the command (when there is one) and the field — and every
compiled kernel still reads. The writer refuses what the reader would."""

import dataclasses

import pytest
from example_kernels import KERNELS
from hostile import seed_kernels
from hostile.support import body_of, good_edf, rewrite

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import EdfError, read_edf, write_edf
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.programs import BY_NAME
from furiosa_opt.vector.codes import OPS
from furiosa_opt.vector.ops import FpUnaryOp

KERNEL = "base_template.kernel.constant_add_kernel.constant_add_kernel"


def refused(edit, *fragments: str, name: str = "constant_add") -> EdfError:
    with pytest.raises(EdfError) as caught:
        read_edf(rewrite(good_edf(name), edit))
    message = str(caught.value)
    assert isinstance(caught.value, FuriosaOptError) and "\n" not in message
    assert message.startswith(f"kernel {KERNEL}: malformed EDF: ") or name != "constant_add", message
    for fragment in fragments:
        assert fragment in message, message
    return caught.value


def dma(body, context="tdma", i=0):
    return body["streams"][context][i]


def exec_command(body):
    return next(c for c in body["streams"]["main"] if c["kind"] == "exec")


@pytest.mark.parametrize("kernel", [*KERNELS.values(), seed_kernels.memset_zero, seed_kernels.gather_rows,
                                    seed_kernels.pcopy_relayout, seed_kernels.kept_loop])  # fmt: skip
def test_every_compiled_kernel_reads(kernel):
    edf = read_edf(compile_kernel(kernel).edf)
    assert edf.identity == kernel.identity


def test_loops_packets_and_bytes_moved_within_the_hardware():
    refused(lambda b: dma(b)["dma"]["loops"][0].update(size=RNGD.max_entry_iterations + 1),
            "body.streams.tdma[0].dma.loops[0].size: command 1 (to_dm): 65537 iterations")  # fmt: skip
    refused(lambda b: dma(b)["dma"]["loops"][0].update(size=-1), "loops[0].size", "-1 iterations")
    refused(lambda b: dma(b)["dma"].update(packet=RNGD.dma_max_packet_bytes + 1), "dma.packet", "4097 bytes")
    refused(
        lambda b: dma(b)["dma"]["loops"].extend([{"dst": 0, "size": 1, "src": 0}] * 40),
        "dma.loops",
        "41 loops; a walk has at most 16",
    )
    # six loops of 65536 re-reading one packet: within every per-loop limit, far more than the target holds
    many = [{"dst": 0, "size": RNGD.max_entry_iterations, "src": 0}] * 6
    refused(lambda b: dma(b)["dma"].update(loops=many), "dma.loops", "moves", "into T1, which spans 16384")


def test_buffers_within_their_memory():
    refused(lambda b: b["buffers"][0].update(bytes=1 << 60), "body.buffers[0].bytes", "HBM of 1 chip")
    refused(lambda b: b["buffers"][1].update(bytes=RNGD.dm_bytes_per_slice + 8), "body.buffers[1].bytes", "SRAM")
    refused(lambda b: b["buffers"][1].update(address=-8), "body.buffers[1]", "must not be negative")
    refused(lambda b: b["buffers"][1].update(memory="l3"), "body.buffers[1].memory", "'l3' is not one of")
    refused(lambda b: b["buffers"][1].update(dtype="f128"), "body.buffers[1].dtype", "unknown element type")
    refused(lambda b: b["buffers"][1].update(region="full"), "body.buffers[1].region")
    refused(lambda b: b["buffers"][0].update(levels=[]), "body.buffers[0].levels", "chip level")
    refused(lambda b: b["buffers"][1].update(levels=["1", "1 # 2", "A / 8 # 256"]), "body.buffers[1].levels")
    refused(lambda b: b["arguments"][0].update(bytes=1 << 40), "body.arguments[0].bytes")
    refused(lambda b: b["arguments"][0].update(kind="pointer"), "body.arguments[0].kind")
    refused(lambda b: b["outputs"][0].update(buffer="T1"), "body.outputs[0].buffer", "in sram")


def test_addresses_inside_their_memory():
    refused(lambda b: dma(b)["dma"].update(dst_base=0x10), "dma.dst_base", "command 1 (to_dm)", "outside sram")
    refused(lambda b: dma(b)["dma"].update(src_base=-64), "dma.src_base", "outside dram")
    refused(lambda b: dma(b)["dma"]["loops"][0].update(src=-(1 << 40)), "dma.src_base", "the walk reaches")
    refused(lambda b: exec_command(b)["fetch"].update(base=0), "fetch.base", "outside DM")
    refused(lambda b: exec_command(b)["fetch"]["time"].extend([{"memory": 1, "size": 1, "stride": 0}] * 40),
            "fetch", "41 entries; a sequencer table holds 8")  # fmt: skip
    refused(lambda b: exec_command(b)["fetch"]["packet"][0].update(size=1 << 20), "fetch.entries[0]")
    refused(lambda b: exec_command(b)["fetch"].update(access=3), "fetch.access", "3 bytes")


def test_device_axes_and_identity():
    refused(lambda b: b["device"].update(chip=0), "body.device.chip: 0 chips")
    refused(lambda b: b["device"].update(pe=3), "body.device.pe: 3 PEs")
    refused(lambda b: b["axes"].append(["a", 4]), "body.axes[1]", "axis name `a`")
    refused(lambda b: b["axes"].append(["A", 4]), "body.axes[1]", "declared twice")
    refused(lambda b: b["axes"].__setitem__(0, ["A", 0]), "body.axes[0]", "positive")
    with pytest.raises(EdfError, match="not a kernel identity") as caught:
        read_edf(rewrite(good_edf(), lambda b: b.update(identity="/../../tmp/x")))
    assert caught.value.identity is None and str(caught.value).startswith("malformed EDF: body.identity: ")


def test_commands_have_what_their_kind_needs():
    refused(lambda b: dma(b).update(kind="teleport"), "body.streams.tdma[0].kind", "'teleport' is not one of")
    refused(lambda b: dma(b).update(dma=None), "body.streams.tdma[0].dma", "needs its `dma` walk")
    refused(lambda b: dma(b).update(outputs=[]), "a dma command reads at least 1")
    refused(lambda b: dma(b).update(waits=[3]), "tdma[0].waits", "only a sync waits")
    refused(lambda b: exec_command(b)["engines"].pop(0), "engines", "starts with its `fetch`")
    refused(
        lambda b: exec_command(b)["engines"][4].update(op="FxpBinaryOp.AddFxp"), "engines[4].op", "fields are integers"
    )
    exp = OPS.code(FpUnaryOp.Exp)  # a known op, but of another stage
    refused(lambda b: exec_command(b)["engines"][4].update(op=exp), "engines[4].op", "not an op of `vector_fxp`")
    refused(lambda b: exec_command(b)["engines"][0].update(live=5), "engines[0].live", "not a list of integers")
    refused(lambda b: exec_command(b).update(dma=dma(b)["dma"]), "a exec command has no `dma` walk")
    refused(lambda b: b["streams"]["main"][0].update(engines=[{"stage": "fetch"}]), "a sync command has no engines")


def test_memset_and_gather_walks():
    def fill(body):
        return next(c for s in body["streams"].values() for c in s if c["kind"] == "memset")["fill"]

    def gather(body):
        return next(c for s in body["streams"].values() for c in s if c["kind"] == "indirect")["indirect"]

    def with_seed(edit, *fragments, kernel):
        data = compile_kernel(kernel).edf
        with pytest.raises(EdfError) as caught:
            read_edf(rewrite(data, edit))
        for fragment in fragments:
            assert fragment in str(caught.value), str(caught.value)

    with_seed(lambda b: fill(b).update(pattern=[]), "fill.pattern", kernel=seed_kernels.memset_zero)
    with_seed(lambda b: fill(b).update(pattern=[256]), "fill.pattern", kernel=seed_kernels.memset_zero)
    with_seed(lambda b: gather(b).update(divisor=0), "positive divisor", kernel=seed_kernels.gather_rows)
    with_seed(lambda b: gather(b)["offsets"].pop(), "offsets for", kernel=seed_kernels.gather_rows)
    with_seed(lambda b: gather(b).update(indexed="both"), "indirect.indexed", kernel=seed_kernels.gather_rows)
    with_seed(lambda b: gather(b)["entries"].__setitem__(0, -4), "indirect.entries[0]", kernel=seed_kernels.gather_rows)


def test_kept_loops_guards_and_runtime_offsets():
    def loop_command(body, kind):
        commands = [c for stream in body["streams"].values() for c in stream]
        return next(c for c in commands if c["kind"] == kind and (c["guard"] or c["offsets"]))

    def refused_loop(edit, *fragments):
        with pytest.raises(EdfError) as caught:
            read_edf(rewrite(compile_kernel(seed_kernels.kept_loop).edf, edit))
        assert "\n" not in str(caught.value)
        for fragment in fragments:
            assert fragment in str(caught.value), str(caught.value)

    edf = read_edf(compile_kernel(seed_kernels.kept_loop).edf)
    (loop,) = edf.loops
    assert loop.count == 3 and [b.slots for b in edf.buffers].count(2) == 1
    refused_loop(lambda b: b["loops"][0].update(count=0), "loops[0].count", "0 passes")
    refused_loop(lambda b: b["loops"][0].update(count=(1 << 20) + 1), "loops[0].count")
    refused_loop(lambda b: b["loops"].append(dict(b["loops"][0])), "loops[1]", "overlap")
    refused_loop(lambda b: b["loops"][0].update(last=10**6), "loops[0]", "the end")
    refused_loop(lambda b: b["loops"].clear(), "a runtime value outside a kept loop")

    def memset_guard(program):
        return lambda b: loop_command(b, "memset").update(guard=program)

    refused_loop(memset_guard(code("index", 1, "const", 1, "eq")), "body.streams.sub[1].guard:", "reads loop level 1",
                 "inside 1 kept loop")  # fmt: skip
    refused_loop(memset_guard(code("const", 1)), ".guard", "`1` does not read its loop's index")
    refused_loop(memset_guard(f"scalar(eq {loop.index}@3 1)"), ".guard: expected a list, found a string")
    refused_loop(memset_guard([*code("index", 0), 99]), ".guard", "unknown opcode 99 at 2")
    refused_loop(memset_guard(code("index", 0, "add")), ".guard", "`add` at 2 takes 2 values; the stack holds 1")
    refused_loop(memset_guard(code("index", 0, "index", 0)), ".guard", "leaves 2 values on the stack, not one")
    refused_loop(memset_guard([]), ".guard", "leaves 0 values")
    refused_loop(memset_guard(code("index", 0, "const")), ".guard", "`const` at 2 needs 1 integer after it")
    refused_loop(memset_guard(code("index", 0, "const", 1 << 63, "eq")), "constant 9223372036854775808 at 3")
    long = code("index", 0, *["const", 1, "add"] * 90)
    refused_loop(memset_guard(long), ".guard", "272 integers; a program holds at most 256")
    refused_loop(memset_guard(code(*["index", 0] * 33, *["add"] * 32)), "`index` at 64 makes 33 values on the stack")

    def first_offset(body, kind):  # the program of the command's first runtime offset
        return loop_command(body, kind)["offsets"][0][1]

    refused_loop(lambda b: loop_command(b, "exec")["offsets"][0].__setitem__(0, "dma.src_base"), "not an address")
    refused_loop(lambda b: first_offset(b, "exec").append(BY_NAME["mul"].code),
                 "body.streams.main[1].offsets[0][1]: `mul` at 8 takes 2 values; the stack holds 1")  # fmt: skip
    refused_loop(lambda b: first_offset(b, "memset").extend(code("index", 2, "add")),
                 "body.streams.sub[1].offsets[0][1]: `index` at 11 reads loop level 2")  # fmt: skip
    far = code("index", 0, "const", 1 << 40, "mul")  # the second pass's fetch leaves DM
    refused_loop(lambda b: loop_command(b, "exec")["offsets"][0].__setitem__(1, far), "fetch.base", "outside DM")
    refused_loop(lambda b: loop_command(b, "memset")["offsets"][0].__setitem__(1, far), "fill.base", "outside")
    zero = code("const", 1, "index", 0, "const", 0, "mul", "div")
    refused_loop(lambda b: loop_command(b, "memset")["offsets"][0].__setitem__(1, zero),
                 f"`1 // ({loop.index} * 0)` divides by zero")  # fmt: skip
    refused_loop(memset_guard(zero), ".guard", "divides by zero")
    refused_loop(lambda b: next(x for x in b["buffers"] if x["slots"] == 2).update(slots=3), ".slots")


def code(*items: str | int) -> list[int]:
    """A runtime program from opcode names and immediates: `code("index", 0, "const", 16, "mul")`."""
    return [BY_NAME[item].code if isinstance(item, str) else item for item in items]


def test_syncs_that_deadlock_are_refused():
    refused(lambda b: b["streams"]["main"][0].update(waits=[7]), "main[0].waits", "waits for command 7", "deadlock")
    refused(lambda b: b["streams"]["main"][0].update(waits=[3]), "waits for command 3")  # itself
    # issuing one stream in program order is not a cycle (the simulator's own test reorders tdma so)
    read_edf(rewrite(good_edf("gemm"), lambda b: b["streams"]["tdma"].sort(key=lambda c: c["index"])))


def test_strings_with_control_characters_or_code_are_refused():
    refused(lambda b: b["spans"][0].__setitem__(1, "k.py:1\x1b[2J"), "body.spans[0][1]", "control character")
    error = refused(lambda b: b.update(compiler_version="0.1\x07"), "body.compiler_version")
    assert "\x07" not in str(error) and "\\x07" in str(error)
    refused(lambda b: exec_command(b)["engines"][0].update(time="[A.__class__]"), "engines[0].time", "are integers")
    refused(lambda b: b["buffers"][1]["levels"].__setitem__(3, "A % {8}"), "body.buffers[1].levels", "Python")
    read_edf(rewrite(good_edf(), lambda b: b["buffers"][1]["levels"].__setitem__(1, "1 #{!} 2")))  # a pad marker


def test_the_writer_refuses_what_the_reader_would():
    result = compile_kernel(KERNELS["constant_add"])
    lir = dataclasses.replace(result.lir, buffers=[dataclasses.replace(b) for b in result.lir.buffers])
    lir.buffers[0].bytes = 1 << 60
    with pytest.raises(EdfError, match=r"cannot write EDF: body\.buffers\[0\]\.bytes"):
        write_edf(lir, compiler_version="0", cache_key="k")


def test_the_body_of_the_good_edf_is_what_the_tests_edit():
    body = body_of(good_edf())
    assert [c["kind"] for c in body["streams"]["tdma"]] == ["dma", "sync", "dma"]
    assert body["streams"]["main"][0]["kind"] == "sync" and exec_command(body)["engines"][4]["stage"] == "vector_fxp"
