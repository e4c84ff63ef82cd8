"""MPI-4 large-count ("_c") entry points with ordinary counts:
large_count_api.c checks that every _c call gives what its int form
defines (p2p, blocking and nonblocking collectives, persistent and
neighbourhood collectives, MPI_Op_create_c). It runs on Lanai built with
lanaicc and built with mpicc.mpich, at 1-8 ranks over 1-3 emulated nodes,
and the mpicc.mpich copy also on real MPICH, which checks the program.

On Lanai (and with "strict") the program holds two checks that MPICH 4.0.2
fails in the int forms too: Allgatherv's displs[0] on one rank, and the
direction of neighbour blocks on a periodic ring of 1 or 2 ranks.
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROG = "large_count_api"

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
def test_large_count_on_lanai(lanai_build, prog, nranks, nodes):
    exe = lanai_build
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params([PROG], SHAPES))
def test_large_count_mpich_build_on_lanai(mpich_build, prog, nranks, nodes):
    exe = mpich_build
    result = run_job(lanairun_argv(exe, nranks, nodes), exe, env_extra=lib_env())
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("nranks", [1, 3, 4])
def test_large_count_program_on_real_mpich(mpich_build, nranks):
    """The program itself is right: it passes on MPICH (which excuses the
    two MPICH quirks above by itself)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = mpich_build
    result = run_job([harness.HYDRA, "-n", str(nranks), exe], exe,
                     timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, PROG)


# Counts beyond INT_MAX: large_count_huge.c moves 2 GiB + 4 KiB messages
# (contiguous, then into a strided receive type) and broadcasts one. It
# needs about 10 GiB, so it runs on one shape and only where the memory is.
HUGE = "large_count_huge"
HUGE_NEEDS_GIB = 14


def _available_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / (1 << 20)
    return 0.0


def test_large_count_beyond_int_max():
    have = _available_gib()
    if have < HUGE_NEEDS_GIB:
        pytest.skip(f"needs {HUGE_NEEDS_GIB} GiB of available memory, have {have:.1f}")
    exe = harness.build_programs([HUGE], "lanai")[HUGE]
    # About 40 s here, most of it the kernel faulting in 10 GiB.
    argv = [harness.LANAIRUN, "-n", "2", "--timeout", "240", exe]
    result = run_job(argv, exe, timeout_s=270)
    assert_passed(result, HUGE)
    assert_clean(result)
