"""Stage 2's steps on hand-made commands: buffer lifetimes, the pieces an order may move, and the syncs
between contexts (compiler/lower/lifetimes.py, syncs.py)."""

from furiosa_opt.compiler.lir import Buffer, Command
from furiosa_opt.compiler.lower.lifetimes import lifetimes, units
from furiosa_opt.compiler.lower.syncs import with_syncs


def _command(index: int, context: str, reads: str = "", writes: str = "", kind: str = "exec") -> Command:
    return Command(index, context, kind, index, kind, None, reads.split(), writes.split())


def _buffers(*names: str, first: int = 0) -> dict[str, Buffer]:
    return {n: Buffer(n, f"%{n}", "sram", "i8", [], 0, 64, first, -1) for n in names}


def test_a_buffer_lives_from_its_first_write_to_its_last_use():
    commands = [_command(0, "tdma", writes="a"), _command(1, "main", "a", "b"), _command(2, "tdma", "b", "c")]
    buffers = _buffers("a", "b", "c")
    lifetimes(buffers, commands, [], ["c"])
    assert [(b.first, b.last) for b in buffers.values()] == [(0, 1), (1, 2), (2, 3)]  # a result outlives the list


def test_what_a_loop_body_reads_of_earlier_work_lives_to_the_loop_end():
    commands = [_command(0, "tdma", writes="a"), _command(1, "main", "a", "b"), _command(2, "main", "b", "c")]
    buffers = _buffers("a", "b", "c")
    lifetimes(buffers, commands, [(commands[1], commands[2], 4, "%i")], [])
    assert (buffers["a"].first, buffers["a"].last) == (0, 2)  # read on every pass: to the loop's last command
    assert (buffers["b"].first, buffers["b"].last) == (1, 2)  # made inside the body: its own interval


def test_views_move_with_the_command_after_them_and_a_loop_as_one_piece():
    view = _command(0, "none", "a", kind="view")
    commands = [view, _command(1, "main", "a", "b"), _command(2, "main", "b", "c"), _command(3, "sub", "c")]
    pieces = units(commands, [(commands[2], commands[3], 2, "%i")])
    assert [[c.index for c in piece] for piece in pieces] == [[0, 1], [2, 3]]


def test_a_sync_waits_for_another_contexts_write_or_read_of_the_same_memory():
    commands = [_command(0, "tdma", writes="a"), _command(1, "main", "a", "b"), _command(2, "tdma", writes="a")]
    final = with_syncs(commands, _buffers("a", "b"))
    kinds = [(c.kind, c.context, c.waits) for c in final]
    # main waits for tdma's write of `a` (RAW); tdma's second write waits for main's read (WAR)
    assert kinds == [
        ("exec", "tdma", []),
        ("sync", "main", [0]),
        ("exec", "main", []),
        ("sync", "tdma", [2]),
        ("exec", "tdma", []),
    ]
