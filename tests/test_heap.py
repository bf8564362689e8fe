"""How a build keeps the cyclic garbage collector off the objects it holds: none of them
is scanned right after the collector resumes, nor on the way out of the process."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from desk.build.heap import collector_paused


def test_what_lives_long_made_while_the_collector_was_paused_joins_the_oldest() -> None:
    if not gc.isenabled():
        pytest.skip("the collector is off in this process")
    with collector_paused(long_lived=True):
        assert not gc.isenabled()
        made = [[n] for n in range(20_000)]
    assert gc.isenabled()
    # Not left in the youngest generation, whose next collection would scan all of it.
    assert gc.get_count()[0] < 100
    assert not any(o is made for o in gc.get_objects(generation=0))
    assert any(o is made for o in gc.get_objects(generation=2))


# A reference cycle whose collection says so: only a collection can free it.
CYCLE = """
import gc
gc.disable()  # no collection but the interpreter's own on its way out
from desk.build.heap import left_alone_at_exit
class Cycle:
    def __del__(self):
        print("collected")
cycle = Cycle()
cycle.me = cycle
del cycle
if LEAVE:
    left_alone_at_exit()
    left_alone_at_exit()
print("done")
"""


@pytest.mark.parametrize("leave", [False, True])
def test_the_collection_on_the_way_out_leaves_every_object_alone(leave: bool) -> None:
    result = subprocess.run([sys.executable, "-c", CYCLE.replace("LEAVE", str(leave))],
                            capture_output=True, text=True, check=True)
    assert result.stdout.split() == (["done"] if leave else ["done", "collected"])
