"""Intercommunicator collectives on non-contiguous derived datatypes:
tests/c/intercomm_derived.c (every collective, blocking, nonblocking and
two persistent ones, with vector, indexed and struct types with holes on
either side against plain ints, sentinels in the holes, reductions with a
user operation on those types) on Lanai at 2-8 ranks over 1-3 emulated
nodes, built with lanaicc and with mpicc.mpich, and the mpicc.mpich copy on
real MPICH (which checks the program itself)."""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

NAME = "intercomm_derived"

if harness.QUICK:
    SHAPES = [(2, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(2, 1), (3, 2), (4, 3), (5, 1), (8, 3)]


def shape_params():
    return [
        pytest.param(n, k, id=f"n{n}-nodes{k}", marks=[pytest.mark.slow] if n >= 8 else [])
        for n, k in SHAPES
    ]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([NAME], "lanai")[NAME]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([NAME], "mpich")[NAME]


@pytest.mark.parametrize("nranks,nodes", shape_params())
def test_intercomm_derived_on_lanai(lanai_exe, nranks, nodes):
    result = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe)
    assert_passed(result, NAME)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("nranks,nodes", shape_params())
def test_intercomm_derived_mpich_build_on_lanai(mpich_exe, nranks, nodes):
    result = run_job(lanairun_argv(mpich_exe, nranks, nodes), mpich_exe, env_extra=lib_env())
    assert_passed(result, NAME)
    assert_clean(result)


@pytest.mark.mpich
def test_intercomm_derived_program_on_real_mpich(mpich_exe):
    """The program itself is right: it passes on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    result = run_job([harness.HYDRA, "-n", "5", mpich_exe], mpich_exe, timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, NAME)
