"""The tool information interface (MPI_T): Lanai's LANAI_* knobs as
control variables, queried before MPI_Init, during the job and after
MPI_Finalize, by a program built with lanaicc and one built with
mpicc.mpich, and by MPICH's own `mpivars` tool running on Lanai."""

import os
import re
import shutil
import subprocess

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

SHAPES = [(1, 1), (3, 2)]
MPIVARS = "/usr/bin/mpivars"


def knob_count():
    """How many knobs lanai-info lists: the count MPI_T must report."""
    out = subprocess.run([os.path.join(harness.BUILD_DIR, "bin", "lanai-info")],
                         stdout=subprocess.PIPE, text=True, timeout=30).stdout
    return len(set(re.findall(r"\b(LANAI_[A-Z0-9_]+)\b", out)))


@pytest.fixture(scope="module")
def mpi_t_builds():
    built = {"lanai": harness.build_programs(["mpi_t"], "lanai")["mpi_t"]}
    if harness.have(harness.MPICH_CC):
        built["mpich"] = harness.build_programs(["mpi_t"], "mpich")["mpi_t"]
    return built


@pytest.mark.parametrize("flavor", ["lanai", "mpich"])
@pytest.mark.parametrize("nranks,nodes", SHAPES)
def test_knobs_are_control_variables(mpi_t_builds, flavor, nranks, nodes):
    if flavor not in mpi_t_builds:
        pytest.skip(f"{harness.MPICH_CC} not installed")
    exe = mpi_t_builds[flavor]
    env = {"LANAI_EAGER_LIMIT": "4096"}
    if flavor == "mpich":
        env.update(lib_env())
    result = run_job(lanairun_argv(exe, nranks, nodes, [str(knob_count())]), exe, env_extra=env)
    assert_passed(result, "mpi_t")
    assert_clean(result)


@pytest.mark.mpich
def test_mpich_mpivars_lists_lanai_knobs(tmp_path):
    """MPICH's mpivars, an MPICH-built tool, runs on Lanai unchanged."""
    if not os.path.exists(MPIVARS) or not shutil.which("ldd"):
        pytest.skip(f"{MPIVARS} not installed (Debian: apt install mpich)")
    exe = MPIVARS
    result = run_job(lanairun_argv(exe, 1, 1), exe,
                     env_extra=dict(lib_env(), LANAI_EAGER_LIMIT="12345"))
    assert result.returncode == 0, result.tail()
    assert re.search(r"LANAI_EAGER_LIMIT\b.*12345", result.output), result.tail()
    assert "LANAI_OFFLOAD" in result.output, result.tail()
