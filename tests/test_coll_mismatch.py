"""Collectives whose ranks disagree (an erroneous program): coll_mismatch.c.

With errors returned, a broadcast's non-roots get MPI_ERR_TRUNCATE saying
the counts disagree, and the job goes on. Those layouts are the ones where
every member's path meets the others'.

Where they do not (one node, the root's and the others' sizes on either
side of a path's edge: mailboxes against messages), every member would
wait for the others forever; instead a member that has waited a second
compares its call with the same-numbered calls the node's other members
published (engine/call_check.rs) and fails with the difference. Under the
default handler that ends the job, with the message, within seconds and
without leftovers. A member waiting for a node member whose same call
failed fails too, with the same class. A member waiting while its
nonblocking collectives are pending compares those the same way. Across
nodes, the messages carry the sender's call, a member that has waited a
second shows its call to the others, and a collective that one member
sends point to point (transfers) and another as collective messages is
found by the other's messages waiting under its number; each of these
fails the collective everywhere (docs/decisions.md, "Collectives whose
ranks disagree on the count"). A correct program with one rank late by
more than a second fails nothing (coll_late.c)."""

import re

import pytest

from harness import assert_clean, assert_passed, build_programs, lanairun_argv, run_job

PROG = "coll_mismatch"
# (ranks, nodes, root bytes, others' bytes)
RETURNING = [
    (2, 1, 40, 100), (3, 1, 100, 40), (4, 1, 40, 100), (8, 1, 10, 56),
    # The root's small part as messages, the others' large ones expected
    # point to point: they find its messages under the call's number.
    (2, 2, 40, 70000), (3, 3, 40, 70000), (4, 2, 40, 70000),
    (2, 2, 2000, 40), (3, 3, 40, 2000), (3, 2, 100, 40), (3, 3, 40, 100),
    (3, 1, 2000, 40), (4, 1, 40, 2000), (3, 1, 40, 70000),
    # A node leader fails at its own truncation; the member waiting on the
    # device for it fails with its class (its published call says so).
    (4, 2, 2000, 40), (4, 2, 40, 2000),
]
# (what, ranks, root bytes, others' bytes, what the error says), one node
FATAL = [
    ("bcast", 3, 2000, 40, "rank 0 passed 2000 bytes where this rank passed 40"),
    ("bcast", 4, 40, 70000, "rank 0 passed 40 bytes where this rank passed 70000"),
    ("gather", 3, 40, 70000, "counts or datatypes disagree"),
    ("gather", 2, 70000, 40, "counts or datatypes disagree"),
    ("scatter", 3, 40, 2000, "counts or datatypes disagree"),
    ("scatter", 4, 70000, 40, "counts or datatypes disagree"),
    ("allgather", 3, 8, 70000, "rank 0 passed 8 bytes where this rank passed 70000"),
    ("alltoall", 3, 8, 2000, "counts or datatypes disagree"),
    ("alltoall", 2, 2000, 8, "counts or datatypes disagree"),
    # Parts that ride the device carry their lengths, which readers check.
    ("alltoall", 2, 8, 16, "counts or datatypes disagree"),
    ("allgather", 3, 16, 8, "counts or datatypes disagree"),
    ("allreduce", 2, 8, 16, "counts or datatypes disagree"),
    ("allreduce", 4, 2000, 1000, "counts or datatypes disagree"),
    # Mailbox posts in pieces say whether more follow, so a post that
    # ends on a slot's edge where its reader's goes on fails at once,
    # with its message also where the scan had become a request.
    ("scan", 2, 56, 100, "to the scan"),
    ("scan", 3, 100, 56, "to the scan"),
    ("gather", 2, 100, 56, "counts or datatypes disagree|contributed"),
    # The members' messages meet here, and the protocol notices first.
    ("root", 3, 2000, 2000, "the ranks name different roots|same counts, datatypes and root"),
    ("kind", 3, 8, 8, "called MPI_Bcast where this rank called MPI_Allreduce"),
    # Nonblocking, after a barrier agreed the device: MPI_Wait raises the
    # collective's own message, also where a riding part of the wrong
    # length was found by whichever call drove the device.
    ("iallreduce", 2, 8, 16, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("iallreduce", 3, 16, 8, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("igather", 3, 56, 100, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("iscan", 2, 56, 100, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("ibcast", 4, 2000, 8, "MPI_(Wait|Ibcast): the ranks' counts or datatypes disagree"),
    # Paths that never meet (the device against the mailboxes): a rank
    # waiting a second compares its pending nonblocking calls with the
    # node's published ones.
    ("ikind", 3, 8, 8, "called MPI_I(bcast|allreduce) where this rank called MPI_I(allreduce|bcast)"),
    # The v forms and the scans are numbered too. Only a gatherv's or
    # scatterv's root knows every member's block, and checks each member's
    # published one against its counts.
    ("gatherv", 3, 2000, 8, "rank [12] passed 8 bytes to this MPI_Gatherv where the root's counts give it 2000"),
    ("gatherv", 3, 8, 70000, "counts or datatypes disagree"),
    ("scatterv", 3, 70000, 8, "counts or datatypes disagree"),
    ("allgatherv", 3, 8, 70000, "counts or datatypes disagree"),
    ("vkind", 3, 8, 8, "called MPI_(Bcast|Gatherv) where this rank called MPI_(Gatherv|Bcast)"),
    ("scankind", 3, 8, 8, "called MPI_(Scan|Exscan) where this rank called MPI_(Exscan|Scan)"),
    ("rskind", 3, 8, 8,
     "called MPI_(Allreduce|Reduce_scatter_block) where this rank called MPI_(Reduce_scatter_block|Allreduce)"),
]


# (what, ranks, nodes, root bytes, others' bytes, what the error says):
# across nodes, where paths never meet (a broadcast's leaves waiting for a
# root waiting in an allreduce; transfers against messages), blocking and
# nonblocking.
FATAL_NODES = [
    ("ikind", 3, 3, 8, 8, "called MPI_I(bcast|allreduce) where this rank called MPI_I(allreduce|bcast)"),
    ("ikind", 3, 3, 40, 70000, "called MPI_I(bcast|allreduce) where this rank called MPI_I(allreduce|bcast)"),
    ("kind", 3, 3, 8, 8, "called MPI_(Bcast|Allreduce) where this rank called MPI_(Allreduce|Bcast)"),
    ("bcast", 2, 2, 40, 70000, "MPI_Bcast: the ranks' counts or datatypes disagree"),
    ("bcast", 3, 3, 70000, 40, "MPI_Bcast: the ranks' counts or datatypes disagree"),
    ("ibcast", 2, 2, 70000, 40, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("ibcast", 3, 3, 40, 70000, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("igather", 2, 2, 40, 70000, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("igather", 3, 3, 70000, 40, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("ibcast", 4, 2, 40, 70000, "MPI_Wait: the ranks' counts or datatypes disagree"),
    ("vkind", 3, 3, 8, 8, "called MPI_(Bcast|Gatherv) where this rank called MPI_(Gatherv|Bcast)"),
    ("scankind", 2, 2, 8, 8, "called MPI_(Scan|Exscan) where this rank called MPI_(Exscan|Scan)"),
    ("rskind", 3, 3, 8, 8, "called MPI_(Allreduce|Reduce_scatter_block) where"),
    ("gatherv", 4, 2, 8, 70000, "counts or datatypes disagree"),
    ("scatterv", 4, 2, 2000, 8, "counts or datatypes disagree"),
]


@pytest.fixture(scope="module")
def exe():
    return build_programs([PROG], "lanai")[PROG]


@pytest.mark.parametrize("nranks,nodes,root_bytes,other_bytes", RETURNING)
def test_mismatched_bcast_counts_truncate(exe, nranks, nodes, root_bytes, other_bytes):
    r = run_job(lanairun_argv(exe, nranks, nodes, [str(root_bytes), str(other_bytes)]), exe,
                timeout_s=60)
    assert_passed(r, PROG)
    assert_clean(r)


# Across nodes, a root whose part goes point to point (from 64 KiB) to
# members whose small parts go as collective messages: the members find
# its messages waiting under the call's number, and tell it, so the root
# fails too instead of waiting forever; the communicator carries on.
@pytest.mark.parametrize("nranks,nodes", [(2, 2), (3, 3), (4, 2)])
def test_root_sending_point_to_point_fails_too(exe, nranks, nodes):
    args = ["70000", "40", "bcast", "root-may-fail"]
    r = run_job(lanairun_argv(exe, nranks, nodes, args), exe, timeout_s=60)
    assert_passed(r, PROG)
    assert_clean(r)


@pytest.mark.parametrize("what,nranks,root_bytes,other_bytes,says", FATAL)
def test_disagreeing_calls_end_the_job(exe, what, nranks, root_bytes, other_bytes, says):
    ends_with_error(exe, what, nranks, 1, root_bytes, other_bytes, says)


@pytest.mark.parametrize("what,nranks,nodes,root_bytes,other_bytes,says", FATAL_NODES)
def test_disagreeing_calls_across_nodes_end_the_job(exe, what, nranks, nodes, root_bytes,
                                                    other_bytes, says):
    ends_with_error(exe, what, nranks, nodes, root_bytes, other_bytes, says)


def ends_with_error(exe, what, nranks, nodes, root_bytes, other_bytes, says):
    args = [str(root_bytes), str(other_bytes), what, "fatal"]
    r = run_job(lanairun_argv(exe, nranks, nodes, args), exe, timeout_s=60)
    assert not r.timed_out, "the job hung\n" + r.tail()
    assert r.returncode != 0, "the job succeeded\n" + r.tail()
    assert r.wall_s < 20, f"the job took {r.wall_s:.1f} s to end\n" + r.tail()
    assert re.search(says, r.output), f"no '{says}' in the output\n" + r.tail()
    assert_clean(r)


# Correct collectives with one rank late by 1.5 s: the checks that fire
# after a second of waiting (shown calls, messages under the call's
# number, the published calls on a node, a gatherv's root checking each
# member's block) find nothing, on the message, transfer and nonblocking
# paths, with v-form blocks that differ by rank.
@pytest.mark.parametrize("nranks,nodes,nbytes", [(3, 3, 8), (4, 2, 2000), (3, 3, 70000), (3, 1, 40)])
def test_late_rank_fails_nothing(nranks, nodes, nbytes):
    exe = build_programs(["coll_late"], "lanai")["coll_late"]
    r = run_job(lanairun_argv(exe, nranks, nodes, [str(nbytes)]), exe, timeout_s=60)
    assert_passed(r, "coll_late")
    assert_clean(r)
