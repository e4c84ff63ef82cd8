"""Attributes, info objects and error handlers: the attr_*, info_* and
errh_* programs on Lanai at 1-8 ranks over 1-3 emulated nodes, an
mpicc.mpich-built copy on Lanai, and the same copy on real MPICH (which
checks the programs themselves).

attr_self_finalize prints one `SELF_DELETE <rank> <value> <order> ...`
line per callback from inside MPI_Finalize; the test checks that every rank
ran both callbacks, newest attribute first, before MPI was finalized.
"""

import re

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROGRAMS = ["attr_comm", "attr_type", "attr_self_finalize", "info_basic", "errh_user"]

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 3), (8, 3)]

SELF_DELETE = re.compile(
    r"^SELF_DELETE (\d+) (\d+) (\d+) finalized=(\d+) self_size=(\d+)\s*$", re.M
)


def check_self_delete(result, nranks):
    """Both MPI_COMM_SELF delete callbacks ran on every rank, in reverse
    order of setting (value 2 first), while MPI was still usable."""
    seen = {}
    for m in SELF_DELETE.finditer(result.output):
        rank, value, order, finalized, self_size = map(int, m.groups())
        seen.setdefault(rank, []).append((order, value))
        assert finalized == 0, "callback saw MPI_Finalized true\n" + result.tail()
        assert self_size == 1, "MPI_COMM_SELF size in callback\n" + result.tail()
    assert sorted(seen) == list(range(nranks)), (
        f"SELF_DELETE lines from ranks {sorted(seen)}, want 0..{nranks - 1}\n" + result.tail()
    )
    for rank, calls in seen.items():
        assert sorted(calls) == [(0, 2), (1, 1)], (
            f"rank {rank}: callbacks (order, value) {sorted(calls)}, want [(0, 2), (1, 1)]\n"
            + result.tail()
        )


@pytest.fixture(scope="module")
def aie_lanai():
    return harness.build_programs(PROGRAMS, "lanai")


@pytest.fixture(scope="module")
def aie_mpich():
    return harness.build_programs(PROGRAMS, "mpich")


def _check(result, prog, nranks):
    assert_passed(result, prog)
    if prog == "attr_self_finalize":
        check_self_delete(result, nranks)


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_on_lanai(aie_lanai, prog, nranks, nodes):
    exe = aie_lanai[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    _check(result, prog, nranks)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_mpich_build_on_lanai(aie_mpich, prog):
    exe = aie_mpich[prog]
    result = run_job(lanairun_argv(exe, 4, 2), exe, env_extra=lib_env())
    _check(result, prog, 4)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_programs_on_real_mpich(aie_mpich, prog):
    """The programs themselves are right: they pass on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = aie_mpich[prog]
    result = run_job([harness.HYDRA, "-n", "3", exe], exe, timeout_s=harness.JOB_TIMEOUT_S)
    _check(result, prog, 3)
