"""Medium reduces on one node go through staging slots (shm/stage.rs,
engine/central_reduce.rs): each non-root copies its contribution into a
slot of its own and posts a descriptor in its mailbox, and the root folds
every contribution where it lies. reduce_staged.c checks float sums bit
for bit against the binomial grouping computed in the program, integer
sums at every root and in place, a non-commutative user operation on a
contiguous and a strided type, reduces in flight, and loops where
non-roots run ahead and wait for slots on two communicators. Across
nodes the same program checks flat reduces (engine/coll.rs), where every
rank sends to the root.

The runs also check, from LANAI_STATS, that the staged path was taken on
one node, and not across nodes or when LANAI_REDUCE forces messages.
"""

import re

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROG = "reduce_staged"
SHAPES = [(2, 1), (5, 1), (4, 2)] if harness.QUICK else [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (8, 1), (4, 2), (8, 3)]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([PROG], "lanai")[PROG]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([PROG], "mpich")[PROG]



@pytest.mark.parametrize("nranks,nodes", SHAPES)
def test_staged_reduces(lanai_exe, nranks, nodes):
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe, {"LANAI_STATS": "1"})
    assert_passed(r, PROG)
    assert_clean(r)
    staged = harness.rank_stats(r.output, "staged reduces")
    assert sorted(staged) == list(range(nranks)), r.tail()
    # Above 64 KiB on one node the reduces go in chunks through the slots.
    chunked = harness.rank_stats(r.output, "chunked reduces")
    assert sorted(chunked) == list(range(nranks)), r.tail()
    if nodes == 1 and nranks > 1:
        assert all(n > 0 for n in staged.values()), r.tail()
        assert all(n > 0 for n in chunked.values()), r.tail()
    else:
        assert all(n == 0 for n in staged.values()), r.tail()
        assert all(n == 0 for n in chunked.values()), r.tail()
    # Across nodes, reduces of up to 1 KiB go flat (more than 2 ranks):
    # the program's bitwise checks then hold for that path too.
    flat = harness.rank_stats(r.output, "flat reduces")
    assert sorted(flat) == list(range(nranks)), r.tail()
    if nodes > 1 and nranks > 2:
        assert all(n > 0 for n in flat.values()), r.tail()
    else:
        assert all(n == 0 for n in flat.values()), r.tail()


@pytest.mark.parametrize("nranks,nodes", [(4, 1), (5, 3)])
def test_tree_reduces_give_the_same_results(lanai_exe, nranks, nodes):
    """LANAI_REDUCE=binomial: messages down the tree only, neither staged
    on one node nor flat across nodes, and the same checks pass."""
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe,
                {"LANAI_STATS": "1", "LANAI_REDUCE": "binomial"})
    assert_passed(r, PROG)
    assert_clean(r)
    for field in ("staged reduces", "chunked reduces", "flat reduces"):
        counts = harness.rank_stats(r.output, field)
        assert sorted(counts) == list(range(nranks)), r.tail()
        assert all(n == 0 for n in counts.values()), r.tail()


STATS_ENGINE = re.compile(r"^lanai: stats engine node \d+: descriptors (\d+)", re.M)


def test_auto_offload_keeps_flat_reduces_on_the_host(lanai_exe):
    """LANAI_OFFLOAD=auto with a core per rank and engine: a blocking reduce
    that the host sends flat stays on the host (its non-roots return at
    once either way, and the engine's hops only add latency); the others,
    nonblocking or larger, go to the engines. Results as checked above."""
    nranks, nodes = 4, 2
    env = {"LANAI_STATS": "1", "LANAI_OFFLOAD": "auto", "LANAI_CORES": "64", "LANAI_SPIN": "50"}
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe, env)
    assert_passed(r, PROG)
    assert_clean(r)
    flat = harness.rank_stats(r.output, "flat reduces")
    assert sorted(flat) == list(range(nranks)), r.tail()
    assert all(n > 0 for n in flat.values()), r.tail()
    descriptors = [int(d) for d in STATS_ENGINE.findall(r.output)]
    assert len(descriptors) == nodes and all(d > 0 for d in descriptors), r.tail()


def test_mpich_build_on_lanai_under_hydra(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 4)


def test_program_itself_on_mpich(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 3, ["1"], on_lanai=False)


def test_ranks_with_cores_leave_large_folds_to_the_chunks(lanai_exe):
    """Where every rank has a core (LANAI_CORES says so), a reduce whose
    other contributions add up to more than 512 KiB (9 x 64 KiB here)
    goes through the slots in chunks, every rank folding a share, rather
    than to the root's fold alone; smaller ones still stage. Fewer reduces
    stage than on the same node crowded, more go in chunks, and every
    check of the program holds on both paths."""
    nranks = 10
    counts, chunks = {}, {}
    for cores in ("2", "64"):
        env = {"LANAI_STATS": "1", "LANAI_CORES": cores, "LANAI_SPIN": "50"}
        r = run_job(lanairun_argv(lanai_exe, nranks, 1), lanai_exe, env)
        assert_passed(r, PROG)
        assert_clean(r)
        staged = harness.rank_stats(r.output, "staged reduces")
        assert sorted(staged) == list(range(nranks)), r.tail()
        assert all(n > 0 for n in staged.values()), r.tail()
        # Where ranks share cores, the smallest of them go in pieces.
        pieced = harness.rank_stats(r.output, "pieced reduces")
        counts[cores] = sum(staged.values()) + sum(pieced.values())
        chunks[cores] = sum(harness.rank_stats(r.output, "chunked reduces").values())
    assert counts["64"] < counts["2"], counts
    assert chunks["64"] > chunks["2"], chunks
