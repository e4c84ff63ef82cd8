"""Small collectives on one node through the barrier device
(engine/riding.rs, engine/mail_share.rs): allgather(v), all-to-all and
reduce-scatter ride on a device barrier, each rank reading the others'
parts from their data slots; broadcasts, scatters and gathers go through
the mailboxes, where the sender posts and goes on. coll_small.c checks
every result against values it computes itself, at every size around the
thresholds, on the world and a split communicator, in place, with calls
in flight and a root that runs ahead.

The runs also check, from LANAI_STATS, that these paths were taken on one
node and not across nodes or under LANAI_NODE_COLL=messages, and that the
floating-point results are the same bits on every path.
"""

import re

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROG = "coll_small"
SHAPES = [(2, 1), (3, 1), (4, 2)] if harness.QUICK else [
    (1, 1), (2, 1), (3, 1), (4, 1), (8, 1), (2, 2), (4, 2), (5, 3), (8, 3)]
DIGEST = re.compile(r"^digest (\d+) ([0-9a-f]+)$", re.M)


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([PROG], "lanai")[PROG]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([PROG], "mpich")[PROG]


def _digests(r):
    return dict(DIGEST.findall(r.output))


def _counts(r, nranks, field):
    counts = harness.rank_stats(r.output, field)
    assert sorted(counts) == list(range(nranks)), r.tail()
    return counts


@pytest.mark.parametrize("nranks,nodes", SHAPES)
def test_small_collectives(lanai_exe, nranks, nodes):
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes), lanai_exe, {"LANAI_STATS": "1"})
    assert_passed(r, PROG)
    assert_clean(r)
    riding = _counts(r, nranks, "device collectives")
    mail = _counts(r, nranks, "mailbox shares")
    if nodes == 1 and nranks > 1:
        assert all(n > 0 for n in riding.values()), r.tail()
        assert all(n > 0 for n in mail.values()), r.tail()
    elif nodes == nranks:
        # A rank alone on its node: the split halves too, so nothing rides.
        assert all(n == 0 for n in riding.values()), r.tail()
        assert all(n == 0 for n in mail.values()), r.tail()
    assert len(_digests(r)) == nranks, r.tail()


@pytest.mark.parametrize("nranks", [2, 3, 8])
def test_messages_give_the_same_bits(lanai_exe, nranks):
    """LANAI_NODE_COLL=messages and LANAI_BCAST=binomial: neither the device
    nor the mailboxes, the same checks pass, and every rank's floating-point
    results are the same bits as on the device."""
    fast = run_job(lanairun_argv(lanai_exe, nranks, 1), lanai_exe, {"LANAI_STATS": "1"})
    assert_passed(fast, PROG)
    slow = run_job(lanairun_argv(lanai_exe, nranks, 1), lanai_exe,
                   {"LANAI_STATS": "1", "LANAI_NODE_COLL": "messages", "LANAI_BCAST": "binomial"})
    assert_passed(slow, PROG)
    assert_clean(slow)
    for field in ("device collectives", "mailbox shares", "chunked gathers"):
        assert all(n == 0 for n in _counts(slow, nranks, field).values()), slow.tail()
    assert _digests(fast) == _digests(slow)
    assert len(_digests(fast)) == nranks


@pytest.mark.parametrize("env", [{}, {"LANAI_NODE_COLL": "messages"}], ids=["auto", "messages"])
def test_a_long_loop_of_gathers_still_finalizes(lanai_exe, env):
    """20000 gathers back to back on 8 ranks: through messages, the root
    ends up owing the others answers about messages they lent it, and a
    peer that has finalized stops reading its ring. MPI_Finalize used to
    wait for ring space there forever (half the runs hung). Three runs,
    so a return of that bug fails this almost surely."""
    for _ in range(3):
        r = run_job(lanairun_argv(lanai_exe, 8, 1, ("1", "20000")), lanai_exe, env)
        assert_passed(r, PROG)
        assert_clean(r)


def test_a_bad_knob_value_is_named(lanai_exe):
    r = run_job(lanairun_argv(lanai_exe, 2, 1), lanai_exe, {"LANAI_NODE_COLL": "fast"})
    assert r.returncode != 0
    assert "LANAI_NODE_COLL" in r.output and "auto, messages" in r.output, r.tail()


def test_mpich_build_on_lanai_under_hydra(mpich_exe):
    harness.assert_passes_under_hydra(mpich_exe, PROG, 4)
