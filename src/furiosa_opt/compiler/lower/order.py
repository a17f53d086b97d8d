"""An order of the commands whose buffers fit, for a kernel whose written order does not.

The scheduler runs independent commands in whatever order is fastest (docs/scheduling), so the order a
kernel's author wrote two independent statements in is no reason to refuse it. When placing buffers in
the written order overflows a register file or DM, stage 2 asks here for another order: one that keeps
every data dependence (a read after the write it reads, a write after the reads and the write before it)
and in which the bytes live at once never exceed a memory's capacity.

The search walks orders depth first, preferring the written one: at each step it takes the earliest
ready unit whose new buffers fit beside what is live, and backs up when a prefix leaves no way on. A set
of done units once shown to lead nowhere is remembered, so no set is walked twice; the walk is exact for
the bytes live at once, and the caller confirms each order it yields with the real placement (which
also has alignment and TRF halves to satisfy). A unit is one command, or a kept loop's whole body, whose
commands stay together and in order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """What a unit of commands reads and writes, by buffer name."""

    reads: frozenset[str]
    writes: frozenset[str]

    @property
    def touches(self) -> frozenset[str]:
        return self.reads | self.writes


@dataclass(frozen=True)
class Charge:
    """What a buffer costs while it is live: `bytes` of `memory`, whose capacity is `capacity`."""

    memory: str
    bytes: int
    capacity: int


def predecessors(units: list[Unit]) -> list[int]:
    """For each unit, a bit mask of the earlier units it must follow: the last write of what it reads
    (RAW), and the last write and the reads since of what it writes (WAW, WAR)."""
    last_write: dict[str, int] = {}
    reads_since: dict[str, int] = {}  # buffer → mask of the units reading it since its last write
    masks = []
    for i, unit in enumerate(units):
        mask = 0
        for name in unit.reads:
            mask |= 1 << last_write[name] if name in last_write else 0
        for name in unit.writes:
            mask |= reads_since.get(name, 0) | (1 << last_write[name] if name in last_write else 0)
        for name in unit.reads:
            reads_since[name] = reads_since.get(name, 0) | 1 << i
        for name in unit.writes:
            last_write[name], reads_since[name] = i, 0
        masks.append(mask & ~(1 << i))
    return masks


class NoOrder(Exception):
    """No order fits (after `steps` steps of the walk), or the walk gave up after its budget (`exhausted`)."""

    def __init__(self, steps: int, exhausted: bool):
        super().__init__(f"{steps} steps")
        self.steps, self.exhausted = steps, exhausted


class _Walk:
    """The state of a depth-first walk: units done, bytes live per memory, users left per buffer."""

    def __init__(self, units: list[Unit], charges: dict[str, Charge], held: set[str], kept: set[str]):
        self.units, self.charges, self.kept = units, charges, kept
        self.touches = [sorted(n for n in unit.touches if n in charges) for unit in units]
        self.users = {name: sum(name in t for t in self.touches) for name in charges}
        self.started = set(held)
        self.live = {c.memory: 0 for c in charges.values()}
        for name in held:
            self.live[charges[name].memory] += charges[name].bytes

    def enter(self, i: int) -> tuple[list[str], list[str]] | None:
        """Run unit `i`: the buffers it starts and ends, or None (and nothing changed) if its new buffers
        do not fit beside the live ones."""
        new = [name for name in self.touches[i] if name not in self.started]
        need = dict(self.live)
        for name in new:
            need[self.charges[name].memory] += self.charges[name].bytes
        if any(need[self.charges[name].memory] > self.charges[name].capacity for name in self.touches[i]):
            return None
        self.live = need
        self.started.update(new)
        ended = []
        for name in self.touches[i]:
            self.users[name] -= 1
            if not self.users[name] and name not in self.kept:
                self.live[self.charges[name].memory] -= self.charges[name].bytes
                ended.append(name)
        return new, ended

    def leave(self, i: int, new: list[str], ended: list[str]) -> None:
        """Undo `enter(i)`."""
        for name in self.touches[i]:
            self.users[name] += 1
        for name in ended:
            self.live[self.charges[name].memory] += self.charges[name].bytes
        for name in new:
            self.started.discard(name)
            self.live[self.charges[name].memory] -= self.charges[name].bytes


def fitting_orders(
    units: list[Unit], charges: dict[str, Charge], held: set[str], kept: set[str], budget: int = 200_000
) -> Iterator[list[int]]:
    """Orders of `units` (indices) that keep their dependences and never hold more live bytes of a memory
    than its capacity, the nearest to the written order first. `charges` names the buffers that count;
    `held` are live from the start (arguments), `kept` to the end (results). Raises NoOrder when there
    are no more (after yielding none, that is a proof that no order fits), or after `budget` steps."""
    must_follow = predecessors(units)
    walk = _Walk(units, charges, held, kept)
    everything = (1 << len(units)) - 1
    dead: set[int] = set()  # sets of done units from which no order fits
    done, order, steps = 0, [], 0
    stack: list[tuple[int, tuple]] = []  # (unit entered, its undo) per step taken
    start = 0  # the first candidate to try at the current state
    while True:
        entered = False
        for i in range(start, len(units)):
            bit = 1 << i
            if done & bit or must_follow[i] & ~done or (done | bit) in dead:
                continue
            steps += 1
            if steps > budget:
                raise NoOrder(steps, exhausted=True)
            undo = walk.enter(i)
            if undo is None:
                continue
            stack.append((i, undo))
            done |= bit
            order.append(i)
            entered, start = True, 0
            break
        if entered and done != everything:
            continue
        if entered:
            yield list(order)
        elif done != everything:
            dead.add(done)
        if not stack:
            raise NoOrder(steps, exhausted=False)
        i, undo = stack.pop()
        walk.leave(i, *undo)
        done &= ~(1 << i)
        order.pop()
        start = i + 1
