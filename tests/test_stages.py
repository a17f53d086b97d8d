"""The stage table (furiosa_opt/stages.py) against every layer: each declared stage has its handler in
each layer, no layer handles an undeclared stage, the stages record the attributes they declare, and
both backends compute a stage with the arithmetic its entry names. A failure names the stage and the
layer."""

import numpy as np
import pytest
from example_kernels import KERNELS

import furiosa_opt.compiler.lower.engines  # noqa: F401 (registers the derived counts)
from furiosa_opt import Context, HbmTensor, HostTensor, SwitchConfig, axes, device, i8, launch, m
from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler import replay
from furiosa_opt.compiler.driver import compile_kernel, compile_visa
from furiosa_opt.compiler.resource import switch_cycles
from furiosa_opt.compiler.schedule import schedule, schedule_json
from furiosa_opt.configs import derived
from furiosa_opt.lang.contraction import Contraction
from furiosa_opt.lang.pair import VectorPair
from furiosa_opt.lang.stream import Stream, TuContext
from furiosa_opt.lang.vector import VectorStream
from furiosa_opt.sim import tensor_unit  # noqa: F401 (registers the simulator's handlers)
from furiosa_opt.stages import (
    HELPERS,
    MEMORY_OPS,
    STAGES,
    VECTOR_CHAIN,
    VECTOR_MODIFIERS,
    following,
    register,
    registered,
)

LANGUAGE = (TuContext, Stream, VectorStream, VectorPair, Contraction)  # the classes whose methods are the stages
ENGINE_STAGES = {name for name, stage in STAGES.items() if stage.engine is not None}


def _methods(cls: type) -> set[str]:
    return {name for name, value in vars(cls).items() if callable(value) and not name.startswith("_")}


def missing(layer: str, handled: set[str], needed: set[str]) -> list[str]:
    """One line per stage a layer lacks or handles without a declaration."""
    lines = [f"stage `{s}` has no handler in the {layer}" for s in sorted(needed - handled)]
    return lines + [
        f"the {layer} handles `{s}`, which the stage table does not declare" for s in sorted(handled - needed)
    ]


def test_every_stage_is_a_method_of_the_language_and_every_method_a_stage():
    methods = set().union(*(_methods(cls) for cls in LANGUAGE)) - set(HELPERS)
    assert not missing("kernel language", methods, set(STAGES))


def test_every_stage_has_a_replay_handler():
    assert not missing("vISA replay (compiler/replay.py)", set(registered("replay")), set(STAGES))
    assert not set(replay.MEMORY_REPLAY) ^ set(MEMORY_OPS), "MEMORY_REPLAY replays exactly the memory ops"


def test_every_engine_stage_has_a_simulator_handler():
    assert not missing("simulator (sim/)", set(registered("simulator")), ENGINE_STAGES)


# Stages whose checks are their Vector Engine slot's (order, way, ALU, scalar) or their memory's, with no rule
# of their own to register.
NO_OWN_RULE = {name for name, stage in STAGES.items() if stage.arithmetic is not None and stage.engine == "vector"}
NO_OWN_RULE |= {"begin", "to_vrf", "vector_final"}


def test_every_stage_but_the_vector_ops_has_a_registered_rule():
    needed = set(STAGES) - NO_OWN_RULE | {
        "vector_intra_slice_tag",
        "vector_intra_slice_reduce",
        "vector_inter_slice_reduce",
    }
    assert not missing("rules (verify/)", set(registered("rule")), needed)


def test_the_language_runs_the_rule_the_table_registers(monkeypatch):
    """Every time the language records a stage that has a rule, the rule registered for that stage ran:
    traced over the harness's kernels until every registered rule has been seen."""
    import harness  # inside the test: harness imports this module's kernels (it skips modules that import it)

    from furiosa_opt import stages

    calls: dict[str, int] = {}

    def counted(name, check):
        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return check(*args, **kwargs)

        return wrapper

    for name in registered("rule"):
        monkeypatch.setitem(stages._REGISTERED["rule"], name, counted(name, stages.rule(name)))
    seen: set[str] = set()
    for identity in sorted(harness.KERNELS):
        calls.clear()
        ir, errors = trace(harness.KERNELS[identity][0])
        if errors:
            continue
        recorded: dict[str, int] = {}
        for op in ir.ops:
            if op.opcode in registered("rule"):
                recorded[op.opcode] = recorded.get(op.opcode, 0) + 1
        for name, count in recorded.items():
            assert calls.get(name, 0) >= count, (
                f"{identity} records `{name}` {count}× but its rule ran {calls.get(name, 0)}×"
            )
        seen |= set(recorded)
        if seen == registered("rule"):
            break
    assert seen == registered("rule"), f"no harness kernel records {sorted(registered('rule') - seen)}"


def test_every_stage_with_derived_counts_has_a_lowering_handler():
    counted = {name for name, record in derived.RECORDS.items() if record.fields != (derived.RF,)}
    assert not missing("lowering (compiler/lower/engines.py)", set(registered("lowering")), counted)


def test_a_layer_cannot_register_an_undeclared_stage_or_one_twice():
    with pytest.raises(KeyError, match="registers `fetch_twice`, which the stage table does not declare"):
        register("simulator", "fetch_twice")(lambda *args: None)
    with pytest.raises(KeyError, match="the simulator registers `fetch` twice"):
        register("simulator", "fetch")(lambda *args: None)
    with pytest.raises(KeyError, match="the lowering has no handler for the `fetch` stage"):
        STAGES["fetch"].handler("lowering")


def test_the_table_is_consistent():
    for name, stage in STAGES.items():
        assert all(before in STAGES for before in stage.after), f"stage `{name}` follows an undeclared stage"
        if stage.engine == "vector" and name not in ("vector_init", "vector_final"):
            assert stage.slot in (*VECTOR_CHAIN, *VECTOR_MODIFIERS) and not stage.after, f"`{name}`: a VE slot"
        assert stage.rf in (None, "trf", "vrf"), f"stage `{name}` reads an unknown register file {stage.rf!r}"
    assert following("commit_trim") == ("commit_cast", "commit_cast_relu", "commit", "commit_view")
    assert set(following("collect")) == {
        "to_trf",
        "to_vrf",
        "contract_outer",
        "vector_init",
        "cast",
        "transpose",
        "commit_trim",
    }


@pytest.mark.parametrize("name", KERNELS)
def test_traced_stages_record_the_declared_attributes(name):
    ir, errors = trace(KERNELS[name])
    assert not errors
    seen = [op for op in ir.ops if op.opcode in STAGES]
    assert seen, f"{name} uses no Tensor Unit stage"
    for op in seen:
        assert tuple(key for key, _ in op.attrs) == STAGES[op.opcode].attrs, f"stage `{op.opcode}` in {name}"


def test_a_language_method_reads_the_table(monkeypatch):
    """The order the language checks is the table's: a stage removed from `collect`'s successors is refused."""
    from furiosa_opt import Context, HostTensor, axes, i32, m
    from furiosa_opt.diagnostics import VerifyError
    from furiosa_opt.stages import Stage

    monkeypatch.setitem(STAGES, "cast", Stage("cast", "cast", ("contract_lane", "vector_final"), ("dtype", "packet")))
    A = axes(A=2048)
    with Context.acquire() as ctx:
        dm = HostTensor.zeros(i32, m["A"]).to_hbm(ctx.pdma).to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        stream = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])
        with pytest.raises(VerifyError, match="`cast` cannot follow `collect`"):
            stream.cast(i32, m["A % 8"])


Sa, Sc, Se = axes(Sa=256, Sc=8, Se=8)


@device(chip=1)
def switch_then_transpose(
    ctx: Context, x: HbmTensor[i8, m["1"], m["Sa, Sc, Se"]]
) -> HbmTensor[i8, m["1"], m["Sa, Se, Sc"]]:
    """Both engines in one pipeline: the slices' inner digits swap on the ring, then Time and Packet swap."""
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["Sa"], m["Sc, Se"])
    out = (
        ctx.main.begin(dm.view())
        .fetch(m["Sc"], m["Se"])
        .switch(SwitchConfig.Transpose(slice1=16, slice0=16), m["Sa % 16, Sa / 16"], m["Sc"])
        .collect(m["Sc"], m["Se # 32"])
        .transpose(m["Se"], m["Sc # 32"])
        .commit_trim(m["Sc"])
        .commit(m["Se, Sc"])
    )
    return out.to_hbm(ctx.tdma, m["Sa, Se, Sc"])


def test_the_new_engines_record_the_declared_attributes():
    ir, errors = trace(switch_then_transpose)
    assert not errors
    ops = {op.opcode: op for op in ir.ops}
    for name in ("switch", "transpose"):
        assert tuple(key for key, _ in ops[name].attrs) == STAGES[name].attrs
    assert ops["switch"].attr("config") == SwitchConfig.Transpose(slice1=16, slice0=16)


def test_both_engines_give_the_numpy_transposes():
    data = np.random.default_rng(7).integers(-128, 128, (256, 8, 8)).astype(np.int8)
    with Context.acquire() as ctx:
        x = HostTensor.from_numpy(data, i8, m["Sa, Sc, Se"]).to_hbm(ctx.pdma)
        got = launch(switch_then_transpose, ctx, x).to_host(ctx.pdma).to_numpy()
    np.testing.assert_array_equal(got, data.transpose(0, 2, 1))


def test_the_new_engines_round_trip_through_visa_text_and_schedule_inside_main(tmp_path):
    """Stage 1: the printed vISA parses and replays to the same text. Stages 2–3: the exec command's
    engine configs carry the derived parameters, and its Main instruction names both engines and lasts
    at least their cycles."""
    compiled = compile_kernel(switch_then_transpose)
    assert compiled.ok, compiled.diagnostics
    text = compiled.visa_text
    assert "switch %" in text and "config=SwitchConfig.Transpose(slice1=16, slice0=16)" in text
    path = tmp_path / "k.visa"
    path.write_text(text)
    again = compile_visa(path)
    assert again.ok and again.visa_text == text
    (exec_,) = [c for c in compiled.lir.commands if c.kind == "exec"]
    engines = {e.stage: e for e in exec_.engines}
    assert engines["switch"].ring == 256 and engines["switch"].in_steps == 8 and engines["switch"].flits == 1
    assert (engines["transpose"].in_rows, engines["transpose"].in_cols) == (8, 8)
    plan = schedule(compiled.lir)
    (slot,) = [s for s in plan.slots if s.costed.command is exec_]
    description = schedule_json(plan)["instructions"][plan.slots.index(slot)]["description"]
    assert "switch[Transpose { slice1: 16, slice0: 16 }, ring 256: 2048 cycles]" in description
    assert "transpose[8×8 → 8 rows, ×1: 16 cycles]" in description
    assert slot.costed.cycles >= switch_cycles(engines["switch"]) == 256 * 8 * 1
    assert slot.costed.tpe == "Main"


def test_a_stages_layout_decides_the_layout_fields_of_its_config():
    """`Stage.layout` is the one declaration: the records of configs/layouts.py follow it (stage 2 and the
    simulator read it too), and a stage that keeps its layout holds no layout field but its port's walks."""
    from furiosa_opt.configs.layouts import RECORDS
    from furiosa_opt.stages import LAYOUTS

    ports = {"rf_walk", "rf_table", "stash_walk", "stash_table"}
    for stage in STAGES.values():
        fields = {f.name for f in RECORDS[stage.name].fields} if stage.name in RECORDS else set()
        assert stage.layout is None or stage.layout in LAYOUTS, stage.name
        if stage.layout in ("walk", "store", "fold"):
            assert {"walk", "table"} <= fields, stage.name
        if stage.layout in ("walk", "shape", "fold"):
            assert {"steps", "lanes", "live"} <= fields, stage.name
        if stage.layout is None:
            assert fields <= ports and bool(fields) == (stage.rf == "vrf"), stage.name


@pytest.mark.parametrize("backend", ["cpu", "npu"])
def test_both_backends_compute_a_stage_with_the_arithmetic_its_entry_names(backend, monkeypatch):
    """The language (CPU backend) and the simulator (from the binary's codes) both call the function the
    stage's entry names: replaced there by one that adds 1, both results move by 1."""
    from dataclasses import replace

    import harness  # inside the test: harness imports this module's kernels (it skips modules that import it)

    from furiosa_opt.lang import plan

    kernel, module = harness.KERNELS["base_template.kernel.constant_add_kernel.constant_add_kernel"]
    expected = harness.run_on(backend, kernel, module)
    stage = STAGES["vector_fxp"]
    calls = []

    def plus_one(op, a, b):
        calls.append(op)
        return stage.arithmetic(op, a, b) + np.int32(1)

    monkeypatch.setitem(STAGES, "vector_fxp", replace(stage, arithmetic=plus_one))
    plan.clear()  # the stage table is changed in place, which a launch plan's key does not see (docs/design.md)
    got = harness.run_on(backend, kernel, module)
    assert calls, f"the {backend} backend did not compute `vector_fxp` with its entry's arithmetic"
    assert got != expected
