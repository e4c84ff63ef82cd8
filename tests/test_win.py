"""RMA windows without RMA communication: win_basic.c (Alloc_mem/Free_mem,
creation in every flavor, free, attributes, group, name, info, error
handlers, shared windows, argument errors, 1000 create/free cycles) built
with lanaicc and with mpicc.mpich, on Lanai over 1-3 emulated nodes, and
the MPICH-built copy on real MPICH (which checks the program itself).

Shared windows must leave nothing in /dev/shm: `assert_clean` checks that
after every run.
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROGRAMS = ["win_basic"]

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 3), (8, 3)]


@pytest.fixture(scope="module")
def win_lanai():
    return harness.build_programs(PROGRAMS, "lanai")


@pytest.fixture(scope="module")
def win_mpich():
    return harness.build_programs(PROGRAMS, "mpich")


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_win_on_lanai(win_lanai, prog, nranks, nodes):
    exe = win_lanai[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_win_mpich_build_on_lanai(win_mpich, prog, nranks, nodes):
    exe = win_mpich[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe, env_extra=lib_env())
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_win_program_on_real_mpich(win_mpich, prog):
    """The program itself is right: it passes on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = win_mpich[prog]
    result = run_job([harness.HYDRA, "-n", "2", exe], exe, timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, prog)
