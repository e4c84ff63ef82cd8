"""MPI_Isendrecv(_replace), generalized requests (including
MPI_Grequest_complete from a second thread), MPI_Pcontrol and
MPI_Comm_get_parent, and the MPI 4.1 error-class removal and buffer flush.

The programs run on Lanai at 1-8 ranks over 1-3 emulated nodes, built with
lanaicc and with mpicc.mpich; those MPICH 4.0.2 can run also pass on real
MPICH, which checks the programs themselves. misc41 uses MPI 4.1 functions
MPICH 4.0.2 lacks, so it is built with lanaicc only.
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROGRAMS = ["isendrecv", "grequest", "pcontrol_parent", "misc41"]
ON_MPICH = ["isendrecv", "grequest", "pcontrol_parent"]

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 3), (8, 3)]


@pytest.fixture(scope="module")
def ext_lanai():
    return harness.build_programs(PROGRAMS, "lanai")


@pytest.fixture(scope="module")
def ext_mpich():
    return harness.build_programs(ON_MPICH, "mpich")


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_requests_ext_on_lanai(ext_lanai, prog, nranks, nodes):
    exe = ext_lanai[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(ON_MPICH, SHAPES))
def test_requests_ext_mpich_build_on_lanai(ext_mpich, prog, nranks, nodes):
    exe = ext_mpich[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe, env_extra=lib_env())
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", ON_MPICH)
def test_requests_ext_programs_on_real_mpich(ext_mpich, prog):
    """The programs themselves are right: they pass on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = ext_mpich[prog]
    result = run_job([harness.HYDRA, "-n", "4", exe], exe, timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, prog)
