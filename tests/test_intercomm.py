"""Intercommunicators: tests/c/intercomm.c (Intercomm_create, queries,
point-to-point, the blocking collectives, dup, merge) and
tests/c/intercomm_more.c (every collective, blocking and nonblocking, the
v/w variants, reduce-scatter, a barrier that must not block, scans
refused) and tests/c/intercomm_split.c (Comm_split and Comm_create on an
intercommunicator) on Lanai at 2-8 ranks over 1-3 emulated nodes, mpicc.mpich-built
copies on Lanai, and the same copies on real MPICH (which checks the
programs themselves)."""


import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

NAMES = ["intercomm", "intercomm_more", "intercomm_split", "intercomm_groups"]

if harness.QUICK:
    SHAPES = [(2, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(2, 1), (2, 2), (3, 1), (3, 2), (4, 3), (5, 3), (8, 1), (8, 3)]


@pytest.fixture(scope="module")
def lanai_exes():
    return harness.build_programs(NAMES, "lanai")


@pytest.fixture(scope="module")
def mpich_exes():
    return harness.build_programs(NAMES, "mpich")


@pytest.mark.parametrize(
    "nranks,nodes",
    [
        pytest.param(n, k, id=f"n{n}-nodes{k}", marks=[pytest.mark.slow] if n >= 8 else [])
        for n, k in SHAPES
    ],
)
@pytest.mark.parametrize("name", NAMES)
def test_intercomm_on_lanai(lanai_exes, name, nranks, nodes):
    exe = lanai_exes[name]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, name)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("nranks,nodes", [(4, 2), (5, 3)])
@pytest.mark.parametrize("name", NAMES)
def test_intercomm_mpich_build_on_lanai(mpich_exes, name, nranks, nodes):
    exe = mpich_exes[name]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe, env_extra=lib_env())
    assert_passed(result, name)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("name", NAMES)
def test_intercomm_program_on_real_mpich(mpich_exes, name):
    """The program itself is right: it passes on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = mpich_exes[name]
    result = run_job([harness.HYDRA, "-n", "5", exe], exe, timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, name)
