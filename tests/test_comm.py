"""Communicators and groups: the comm_*.c programs on Lanai at 1-8 ranks
over 1-3 emulated nodes, an mpicc.mpich-built copy on Lanai, and the same
copy on real MPICH (which checks the programs themselves).

Each program gets the node count as argv[1]; comm_split checks
MPI_COMM_TYPE_SHARED against lanairun's block layout with it.
"""


import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROGRAMS = ["comm_split", "comm_dup", "comm_idup", "comm_create", "comm_group"]

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(n, k) for n in (1, 2, 3, 4, 8) for k in (1, 2, 3) if k <= n]


@pytest.fixture(scope="module")
def comm_lanai():
    return harness.build_programs(PROGRAMS, "lanai")


@pytest.fixture(scope="module")
def comm_mpich():
    return harness.build_programs(PROGRAMS, "mpich")


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_comm_on_lanai(comm_lanai, prog, nranks, nodes):
    exe = comm_lanai[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes, [str(nodes)]), exe)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_comm_mpich_build_on_lanai(comm_mpich, prog):
    exe = comm_mpich[prog]
    result = run_job(lanairun_argv(exe, 4, 2, ["2"]), exe, env_extra=lib_env())
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_comm_programs_on_real_mpich(comm_mpich, prog):
    """The programs themselves are right: they pass on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = comm_mpich[prog]
    argv = [harness.HYDRA, "-n", "4", exe, "1"]
    result = run_job(argv, exe, timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, prog)
