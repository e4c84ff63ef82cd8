"""Large collective messages passed by reference between ranks of one node:
the sender keeps the message and sends its address, the receiver reads it
with process_vm_readv as it dequeues the reference (engine/coll_ref.rs).

coll_by_ref.c checks every element of allreduce, reduce, bcast, allgather
and three nonblocking allreduces in flight, at sizes around the 16 KiB
threshold and above it. The runs also check, from each rank's LANAI_STATS
line, that references were really passed and read, that none are passed
with single copy off, and that a rank which cannot read them has the data
sent inline without losing the order of the sender's messages.
"""

import re

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROG = "coll_by_ref"
SHAPES = [(2, 1), (3, 1), (4, 2)] if harness.QUICK else [(1, 1), (2, 1), (3, 1), (5, 1), (4, 2), (8, 3)]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([PROG], "lanai")[PROG]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([PROG], "mpich")[PROG]


# On one node, allreduces, reduces and broadcasts would go through the
# staging slots in chunks, with no message to pass: named algorithms keep
# them on the message machines these tests are about.
MESSAGES = {"LANAI_STATS": "1", "LANAI_ALLREDUCE": "rabenseifner", "LANAI_REDUCE": "binomial",
            "LANAI_BCAST": "binomial"}


def _refs(output):
    """{rank: (passed, read, refused)} from the LANAI_STATS lines."""
    found = re.findall(
        r"stats rank (\d+):.*collective references passed (\d+) read (\d+) refused (\d+)", output
    )
    return {int(r): tuple(int(x) for x in rest) for r, *rest in found}


def _refused_by_kernel(output):
    return "single-copy read failed" in output


@pytest.mark.parametrize("nranks,nodes", SHAPES)
def test_large_collectives_by_reference(lanai_exe, nranks, nodes):
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe, MESSAGES)
    assert_passed(r, PROG)
    assert_clean(r)
    refs = _refs(r.output)
    assert sorted(refs) == list(range(nranks)), r.tail()
    passed = sum(p for p, _, _ in refs.values())
    got = sum(g + f for _, g, f in refs.values())
    # Every reference passed was answered by its receiver, read or not.
    assert passed == got, r.tail()
    ranks_per_node = -(-nranks // nodes)
    if ranks_per_node >= 2 and not _refused_by_kernel(r.output):
        assert passed > 0, r.tail()
        assert all(f == 0 for _, _, f in refs.values()), r.tail()
    if ranks_per_node == 1:
        assert passed == 0, r.tail()


def test_answers_over_tcp_come_in_batches(lanai_exe):
    # Over TCP a message above the eager limit goes whole and its receiver
    # owes the sender a USED answer (engine/used_batch.rs); answers go
    # several to a message, so there are fewer answers than messages
    # answered. The 64 KiB messages batch; the 256 KiB ones go one each.
    r = run_job(lanairun_argv(lanai_exe, 2, 2), lanai_exe, {"LANAI_STATS": "1"})
    assert_passed(r, PROG)
    assert_clean(r)
    found = re.findall(r"stats rank \d+:.*used answers (\d+) for (\d+)", r.output)
    assert len(found) == 2, r.tail()
    sent = sum(int(a) for a, _ in found)
    answered = sum(int(m) for _, m in found)
    assert answered > 0, r.tail()
    assert sent < answered, r.tail()


def test_single_copy_off_sends_inline(lanai_exe):
    r = run_job(lanairun_argv(lanai_exe, 3, 1), lanai_exe,
                {**MESSAGES, "LANAI_SINGLE_COPY": "off"})
    assert_passed(r, PROG)
    assert_clean(r)
    assert all(p == 0 for p, _, _ in _refs(r.output).values()), r.tail()


@pytest.mark.parametrize("nranks", [2, 4])
def test_a_rank_that_cannot_read_gets_the_data_inline_in_order(lanai_exe, tmp_path, nranks):
    # Rank 1 runs with single copy off, as if the kernel refused it: every
    # reference sent to it comes back as a request for the data, and the
    # sender's later messages wait behind it. Its peers then stop passing
    # references; the results must not change.
    wrap = tmp_path / "one_refuses.sh"
    wrap.write_text(
        '#!/bin/sh\n[ "$PMI_RANK" = 1 ] && export LANAI_SINGLE_COPY=off\nexec "$@"\n'
    )
    wrap.chmod(0o755)
    argv = lanairun_argv(str(wrap), nranks, 1, [lanai_exe, "2"])
    r = run_job(argv, lanai_exe, MESSAGES)
    assert_passed(r, PROG)
    assert_clean(r)
    refs = _refs(r.output)
    assert sorted(refs) == list(range(nranks)), r.tail()
    assert refs[1][2] > 0, r.tail()
    assert refs[1][0] == 0, r.tail()
    assert sum(p for p, _, _ in refs.values()) == sum(g + f for _, g, f in refs.values()), r.tail()


@pytest.mark.parametrize("nranks", [2, 4])
def test_a_rank_killed_with_references_in_flight_ends_the_job(lanai_exe, nranks):
    r = run_job(lanairun_argv(lanai_exe, nranks, 1, ["kill"]), lanai_exe)
    harness.assert_ended_by_killed_rank(r, nranks - 1)


def test_mpich_build_on_lanai_under_hydra(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 3, ["1"])


def test_program_itself_on_mpich(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 3, ["1"], on_lanai=False)


@pytest.mark.parametrize("nranks", [2, 3, 5])
def test_the_same_collectives_in_chunks_on_one_node(lanai_exe, nranks):
    """Under the default knobs the program's allreduces, reduces,
    broadcasts and allgathers on one node go through the staging slots in
    chunks instead, and every check of the program holds there too."""
    r = run_job(lanairun_argv(lanai_exe, nranks, 1), lanai_exe, {"LANAI_STATS": "1"})
    assert_passed(r, PROG)
    assert_clean(r)
    for field in ("chunked allreduces", "chunked reduces", "chunked bcasts", "chunked gathers"):
        counts = harness.rank_stats(r.output, field)
        assert sorted(counts) == list(range(nranks)), r.tail()
        assert all(n > 0 for n in counts.values()), (field, r.tail())
