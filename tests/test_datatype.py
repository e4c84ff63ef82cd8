"""Derived datatypes: the datatype_*.c programs on Lanai at 1-8 ranks over
1-3 emulated nodes, an mpicc.mpich-built copy on Lanai, and the same copy
on real MPICH (which checks the programs themselves; MPICH's broken
external32 and its refusal of predefined reductions on derived types are
excused inside the programs). userop_derived covers user-defined
operations on non-contiguous types; on real MPICH it skips
Reduce_scatter_block, which overflows a buffer inside MPICH 4.0.2.
"""



import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

PROGRAMS = ["datatype_layout", "datatype_comm", "datatype_coll", "datatype_zerocopy",
            "userop_derived"]
# Arguments on real MPICH only (see the module docstring).
MPICH_ARGS = {"userop_derived": ["mpich"]}

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2), (4, 3)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 3), (8, 3)]


@pytest.fixture(scope="module")
def dt_lanai():
    return harness.build_programs(PROGRAMS, "lanai")


@pytest.fixture(scope="module")
def dt_mpich():
    return harness.build_programs(PROGRAMS, "mpich")


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_datatype_on_lanai(dt_lanai, prog, nranks, nodes):
    exe = dt_lanai[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_datatype_mpich_build_on_lanai(dt_mpich, prog):
    exe = dt_mpich[prog]
    result = run_job(lanairun_argv(exe, 4, 2), exe, env_extra=lib_env())
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.mpich
@pytest.mark.parametrize("prog", PROGRAMS)
def test_datatype_programs_on_real_mpich(dt_mpich, prog):
    """The programs themselves are right: they pass on MPICH (one node)."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = dt_mpich[prog]
    result = run_job([harness.HYDRA, "-n", "4", exe, *MPICH_ARGS.get(prog, [])], exe,
                     timeout_s=harness.JOB_TIMEOUT_S)
    assert_passed(result, prog)



@pytest.mark.parametrize(
    "label,nodes,extra",
    [
        ("single-copy", 1, {}),
        ("ring fallback", 1, {"LANAI_SINGLE_COPY": "off"}),
        ("tcp", 2, {}),
    ],
)
def test_datatype_zerocopy_transports(dt_lanai, label, nodes, extra):
    """Large non-contiguous messages on every transport; with single copy
    nothing is packed (the receiver reads the sender's pieces into its own)."""
    exe = dt_lanai["datatype_zerocopy"]
    result = run_job(lanairun_argv(exe, 2, nodes), exe, env_extra={"LANAI_STATS": "1", **extra})
    assert_passed(result, "datatype_zerocopy")
    assert_clean(result)
    packed = harness.rank_stats(result.output, "packed bytes")
    assert sorted(packed) == [0, 1], result.tail()
    if label == "single-copy" and "single-copy read failed" in result.output:
        pytest.skip("the kernel refuses process_vm_readv here (ptrace scope)")
    if label == "single-copy":
        assert packed == {0: 0, 1: 0}, result.tail()
    else:
        # Eager and streamed paths need contiguous bytes: they pack.
        assert all(n > 0 for n in packed.values()), result.tail()
