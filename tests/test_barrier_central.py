"""The central barrier device (seed 002): barrier_central.c checks by the
clock that nobody leaves a barrier before the last rank entered, on the
device (one node and a tree of nodes), in software, when channels run out,
at 16 ranks on 2 cores, and when a rank dies inside a barrier.
"""

import re

import pytest

import harness
from harness import assert_clean, assert_passed, lanairun_argv, lib_env, run_job

NAME = "barrier_central"

if harness.QUICK:
    SHAPES = [(2, 1), (4, 1), (5, 3)]
else:
    SHAPES = [(1, 1), (2, 1), (3, 1), (4, 1), (8, 1), (2, 2), (4, 2), (5, 3), (8, 3), (8, 4)]


@pytest.fixture(scope="module")
def lanai_exe():
    return harness.build_programs([NAME], "lanai")[NAME]


@pytest.fixture(scope="module")
def mpich_exe():
    return harness.build_programs([NAME], "mpich")[NAME]


@pytest.mark.parametrize("barrier", ["auto", "central", "dissemination"])
@pytest.mark.parametrize("nranks,nodes", SHAPES, ids=[f"n{n}-nodes{k}" for n, k in SHAPES])
def test_barriers_hold_everyone(lanai_exe, nranks, nodes, barrier):
    env = {"LANAI_BARRIER": barrier}
    if nodes > 2:
        # Leaders then run a one-level tree (two leaders exchange instead).
        env["LANAI_BARRIER_TREE_K"] = str(nodes - 1)
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes, ["all"]), lanai_exe, env)
    assert_passed(r, NAME)
    assert_clean(r)


def test_two_level_tree_of_leaders(lanai_exe):
    # 16 leaders with fan-out 4: a two-level tree (4 hops against 4 rounds
    # of dissemination, so the tree is chosen).
    env = {"LANAI_BARRIER": "central", "LANAI_BARRIER_TREE_K": "4"}
    r = run_job(lanairun_argv(lanai_exe, 16, 16, ["many", "300"]), lanai_exe, env)
    assert_passed(r, NAME)
    assert_clean(r)


def test_leaders_in_rounds_without_a_tree(lanai_exe):
    # LANAI_BARRIER_TREE_K=0: the node leaders run dissemination rounds, the
    # way LANAI_OFFLOAD=auto's engines do; on the host and in the engines.
    env = {"LANAI_BARRIER": "central", "LANAI_BARRIER_TREE_K": "0"}
    for offload in ("none", "barrier"):
        env["LANAI_OFFLOAD"] = offload
        r = run_job(lanairun_argv(lanai_exe, 6, 3, ["all"]), lanai_exe, env)
        assert_passed(r, NAME)
        assert_clean(r)


@pytest.mark.parametrize("nranks,nodes", [(4, 1), (6, 2)])
def test_channel_exhaustion_falls_back(lanai_exe, nranks, nodes):
    # Three channels per node for seven communicators: four must fall back.
    env = {"LANAI_BARRIER_CHANNELS": "3", "LANAI_DEBUG": "1", "LANAI_BARRIER": "central"}
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes, ["exhaust"]), lanai_exe, env)
    assert_passed(r, NAME)
    declined = re.findall(r"no free barrier channel", r.output)
    assert declined, "no communicator fell back to software\n" + r.tail()
    assert_clean(r)


TCP_MSGS = re.compile(r"^lanai: stats rank (\d+): tcp connections \d+ msgs (\d+)", re.M)


@pytest.mark.parametrize("cores,software", [("64", True), ("1", False)])
def test_auto_across_nodes_follows_cores(lanai_exe, cores, software):
    """LANAI_BARRIER=auto across nodes: with a core per rank, the software
    barrier's rounds (every rank talks across nodes); with ranks sharing
    cores, the device and the tree of leaders (only leaders talk across)."""
    n = 400
    env = {"LANAI_CORES": cores, "LANAI_STATS": "1", "LANAI_SPIN": "50", "LANAI_OFFLOAD": "none"}
    r = run_job(lanairun_argv(lanai_exe, 4, 2, ["many", str(n)]), lanai_exe, env)
    assert_passed(r, NAME)
    msgs = {int(rank): int(m) for rank, m in TCP_MSGS.findall(r.output)}
    assert sorted(msgs) == [0, 1, 2, 3], r.tail()
    # Ranks 1 and 3 follow their node's leader (ranks 0 and 2).
    for follower in (1, 3):
        if software:
            assert msgs[follower] >= n, f"rank {follower}: {msgs}\n" + r.tail()
        else:
            assert msgs[follower] < n // 4, f"rank {follower}: {msgs}\n" + r.tail()
    assert_clean(r)


def test_device_disabled(lanai_exe):
    r = run_job(
        lanairun_argv(lanai_exe, 4, 1, ["all"]), lanai_exe, {"LANAI_BARRIER_CHANNELS": "0"}
    )
    assert_passed(r, NAME)


def test_sixteen_ranks_ten_thousand_barriers(lanai_exe):
    r = run_job(lanairun_argv(lanai_exe, 16, 1, ["many", "10000"]), lanai_exe)
    assert_passed(r, NAME)
    m = re.search(r"10000 barriers at 16 ranks in ([0-9.]+) s", r.output)
    assert m, r.tail()
    # Seconds, not minutes, even on a loaded 2-core CI machine.
    assert float(m.group(1)) < 10, r.tail()
    assert_clean(r)


@pytest.mark.parametrize("nranks,nodes", [(4, 1), (4, 2)])
def test_rank_killed_in_barrier_ends_job(lanai_exe, nranks, nodes):
    r = run_job(lanairun_argv(lanai_exe, nranks, nodes, ["kill"]), lanai_exe)
    harness.assert_ended_by_killed_rank(r, nranks - 1)


def test_mpich_build_on_lanai_under_hydra(mpich_exe):
    if not harness.have("mpiexec.hydra"):
        pytest.skip("mpiexec.hydra not installed")
    argv = ["mpiexec.hydra", "-n", "4", mpich_exe, "all"]
    r = run_job(argv, mpich_exe, lib_env())
    assert_passed(r, NAME)
    assert_clean(r)


def test_program_itself_on_mpich(mpich_exe):
    if not harness.have("mpiexec.hydra"):
        pytest.skip("mpiexec.hydra not installed")
    r = run_job(["mpiexec.hydra", "-n", "3", mpich_exe, "all"], mpich_exe)
    assert_passed(r, NAME)
