"""Senders that run ahead of their receivers keep both sides' memory
bounded.

coll_runahead.c: collective messages are lent to their receiver (large ones
by reference within a node, small ones there once the ring is full; over
TCP, every message of a part that may finish before its receiver starts),
and a sender has at most LENT_MAX bytes of them unused past the instances
that sent them (engine/coll_ref.rs). It loops over reduces to a root that
lingers at every call, or over broadcasts from a root that runs ahead; a
library that kept every early message would grow by about calls * bytes per
receiver.

coll_inflight.c: thousands of small nonblocking collectives in flight at
once pass the bound and complete, each instance waiting for its own lent
messages only.

p2p_runahead.c: a point-to-point message above the eager limit waits for
its receive, over TCP as in shared memory (rendezvous), so neither the
sender's queue nor the receiver's unexpected messages hold it. Its
receivers linger before each receive; eager sending would grow one side by
calls * 256 KiB.

Both check every result and bound how far each rank's peak resident size
grows over the loop.
"""

import re

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, run_job

PROGS = ["coll_runahead", "p2p_runahead", "coll_inflight"]
# Arguments for a short run of each under mpiexec.hydra.
HYDRA_ARGS = {
    "coll_runahead": ["200", "65536", "0"],
    "p2p_runahead": ["200", "65536", "0"],
    "coll_inflight": ["2000", "20"],
}
SHAPES = [(4, 1), (4, 4), (8, 3)] if harness.QUICK else [(1, 1), (2, 1), (4, 1), (4, 2), (4, 4), (8, 3)]
P2P_SHAPES = [(2, 2), (3, 3)] if harness.QUICK else [(2, 1), (2, 2), (3, 3), (4, 2), (8, 3)]


@pytest.fixture(scope="module")
def lanai_exes():
    return harness.build_programs(PROGS, "lanai")


@pytest.fixture(scope="module")
def mpich_exes():
    return harness.build_programs(PROGS, "mpich")


def _passes(exe, name, nranks, nodes, args=()):
    r = run_job(lanairun_argv(exe, nranks, nodes, list(args)), exe)
    assert_passed(r, name)
    assert_clean(r)


@pytest.mark.parametrize("nranks,nodes", SHAPES)
def test_collectives_stay_bounded_when_ranks_run_ahead(lanai_exes, nranks, nodes):
    _passes(lanai_exes["coll_runahead"], "coll_runahead", nranks, nodes)


@pytest.mark.parametrize("size", [16385, 262144])
def test_collectives_around_the_lending_threshold_and_above(lanai_exes, size):
    _passes(lanai_exes["coll_runahead"], "coll_runahead", 4, 2, ["600", str(size), "32"])


@pytest.mark.parametrize("size", [1024, 4104])
def test_small_collective_messages_over_tcp_are_lent(lanai_exes, size):
    # Every message of a reduce's non-root is lent over TCP, whatever its
    # size. Lent, a rank grows by about 14 MiB at both 12000 and 40000
    # reduces of 1 KiB; unlent (before), 1 KiB ones grew ranks by 10-16 MiB
    # over 12000 and 50-67 MiB over 40000, and 4 KiB ones by 65-155 MiB
    # over 12000.
    _passes(lanai_exes["coll_runahead"], "coll_runahead", 4, 4, ["30000", str(size), "24"])


@pytest.mark.parametrize("nodes", [1, 4])
def test_broadcasts_from_a_root_that_runs_ahead_stay_bounded(lanai_exes, nodes):
    # The root sends and leaves; its receivers linger. Over TCP every
    # broadcast message is lent; on one node a small one is lent once the
    # ring to its receiver is full. 20000 broadcasts of 1 KiB grew the root
    # by 52-53 MiB unlent, on one node or four, and grow no rank by more
    # than about 18 MiB now.
    _passes(lanai_exes["coll_runahead"], "coll_runahead", 4, nodes,
            ["20000", "1024", "24", "bcast"])


@pytest.mark.parametrize("nranks,nodes,size", [(4, 4, 65536), (8, 8, 24576), (4, 2, 16384)])
def test_gathers_to_a_lingering_root_stay_bounded(lanai_exes, nranks, nodes, size):
    # A gather's blocks over TCP wait for the root's receive from 16 KiB
    # (SendMode::FanIn). Sent eagerly, the members ran calls ahead of their
    # root: at 8 ranks on 8 nodes with 64 KiB blocks each member grew by
    # about 100 MiB a second, and every gather took three times as long.
    _passes(lanai_exes["coll_runahead"], "coll_runahead", nranks, nodes,
            ["3000", str(size), "24", "gather"])


@pytest.mark.parametrize("nodes", [1, 2])
def test_receivers_that_drain_the_ring_inside_mpi_ask_the_root_to_lend(lanai_exes, nodes):
    # The receivers linger in MPI_Iprobe, so the ring from a root on their
    # node never fills and nothing was lent: 40000 broadcasts of 1 KiB grew
    # them by 29-33 MiB, and by calls * bytes for more calls. Past the
    # lending bound of early messages they ask the root to lend (LEND), and
    # grow by 10-12 MiB however many calls.
    # Broadcasts of 1 KiB on one node would go through the mailboxes
    # (engine/mail_share.rs), which lend nothing: messages here.
    exe = lanai_exes["coll_runahead"]
    r = run_job(lanairun_argv(exe, 4, nodes, ["40000", "1024", "20", "bcast-in-mpi"]), exe,
                {"LANAI_STATS": "1", "LANAI_BCAST": "binomial"})
    assert_passed(r, "coll_runahead")
    assert_clean(r)
    asked = harness.rank_stats(r.output, "asked to lend")
    assert len(asked) == 4, r.tail()
    assert sum(asked.values()) > 0, "no receiver asked its root to lend\n" + r.tail()


@pytest.mark.parametrize("nranks,nodes", [(4, 4), (3, 3), (4, 1), (8, 3)])
def test_thousands_of_nonblocking_collectives_in_flight(lanai_exes, nranks, nodes):
    # 12000 Ibcasts and 12000 Ireduces of one long per rank, posted at
    # once (the last rank 50 ms late) and completed last first, then in
    # any order: the senders pass the lending bound with messages their
    # receivers have not reached, so instances wait for their own answers
    # while thousands of others do. Before instances past the bound were
    # kept apart, every pass looked at each of them: 4 on 4 took 19 s
    # where the library before lending took 3.5 s. A pass drives only the
    # instances started or fed since the last one: 2.9 s before that,
    # 0.33 s after.
    exe = lanai_exes["coll_inflight"]
    r = run_job(lanairun_argv(exe, nranks, nodes, ["12000", "50"]), exe, {"LANAI_STATS": "1"})
    assert_passed(r, "coll_inflight")
    assert_clean(r)
    asked = harness.rank_stats(r.output, "asked")
    assert len(asked) == nranks, r.tail()
    assert sum(asked.values()) > 0, "no instance reached the bound\n" + r.tail()


def test_members_waiting_for_a_mailbox_slot_are_woken_not_timed_out(lanai_exes):
    # Small reduces on one node go through the mailboxes: the non-roots
    # run a whole mailbox ahead of the lingering root, then sleep until it
    # gives a slot back. The root rings only the members it sees asleep,
    # and a member's last look before sleeping was paced (FreeSlots), so a
    # slot given back just before the member said it sleeps went unseen
    # until the sleep's 100 ms timeout: 10000 reduces at 4 ranks had 1-4
    # such sleeps per rank in 3 runs of 4, and 3000 reduces took 0.26-0.31 s
    # against 0.15-0.19 s. LANAI_STATS counts sleeps that timed out; here
    # every sleep has a ring coming within 40 us, so none may.
    # LANAI_CORES=1 makes the ranks crowded whatever the machine, so they
    # sleep after a few dozen polls.
    exe = lanai_exes["coll_runahead"]
    for _ in range(2):
        r = run_job(lanairun_argv(exe, 4, 1, ["10000", "8", "0"]), exe,
                    {"LANAI_STATS": "1", "LANAI_CORES": "1"})
        assert_passed(r, "coll_runahead")
        assert_clean(r)
        sleeps = harness.rank_stats(r.output, "sleeps")
        timed_out = dict((int(k), int(v)) for k, v in re.findall(
            r"stats rank (\d+):.*sleeps \d+ \(timed out (\d+)\)", r.output))
        assert sorted(timed_out) == [0, 1, 2, 3], r.tail()
        assert sum(sleeps.values()) > 0, "nobody slept: the case is not exercised\n" + r.tail()
        assert all(n == 0 for n in timed_out.values()), r.tail()


def test_tiny_messages_count_against_the_bound_too(lanai_exes):
    # An 8-byte message counts as coll_ref::LENT_MIN_CHARGE (512) bytes, so
    # non-roots running 30000 reduces ahead of a lingering root reach the
    # 4 MiB bound (8192 messages) and wait for their root's answers: the
    # leaves ask (LANAI_STATS "asked"), and every result is still right.
    exe = lanai_exes["coll_runahead"]
    r = run_job(lanairun_argv(exe, 4, 4, ["30000", "8", "16"]), exe, {"LANAI_STATS": "1"})
    assert_passed(r, "coll_runahead")
    assert_clean(r)
    asked = harness.rank_stats(r.output, "asked")
    assert len(asked) == 4, r.tail()
    assert asked[0] == 0, r.tail()
    assert any(asked[k] > 0 for k in (1, 2, 3)), r.tail()


@pytest.mark.parametrize("nranks,nodes", P2P_SHAPES)
def test_point_to_point_stays_bounded_when_senders_run_ahead(lanai_exes, nranks, nodes):
    _passes(lanai_exes["p2p_runahead"], "p2p_runahead", nranks, nodes)


@pytest.mark.parametrize("size", [65536, 65537, 3 << 20])
def test_point_to_point_around_the_tcp_eager_limit_and_above(lanai_exes, size):
    calls = "40" if size > 1 << 20 else "300"
    _passes(lanai_exes["p2p_runahead"], "p2p_runahead", 2, 2, [calls, str(size), "32"])


@pytest.mark.parametrize("name", PROGS)
def test_mpich_builds_on_lanai_under_hydra(mpich_exes, name):
    args = HYDRA_ARGS[name] if name == "coll_inflight" else []
    harness.assert_passes_under_hydra(mpich_exes[name], name, 4, args)


@pytest.mark.parametrize("name", PROGS)
def test_programs_themselves_on_mpich(mpich_exes, name):
    # Results only: how far MPICH lets ranks run ahead is its own business.
    harness.assert_passes_under_hydra(mpich_exes[name], name, 2, HYDRA_ARGS[name], on_lanai=False)
