"""Persistent collectives (MPI_Bcast_init and the rest, MPI_Start/Startall):
coll_persistent.c on Lanai at 1-8 ranks over 1-3 emulated nodes, an
mpicc.mpich-built copy on Lanai, and that copy on Lanai under Hydra.

The program runs "strict" on Lanai. Real MPICH 4.0.2 cannot check it:
its persistent gather, scatter and allgather deliver nothing (a three-line
MPI_Gather_init program shows it), MPI_Wait on an inactive persistent
collective hangs, and it refuses MPI_SUM on derived types at init; the
program was checked on it for the other operations (without "strict").
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROG = "coll_persistent"

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 3), (8, 3)]


@pytest.fixture(scope="module")
def lanai_build():
    return harness.build_programs([PROG], "lanai")[PROG]


@pytest.fixture(scope="module")
def mpich_build():
    return harness.build_programs([PROG], "mpich")[PROG]


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params([PROG], SHAPES))
def test_coll_persistent_on_lanai(lanai_build, prog, nranks, nodes):
    exe = lanai_build
    result = run_job(lanairun_argv(exe, nranks, nodes, ["strict"]), exe)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
def test_coll_persistent_mpich_build_on_lanai(mpich_build):
    exe = mpich_build
    result = run_job(lanairun_argv(exe, 4, 2, ["strict"]), exe, env_extra=lib_env())
    assert_passed(result, PROG)
    assert_clean(result)


@pytest.mark.mpich
def test_coll_persistent_on_lanai_under_hydra(mpich_build):
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = mpich_build
    result = run_job([harness.HYDRA, "-n", "4", exe, "strict"], exe, env_extra=lib_env(),
                     timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, PROG)
    assert_clean(result)


NEIGHBOR = "neighbor_persistent"


@pytest.mark.parametrize("nranks,nodes", SHAPES, ids=[f"n{n}-nodes{k}" for n, k in SHAPES])
def test_neighbor_persistent_on_lanai(nranks, nodes):
    """MPI_Neighbor_*_init on a periodic ring, started four times (the last
    with Startall). Checked on real MPICH at 4 ranks; at 1 and 2 ranks a
    rank is its own neighbour twice, which MPICH 4.0.2 mismatches under
    Startall, so those shapes are Lanai-only."""
    exe = harness.build_programs([NEIGHBOR], "lanai")[NEIGHBOR]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, NEIGHBOR)
    assert_clean(result)
