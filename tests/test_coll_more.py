"""coll_more.c on Lanai: every collective beyond the basic four, blocking and
nonblocking, across the rank/node matrix, plus the MPICH-built binary run on
Lanai through LD_LIBRARY_PATH (the drop-in ABI promise)."""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

NAME = "coll_more"

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3), (8, 2)]
else:
    SHAPES = [(n, k) for n in (1, 2, 3, 4, 8) for k in (1, 2, 3) if k <= n]


@pytest.fixture(scope="module")
def lanai_exe(lanai_builds):
    return harness.build_programs([NAME], "lanai")[NAME]


@pytest.fixture(scope="module")
def mpich_exe(lanai_builds):
    return harness.build_programs([NAME], "mpich")[NAME]


@pytest.mark.parametrize(
    "nranks,nodes",
    [
        pytest.param(n, k, id=f"n{n}-nodes{k}", marks=[pytest.mark.slow] if n >= 8 else [])
        for n, k in SHAPES
    ],
)
def test_coll_more(lanai_exe, nranks, nodes):
    result = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe)
    assert_passed(result, NAME)
    assert_clean(result)


@pytest.mark.mpich
def test_coll_more_mpich_binary(mpich_exe):
    env = dict(lib_env(), LANAI_STATS="1")
    result = run_job(lanairun_argv(mpich_exe, 4, 2), mpich_exe, env_extra=env)
    assert_passed(result, NAME)
    assert_clean(result)
    # Lanai's own statistics line proves the binary ran on Lanai, not MPICH.
    assert "lanai: stats rank" in result.output, result.tail()
