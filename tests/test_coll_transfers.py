"""Collectives as point-to-point transfers between the callers' buffers
(engine/transfers.rs): every all-to-all that neither rides on the barrier
device nor goes through the staging slots, gathers and scatters from
2 KiB blocks and broadcasts from 64 KiB (down a binomial tree), on one
node and across nodes. coll_transfers.c checks every
byte against values it computes itself: all-to-all blocks from empty to
past the TCP eager limit and the single-copy threshold, alltoallv with
uneven and empty blocks at scattered displacements, alltoallw with a
strided type, nonblocking ones in flight completed last first while the
program's wildcard receives run on the same communicator, MPI_IN_PLACE (the
message machine), a split communicator; gathers and scatters around the
threshold, every root, in place, a strided type at the non-roots, several
in flight; gatherv, scatterv and allgatherv with uneven and empty blocks
in a gapped layout, in place and in flight; broadcasts around the threshold and past the eager and
single-copy limits, every root, a strided type, several in flight. LANAI_STATS counts them, so the runs also show the path taken.
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROG = "coll_transfers"
SHAPES = [(2, 1), (4, 2), (5, 3)] if harness.QUICK else [
    (1, 1), (2, 1), (3, 1), (4, 1), (8, 1), (2, 2), (4, 2), (5, 3), (8, 3), (4, 4)]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([PROG], "lanai")[PROG]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([PROG], "mpich")[PROG]


@pytest.mark.parametrize("nranks,nodes", SHAPES)
def test_collectives_as_transfers(lanai_exe, nranks, nodes):
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes, ["2"]), lanai_exe, {"LANAI_STATS": "1"})
    assert_passed(r, PROG)
    assert_clean(r)
    counts = harness.rank_stats(r.output, "collectives as transfers")
    assert sorted(counts) == list(range(nranks)), r.tail()
    # Each round makes 16 all-to-alls besides the in-place one, and 16
    # gathers and scatters from 2 KiB. On one node the device and the
    # staging slots take some, never an alltoallv or alltoallw, nor a
    # scatter of 64 KiB blocks or more (24 in all: 20 before those went as
    # transfers); the first round, on the world, spans the nodes if any.
    least = 32 if nodes > 1 else 24 if nranks > 1 else 2 * 2
    assert all(n >= least for n in counts.values()), r.tail()


def test_mpich_build_on_lanai_under_hydra(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 4, ["2"])


def test_program_itself_on_mpich(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 4, ["2"], on_lanai=False)
