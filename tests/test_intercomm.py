"""Intercommunicators: tests/c/intercomm.c (Intercomm_create, queries,
point-to-point, the blocking collectives, dup, merge) on Lanai at 2-8 ranks
over 1-3 emulated nodes, an mpicc.mpich-built copy on Lanai, and the same
copy on real MPICH (which checks the program itself)."""


import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

NAME = "intercomm"

if harness.QUICK:
    SHAPES = [(2, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(2, 1), (2, 2), (3, 1), (3, 2), (4, 3), (5, 3), (8, 1), (8, 3)]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([NAME], "lanai")[NAME]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([NAME], "mpich")[NAME]


@pytest.mark.parametrize(
    "nranks,nodes",
    [
        pytest.param(n, k, id=f"n{n}-nodes{k}", marks=[pytest.mark.slow] if n >= 8 else [])
        for n, k in SHAPES
    ],
)
def test_intercomm_on_lanai(lanai_exe, nranks, nodes):
    result = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe)
    assert_passed(result, NAME)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("nranks,nodes", [(4, 2), (5, 3)])
def test_intercomm_mpich_build_on_lanai(mpich_exe, nranks, nodes):
    result = run_job(lanairun_argv(mpich_exe, nranks, nodes), mpich_exe, env_extra=lib_env())
    assert_passed(result, NAME)
    assert_clean(result)


@pytest.mark.mpich
def test_intercomm_program_on_real_mpich(mpich_exe):
    """The program itself is right: it passes on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    result = run_job([harness.HYDRA, "-n", "5", mpich_exe], mpich_exe, timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, NAME)
