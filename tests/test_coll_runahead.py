"""Ranks that run ahead of a slow root (engine/coll_ref.rs): large
collective messages are lent to their receiver, by reference within a node
and whole over TCP, and a sender has at most LENT_MAX bytes of them
unused past the instances that sent them. coll_runahead.c loops over
64 KiB reduces to a root that lingers at every call, checks every result,
and bounds how far each rank's peak resident size grows over the loop: a
library that kept every early contribution would grow by about
calls * 64 KiB per child of the root.
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROG = "coll_runahead"
SHAPES = [(4, 1), (4, 4), (8, 3)] if harness.QUICK else [(1, 1), (2, 1), (4, 1), (4, 2), (4, 4), (8, 3)]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([PROG], "lanai")[PROG]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([PROG], "mpich")[PROG]


@pytest.mark.parametrize("nranks,nodes", SHAPES)
def test_memory_stays_bounded_when_ranks_run_ahead(lanai_exe, nranks, nodes):
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe)
    assert_passed(r, PROG)
    assert_clean(r)


@pytest.mark.parametrize("size", [16385, 262144])
def test_sizes_around_the_lending_threshold_and_above(lanai_exe, size):
    r = run_job(lanairun_argv(lanai_exe, 4, 2, ["600", str(size), "32"]), lanai_exe)
    assert_passed(r, PROG)
    assert_clean(r)


def test_mpich_build_on_lanai_under_hydra(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 4)


def test_program_itself_on_mpich(mpich_exe):
    # Results only: how far MPICH lets ranks run ahead is its own business.
    harness.assert_passes_under_hydra(mpich_exe, PROG, 2, ["200", "65536", "0"], on_lanai=False)
