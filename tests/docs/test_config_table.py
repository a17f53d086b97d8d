"""docs/edf.md's table of engine config fields is the one the declarations generate."""

from pathlib import Path

from furiosa_opt.configs.table import BEGIN, END, fields_by_stage, markdown
from furiosa_opt.stages import STAGES

EDF_MD = Path(__file__).resolve().parents[2] / "docs" / "edf.md"


def test_the_documented_table_is_the_generated_one():
    text = EDF_MD.read_text()
    documented = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert documented == markdown(), "regenerate it: python -m furiosa_opt.configs.table"


def test_every_stage_that_moves_or_computes_declares_its_fields():
    """Stages without fields only name a step of a fold (`contract_packet`, `contract_time`), start or
    end the Vector Engine, or pass the stream on unchanged (`commit`, `commit_view`: the commit sequencer
    holds their numbers)."""
    bare = {s for s in STAGES if s not in fields_by_stage()}
    assert bare == {
        "begin", "begin_interleaved", "contract_packet", "contract_time", "vector_init",
        "vector_final", "vector_stash", "commit", "commit_view",
    }  # fmt: skip
