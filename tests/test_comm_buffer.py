"""MPI 4.1 per-communicator buffers for buffered sends
(MPI_Comm_attach_buffer(_c), _detach_buffer(_c), _flush_buffer,
_iflush_buffer) beside the process buffer of MPI_Buffer_attach.

MPICH 4.0.2 has none of these functions (its library cannot even link the
program), so comm_buffer is built with lanaicc only and runs on Lanai at
1-4 ranks over 1-3 emulated nodes.
"""

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROGRAMS = ["comm_buffer"]

if harness.QUICK:
    SHAPES = [(1, 1), (3, 2)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 3)]


@pytest.fixture(scope="module")
def cbuf_lanai():
    return harness.build_programs(PROGRAMS, "lanai")


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(PROGRAMS, SHAPES))
def test_comm_buffer_on_lanai(cbuf_lanai, prog, nranks, nodes):
    exe = cbuf_lanai[prog]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert_passed(result, prog)
    assert_clean(result)
