"""Small reduces on one node (the mailbox path, engine/central_reduce.rs):
a blocking reduce that finds its slot free, or its contributions all in,
finishes as it starts, without a request; one that does not waits in the
queue with the nonblocking ones. reduce_small.c mixes the two on one
communicator with rotating roots and late ranks, and checks every result.
LANAI_REDUCE=binomial runs the same program through the message-passing
reduce, for comparison.
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROG = "reduce_small"
SHAPES = [(2, 1), (4, 1), (4, 2)] if harness.QUICK else [(1, 1), (2, 1), (3, 1), (5, 1), (8, 1), (4, 2), (6, 3)]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([PROG], "lanai")[PROG]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([PROG], "mpich")[PROG]


@pytest.mark.parametrize("nranks,nodes", SHAPES)
@pytest.mark.parametrize("algo", ["auto", "binomial"])
def test_small_reduces(lanai_exe, nranks, nodes, algo):
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes, ["120"]), lanai_exe, {"LANAI_REDUCE": algo})
    assert_passed(r, PROG)
    assert_clean(r)


def test_mpich_build_on_lanai_under_hydra(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 4, ["60"])


def test_program_itself_on_mpich(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 3, ["30"], on_lanai=False)
