"""User-defined reduction operations and process topologies: the userop
and topo_*.c programs on Lanai at 1-8 ranks over 1-3 emulated nodes, an
mpicc.mpich-built copy on Lanai, and the same copy on real MPICH (which
checks the programs themselves).

userop also runs with every allreduce and scan algorithm forced, since a
non-commutative operation catches any algorithm that reorders operands.
"""


import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROGRAMS = ["userop", "long_double", "topo_cart", "topo_graph", "topo_neighbor"]
ALLREDUCE_ALGOS = ["reduce_bcast", "recursive_doubling", "rabenseifner", "ring"]

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 3), (5, 2), (8, 3)]


@pytest.fixture(scope="module")
def ot_lanai():
    return harness.build_programs(PROGRAMS, "lanai")


@pytest.fixture(scope="module")
def ot_mpich():
    return harness.build_programs(PROGRAMS, "mpich")


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_ops_topo_on_lanai(ot_lanai, prog, nranks, nodes):
    exe = ot_lanai[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.parametrize("algo", ALLREDUCE_ALGOS)
@pytest.mark.parametrize("nranks", [3, 4, 6])
def test_userop_every_allreduce_algorithm(ot_lanai, algo, nranks):
    exe = ot_lanai["userop"]
    result = run_job(
        lanairun_argv(exe, nranks, 2), exe, env_extra={"LANAI_ALLREDUCE": algo}
    )
    assert_passed(result, "userop")
    assert_clean(result)


@pytest.mark.parametrize("algo", ["chain", "recursive_doubling"])
@pytest.mark.parametrize("nranks,nodes", [(1, 1), (3, 1), (5, 3), (6, 2), (8, 4)])
def test_userop_scans_by_every_algorithm(ot_lanai, algo, nranks, nodes):
    exe = ot_lanai["userop"]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe, env_extra={"LANAI_SCAN": algo})
    assert_passed(result, "userop")
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_ops_topo_mpich_build_on_lanai(ot_mpich, prog):
    exe = ot_mpich[prog]
    result = run_job(lanairun_argv(exe, 4, 2), exe, env_extra=lib_env())
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
@pytest.mark.parametrize("nranks", [3, 4])
def test_ops_topo_programs_on_real_mpich(ot_mpich, prog, nranks):
    """The programs themselves are right: they pass on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = ot_mpich[prog]
    argv = [harness.HYDRA, "-n", str(nranks), exe]
    result = run_job(argv, exe, timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, prog)
