"""coll_more.c on Lanai: every collective beyond the basic four, blocking and
nonblocking, across the rank/node matrix, plus the MPICH-built binary run on
Lanai through LD_LIBRARY_PATH (the drop-in ABI promise)."""

import re

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

NAME = "coll_more"

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3), (8, 2)]
else:
    SHAPES = [(n, k) for n in (1, 2, 3, 4, 8) for k in (1, 2, 3) if k <= n]


@pytest.fixture(scope="module")
def lanai_exe(lanai_builds):
    return harness.build_programs([NAME], "lanai")[NAME]


@pytest.fixture(scope="module")
def mpich_exe(lanai_builds):
    return harness.build_programs([NAME], "mpich")[NAME]


@pytest.mark.parametrize(
    "nranks,nodes",
    [
        pytest.param(n, k, id=f"n{n}-nodes{k}", marks=[pytest.mark.slow] if n >= 8 else [])
        for n, k in SHAPES
    ],
)
def test_coll_more(lanai_exe, nranks, nodes):
    result = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe)
    assert_passed(result, NAME)
    assert_clean(result)


@pytest.mark.parametrize("nranks,nodes", [(2, 1), (5, 2), (7, 3)])
def test_coll_more_scans_by_recursive_doubling(lanai_exe, nranks, nodes):
    result = run_job(
        lanairun_argv(lanai_exe, nranks, nodes), lanai_exe,
        env_extra={"LANAI_SCAN": "recursive_doubling"},
    )
    assert_passed(result, NAME)
    assert_clean(result)


@pytest.mark.mpich
def test_coll_more_mpich_binary(mpich_exe):
    env = dict(lib_env(), LANAI_STATS="1")
    result = run_job(lanairun_argv(mpich_exe, 4, 2), mpich_exe, env_extra=env)
    assert_passed(result, NAME)
    assert_clean(result)
    # Lanai's own statistics line proves the binary ran on Lanai, not MPICH.
    assert "lanai: stats rank" in result.output, result.tail()


BITS = "allreduce_bits"


@pytest.fixture(scope="module")
def bits_exe(lanai_builds):
    return harness.build_programs([BITS], "lanai")[BITS]


@pytest.mark.parametrize("nranks,nodes", [(2, 1), (3, 1), (4, 1), (5, 1), (8, 1), (4, 2), (6, 3)])
def test_allreduce_bits_do_not_depend_on_the_algorithm(bits_exe, nranks, nodes):
    # auto takes the shared-memory device path on one node; the others are
    # the message-passing machines. All must give the same bits.
    algos = ["auto", "reduce_bcast", "ring"]
    if nranks & (nranks - 1) == 0:
        algos.append("recursive_doubling")
    digests = {}
    for algo in algos:
        env = {"LANAI_ALLREDUCE": algo, "LANAI_STATS": "1"}
        r = harness.run_job(lanairun_argv(bits_exe, nranks, nodes), bits_exe, env)
        harness.assert_passed(r, BITS)
        harness.assert_clean(r)
        lines = sorted(re.findall(r"^(DIGEST|HALF\d) (\w+)$", r.output, re.M))
        assert lines, r.tail()
        digests[algo] = lines
        # auto stages the large ones through the shared slots on one node;
        # a named algorithm, or a job across nodes, passes messages.
        staged = harness.rank_stats(r.output, "chunked allreduces")
        assert sorted(staged) == list(range(nranks)), r.tail()
        if algo == "auto" and nodes == 1:
            assert all(n > 0 for n in staged.values()), r.tail()
        else:
            assert all(n == 0 for n in staged.values()), r.tail()
        # The program's checking broadcasts, from 1 KiB (16 KiB where
        # ranks share cores), go through rank 0's slots on one node.
        bcasts = harness.rank_stats(r.output, "chunked bcasts")
        assert sorted(bcasts) == list(range(nranks)), r.tail()
        assert all((n > 0) == (nodes == 1) for n in bcasts.values()), r.tail()
    first = digests["auto"]
    for algo, d in digests.items():
        assert d == first, f"{algo} gave {d}, auto gave {first}"


def _bits(exe, nranks, env, args=()):
    r = harness.run_job(lanairun_argv(exe, nranks, 1, list(args)), exe, {"LANAI_STATS": "1", **env})
    harness.assert_passed(r, BITS)
    harness.assert_clean(r)
    lines = sorted(re.findall(r"^(DIGEST|HALF\d) (\w+)$", r.output, re.M))
    assert lines, r.tail()
    return r, lines


def _through_root(exe, nranks, args=()):
    """Crowded (LANAI_CORES=1) from 8 ranks the allreduces above the
    device's data slots and below 16 KiB are staged reduces to rank 0 and
    broadcasts; with a core per rank (LANAI_CORES=64), and below 8 ranks,
    they are exchanges. From 16 KiB both go through the staging slots in
    chunks. The bits must agree."""
    crowded, crowded_bits = _bits(exe, nranks, {"LANAI_CORES": "1"}, args)
    spread, spread_bits = _bits(exe, nranks, {"LANAI_CORES": "64", "LANAI_SPIN": "50"}, args)
    assert crowded_bits == spread_bits
    reduces = {}
    for name, r in (("crowded", crowded), ("spread", spread)):
        reduces[name] = harness.rank_stats(r.output, "staged reduces")
        assert sorted(reduces[name]) == list(range(nranks)), r.tail()
        chunked = harness.rank_stats(r.output, "chunked allreduces")
        assert sorted(chunked) == list(range(nranks)), r.tail()
        assert all(n > 0 for n in chunked.values()), r.tail()
    # The program's own staged reduces run in both; the allreduces through
    # the root only crowded, from 8 ranks.
    for rank in range(nranks):
        if nranks >= 8:
            assert reduces["crowded"][rank] > reduces["spread"][rank], (crowded.tail(), spread.tail())
        else:
            assert reduces["crowded"][rank] == reduces["spread"][rank], (crowded.tail(), spread.tail())


@pytest.mark.parametrize("nranks", [4, 8])
def test_crowded_node_allreduces_through_the_root(bits_exe, nranks):
    """Blocking allreduces, in place too."""
    _through_root(bits_exe, nranks)


@pytest.mark.parametrize("nranks", [4, 8])
def test_crowded_node_iallreduces_through_the_root(bits_exe, nranks):
    """MPI_Iallreduce alone: rank 0 starts its broadcast when its reduce
    completes, the others at once, with several collectives in flight."""
    _through_root(bits_exe, nranks, ["nb"])
