"""The offload engine (issue 5): offload_coll.c with LANAI_OFFLOAD=all and
=none must both pass and print the same DIGEST (float results bitwise
identical whatever runs the protocol), and with the engine the nonblocking
barrier and allreduce complete while the ranks compute (`ASYNC yes`).
Also: a partial LANAI_OFFLOAD list, a tiny unexpected-message pool that
forces retries (with LANAI_STATS=1), the fallback when the engine cannot
start, killing a rank or the engine mid-collective, and a run under Hydra.

Binaries are built with mpicc.mpich and run on Lanai via LD_LIBRARY_PATH.
Everything that needs build/bin/lanai-engine is skipped until it exists.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

import harness
from harness import assert_clean, assert_passed, lib_env, run_job

COLL = "offload_coll"
LOOP = "offload_loop"
BIG = "offload_big"
ENGINE = os.path.join(harness.BUILD_DIR, "bin", "lanai-engine")
ENGINE_NAME = "lanai-engine"

needs_engine = pytest.mark.skipif(
    not os.access(ENGINE, os.X_OK),
    reason=f"{ENGINE} not built: the offload engine (issue 5) has not landed",
)

if harness.QUICK:
    SHAPES = [(2, 1), (4, 4)]
    POOL_SHAPE = (4, 4)
else:
    SHAPES = [(1, 1), (2, 1), (3, 2), (4, 4), (8, 3)]
    POOL_SHAPE = (8, 4)

# offload_coll runs ~15 s at 8 ranks host-based on 2 cores; leave room.
JOB_TIMEOUT_S = 120
# How fast a job must end once a rank or the engine is killed.
KILL_END_S = 10.0


def _shape_params(shapes):
    return [
        pytest.param(n, k, id=f"n{n}-nodes{k}", marks=[pytest.mark.slow] if n >= 8 else [])
        for n, k in shapes
    ]


@pytest.fixture(scope="module")
def exes():
    if not os.access(harness.LANAIRUN, os.X_OK):
        pytest.fail(f"{harness.LANAIRUN} missing: run `make` first", pytrace=False)
    return harness.build_programs([COLL, LOOP, BIG], "mpich")


# ------------------------------------------------------------ helpers


def _environ_has(pid, marker):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker.encode() in f.read()
    except OSError:
        return False


def _engines():
    """Live lanai-engine processes (like `pgrep -f lanai-engine`)."""
    return set(harness.processes_running(ENGINE_NAME))


def _job_engines(before, marker):
    """Engines started since `before`: those carrying this job's marker in
    their environment, or every new one if none carries it (an engine may
    scrub its environment)."""
    new = _engines() - before
    marked = {p for p in new if _environ_has(p, marker)}
    return marked or new


def _lanairun(exe, nranks, nodes, args=(), timeout=JOB_TIMEOUT_S):
    return [harness.LANAIRUN, "-n", str(nranks), "--nodes", str(nodes), "--timeout",
            str(timeout), exe, *args]


class Run:
    """A finished job plus the engines it left behind."""

    def __init__(self, result, leftover_engines):
        self.r = result
        self.leftover_engines = leftover_engines

    @property
    def output(self):
        return self.r.output


def run(argv, exe, offload, extra=None, timeout_s=JOB_TIMEOUT_S + 30, killer=None):
    """Run a job with LANAI_OFFLOAD=offload on Lanai; afterwards wait a few
    seconds for this job's engines to go, and kill any that stay (they are
    reported by assert_no_engines)."""
    marker = f"offload-test-{uuid.uuid4().hex}"
    env = lib_env()
    env["LANAI_OFFLOAD"] = offload
    env["LANAI_TEST_JOB_MARK"] = marker
    if extra:
        env.update(extra)
    before = _engines()
    if killer:
        killer.start(exe, before, marker)
    result = run_job(argv, exe, env, timeout_s=timeout_s)
    if killer:
        killer.join()
    deadline = time.monotonic() + 3.0
    while True:
        left = _job_engines(before, marker)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for pid in left:
        if _environ_has(pid, marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return Run(result, sorted(left))


def assert_no_engines(run_):
    assert not run_.leftover_engines, (
        f"lanai-engine processes still alive after the job ended: {run_.leftover_engines}\n"
        + run_.r.tail()
    )


def digest(run_):
    m = re.findall(r"^DIGEST ([0-9a-f]{16})\s*$", run_.output, re.M)
    assert len(m) == 1, "expected exactly one DIGEST line\n" + run_.r.tail()
    return m[0]


def async_answer(run_, what="ASYNC"):
    m = re.findall(rf"^{what} (yes|no)\s*$", run_.output, re.M)
    assert len(m) == 1, f"expected exactly one '{what} yes|no' line\n" + run_.r.tail()
    return m[0]


def assert_async(run_, nranks, barrier=True, allreduce=True):
    if nranks < 2:
        return  # nobody to wait for: the program prints nothing
    if barrier:
        assert async_answer(run_, "ASYNC") == "yes", (
            "MPI_Ibarrier did not complete while the ranks computed without MPI calls\n"
            + run_.r.tail()
        )
    if allreduce:
        assert async_answer(run_, "ASYNC_IALLREDUCE") == "yes", (
            "MPI_Iallreduce did not complete while the ranks computed without MPI calls\n"
            + run_.r.tail()
        )


def check_ok(run_, name=COLL):
    assert_passed(run_.r, name)
    assert_clean(run_.r)
    assert_no_engines(run_)


# Host-based digests per (launcher, ranks, nodes), shared between tests.
_host_digest = {}


def host_digest(exes, nranks, nodes):
    key = ("lanairun", nranks, nodes)
    if key not in _host_digest:
        exe = exes[COLL]
        h = run(_lanairun(exe, nranks, nodes), exe, "none")
        check_ok(h)
        _host_digest[key] = digest(h)
    return _host_digest[key]


# --------------------------------------------------------------- tests


@pytest.mark.parametrize("nranks,nodes", _shape_params(SHAPES))
def test_host_based(exes, nranks, nodes):
    """LANAI_OFFLOAD=none: today's host-based collectives pass the program."""
    host_digest(exes, nranks, nodes)


@needs_engine
@pytest.mark.parametrize("nranks,nodes", _shape_params(SHAPES))
def test_offloaded_matches_host(exes, nranks, nodes):
    want = host_digest(exes, nranks, nodes)
    exe = exes[COLL]
    off = run(_lanairun(exe, nranks, nodes), exe, "all")
    check_ok(off)
    assert digest(off) == want, (
        f"offloaded float results differ from host-based (digest {want})\n" + off.r.tail()
    )
    assert_async(off, nranks)


@needs_engine
@pytest.mark.parametrize(
    "offload,barrier,allreduce",
    [("reduce,bcast", False, False), ("barrier,allreduce", True, True),
     ("allreduce,barrier,reduce,bcast", True, True)],
)
def test_offload_subset(exes, offload, barrier, allreduce):
    nranks, nodes = 4, 2
    want = host_digest(exes, nranks, nodes)
    exe = exes[COLL]
    off = run(_lanairun(exe, nranks, nodes), exe, offload)
    check_ok(off)
    assert digest(off) == want, f"LANAI_OFFLOAD={offload}: digest differs\n" + off.r.tail()
    assert_async(off, nranks, barrier=barrier, allreduce=allreduce)


@needs_engine
@pytest.mark.parametrize("barrier", ["dissemination", "pairwise"])
def test_software_barriers_in_the_engine(exes, barrier):
    """LANAI_BARRIER=<software> makes the engine run that algorithm instead
    of acting as the node's device (the default); results and barrier
    semantics (offload_coll checks exit times) hold either way."""
    nranks, nodes = 5, 3
    want = host_digest(exes, nranks, nodes)
    exe = exes[COLL]
    off = run(_lanairun(exe, nranks, nodes), exe, "all", {"LANAI_BARRIER": barrier})
    check_ok(off)
    assert digest(off) == want
    assert_async(off, nranks)


@needs_engine
@pytest.mark.parametrize("fanout", [1, 3, 16], ids=["chain", "k3", "flat"])
def test_reduce_tree_of_any_fan_out(exes, fanout):
    """LANAI_REDUCE=kary: host-based and offloaded runs build the same tree,
    so their float results agree bit for bit, and both pass the tolerance
    checks. A chain and a flat tree differ from the binomial grouping."""
    nranks, nodes = (5, 3)
    exe = exes[COLL]
    knobs = {"LANAI_REDUCE": "kary", "LANAI_REDUCE_FANOUT": str(fanout)}
    host = run(_lanairun(exe, nranks, nodes), exe, "none", knobs)
    check_ok(host)
    off = run(_lanairun(exe, nranks, nodes), exe, "all", knobs)
    check_ok(off)
    assert digest(off) == digest(host), (
        f"fan-out {fanout}: offloaded float results differ from host-based\n" + off.r.tail()
    )


@needs_engine
@pytest.mark.parametrize("nranks,nodes", _shape_params([(2, 1), (3, 2), (4, 4)]))
def test_large_collectives_run_in_pipelined_chunks(exes, nranks, nodes):
    """Above one slot (64 KiB) the engine runs chunks, more of them than a
    rank has slots; results match the host path bit for bit, and a
    nonblocking call never waits for a free slot (offload_big would hang)."""
    exe = exes[BIG]
    host = run(_lanairun(exe, nranks, nodes), exe, "none")
    check_ok(host, BIG)
    off = run(_lanairun(exe, nranks, nodes), exe, "all", {"LANAI_STATS": "1"})
    check_ok(off, BIG)
    assert digest(off) == digest(host), "chunked results differ from host-based\n" + off.r.tail()
    # Chunks per rank: for 65544, 1 Mi and 3 Mi + 40 bytes of doubles, the
    # allreduce, reduce and bcast take 2, 16 and 49 each, the 16-byte
    # MPI_DOUBLE_INT allreduce 3, 32 and 97, and the Iallreduce 49: 382.
    lines = STATS_LINE.findall(off.output)
    assert len(lines) == nodes, off.r.tail()
    for _, fields in lines:
        assert _stat(fields, "descriptors", fields) >= 382 * (nranks // nodes), fields


@needs_engine
def test_auto_declines_when_engines_would_share_cores(exes):
    """The default, LANAI_OFFLOAD=auto, starts no engine where ranks and
    engines do not each get a core (2 cores, 4 ranks, 2 nodes), silently."""
    nranks, nodes = 4, 2
    want = host_digest(exes, nranks, nodes)
    exe = exes[COLL]
    before = _engines()
    r = run(_lanairun(exe, nranks, nodes), exe, "auto", {"LANAI_CORES": "2", "LANAI_STATS": "1"})
    check_ok(r)
    assert digest(r) == want
    assert not STATS_LINE.findall(r.output), "an engine ran\n" + r.r.tail()
    assert "offload engine" not in r.output, r.r.tail()
    assert not (_engines() - before)


@needs_engine
def test_auto_offloads_nonblocking_and_reduce_when_cores_allow(exes):
    """With a core per rank and per engine (LANAI_CORES says 64), auto runs
    engines: nonblocking collectives complete while ranks compute, and
    results are bitwise the host path's."""
    nranks, nodes = 4, 2
    want = host_digest(exes, nranks, nodes)
    exe = exes[COLL]
    r = run(_lanairun(exe, nranks, nodes), exe, "auto", {"LANAI_CORES": "64", "LANAI_STATS": "1"})
    check_ok(r)
    assert digest(r) == want
    assert_async(r, nranks)
    lines = STATS_LINE.findall(r.output)
    assert len(lines) == nodes, r.r.tail()
    for _, fields in lines:
        assert _stat(fields, "descriptors", fields) > 0, fields


STATS_LINE = re.compile(r"^lanai: stats engine node (\d+):(.*)$", re.M)


def _stat(fields, name, line):
    m = re.search(rf"\b{name} (\d+)", fields)
    assert m, f"stats line lacks '{name} <n>': {line}"
    return int(m.group(1))


@needs_engine
@pytest.mark.slow
def test_tiny_pool_forces_retries(exes):
    nranks, nodes = POOL_SHAPE
    want = host_digest(exes, nranks, nodes)
    exe = exes[COLL]
    off = run(_lanairun(exe, nranks, nodes), exe, "all",
              {"LANAI_OFFLOAD_POOL": "64", "LANAI_STATS": "1"})
    check_ok(off)
    assert digest(off) == want, "a 64-byte pool changed the results\n" + off.r.tail()
    lines = STATS_LINE.findall(off.output)
    assert len({node for node, _ in lines}) == nodes and len(lines) == nodes, (
        f"want one stats line from each of {nodes} engines, got {len(lines)}\n" + off.r.tail()
    )
    retries = 0
    for node, fields in lines:
        line = f"lanai: stats engine node {node}:{fields}"
        assert _stat(fields, "descriptors", line) > 0, f"engine handled nothing: {line}"
        _stat(fields, "unexpected", line)
        _stat(fields, "max in flight", line)
        retries += _stat(fields, "retries", line)
    assert retries > 0, "a 64-byte unexpected pool forced no retries\n" + "\n".join(
        f"node {n}:{f}" for n, f in lines
    )


@needs_engine
def test_engine_trace_lines_up_every_message(exes, tmp_path):
    # LANAI_ENGINE_TRACE: each engine and each rank leaves its events;
    # eval/engine-trace pairs every message sent with its receipt on the
    # other node, and each rank's posts and completions with its engine's.
    exe = exes[LOOP]
    res = run(_lanairun(exe, 2, 2, ["2"]), exe, "all", {"LANAI_ENGINE_TRACE": str(tmp_path)})
    check_ok(res, LOOP)
    assert sorted(os.listdir(tmp_path)) == ["engine-0.trace", "engine-1.trace",
                                            "rank-0-0.trace", "rank-1-0.trace"]
    out = tmp_path / "summary.json"
    tool = os.path.join(harness.REPO_ROOT, "eval", "engine-trace")
    r = subprocess.run([sys.executable, tool, str(tmp_path), "--json", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    s = json.loads(out.read_text())
    assert s["engines"] == 2 and s["messages"] > 100 and s["unmatched"] == 0, r.stdout
    assert s["one_way_us"] > 0 and s["send_us"] > 0, r.stdout
    for node in ("0", "1"):
        assert s["per_node"][node]["instances"] > 50, r.stdout
        assert s["per_node"][node]["take_to_done_us"] > 0, r.stdout
    # Each rank's hand-offs: its completions follow the engine's, and the
    # engine takes each descriptor after the rank posted it.
    assert sorted(s["ranks"]) == ["0.0", "1.0"], r.stdout
    for rank in ("0.0", "1.0"):
        h = s["ranks"][rank]
        assert h["notice_us"] > 0 and h["pickup_us"] > 0 and h["turnaround_us"] > 0, r.stdout


FALLBACK_LINE = re.compile(r"^.*offload engine.*$", re.M)


@needs_engine
@pytest.mark.parametrize("nranks,nodes", [(4, 1), (4, 2)], ids=["n4-nodes1", "n4-nodes2"])
def test_fallback_when_engine_cannot_start(exes, nranks, nodes):
    """Skipped with the engine: the knob and the fallback land with it."""
    want = host_digest(exes, nranks, nodes)
    exe = exes[COLL]
    off = run(_lanairun(exe, nranks, nodes), exe, "all",
              {"LANAI_ENGINE_PATH": "/nonexistent"})
    check_ok(off)
    assert digest(off) == want, "fallback results differ from host-based\n" + off.r.tail()
    said = [ln for ln in FALLBACK_LINE.findall(off.output) if "host" in ln]
    # Said once; with several nodes each node's starter may say it once.
    assert 1 <= len(said) <= nodes, (
        f"want the fallback said once (at most once per node), got {len(said)} lines\n"
        + off.r.tail()
    )


class Killer:
    """Waits in a thread until the job's ranks (and engines) are up and into
    the loop, then SIGKILLs one rank or one engine and notes when."""

    def __init__(self, nranks, target, settle_s=1.5):
        self.nranks = nranks
        self.target = target  # "first-rank", "last-rank" or "engine"
        self.settle_s = settle_s
        self.killed = None
        self.kill_time = None
        self.error = None
        self._thread = None

    def start(self, exe, engines_before, marker):
        self._thread = threading.Thread(
            target=self._run, args=(exe, engines_before, marker), daemon=True
        )
        self._thread.start()

    def join(self):
        self._thread.join(timeout=60)

    def _run(self, exe, engines_before, marker):
        deadline = time.monotonic() + 30
        ranks, engines = [], set()
        while time.monotonic() < deadline:
            ranks = sorted(harness.rank_pids(exe))
            engines = _job_engines(engines_before, marker)
            if len(ranks) == self.nranks and engines:
                break
            time.sleep(0.05)
        else:
            self.error = f"job never came up: ranks {ranks}, engines {sorted(engines)}"
            return
        time.sleep(self.settle_s)  # well into the Allreduce loop
        if self.target == "engine":
            victim = min(engines)
        elif self.target == "first-rank":
            victim = ranks[0]
        else:
            victim = ranks[-1]
        try:
            os.kill(victim, signal.SIGKILL)
        except OSError as e:
            self.error = f"could not kill {victim}: {e}"
            return
        self.killed = victim
        self.kill_time = time.monotonic()


def _killed_job(exes, nranks, nodes, target):
    exe = exes[LOOP]
    killer = Killer(nranks, target)
    start = time.monotonic()
    got = run(_lanairun(exe, nranks, nodes, ["40"], timeout=60), exe, "all",
              timeout_s=90, killer=killer)
    end = start + got.r.wall_s  # when the launcher itself exited
    assert killer.error is None, killer.error + "\n" + got.r.tail()
    assert killer.killed, "nothing was killed\n" + got.r.tail()
    took = end - killer.kill_time
    assert not got.r.timed_out, "job hung after the kill\n" + got.r.tail()
    assert got.r.returncode != 0, "job exited 0 after a kill\n" + got.r.tail()
    assert took < KILL_END_S, (
        f"job took {took:.1f}s to end after killing {target} pid {killer.killed}\n"
        + got.r.tail()
    )
    assert not re.search(rf"^PASS {LOOP}", got.output, re.M), got.r.tail()
    assert_clean(got.r)
    assert_no_engines(got)


KILL_SHAPES = [(4, 1), (4, 2)]


@needs_engine
@pytest.mark.parametrize("target", ["first-rank", "last-rank"])
@pytest.mark.parametrize("nranks,nodes", KILL_SHAPES, ids=[f"n{n}-nodes{k}" for n, k in KILL_SHAPES])
def test_kill_rank_mid_collective(exes, nranks, nodes, target):
    _killed_job(exes, nranks, nodes, target)


@needs_engine
@pytest.mark.parametrize("nranks,nodes", KILL_SHAPES, ids=[f"n{n}-nodes{k}" for n, k in KILL_SHAPES])
def test_kill_engine_mid_collective(exes, nranks, nodes):
    _killed_job(exes, nranks, nodes, "engine")


@needs_engine
def test_under_hydra(exes):
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    exe = exes[COLL]
    argv = [harness.HYDRA, "-n", "4", exe]
    host = run(argv, exe, "none", timeout_s=JOB_TIMEOUT_S)
    check_ok(host)
    off = run(argv, exe, "all", timeout_s=JOB_TIMEOUT_S)
    check_ok(off)
    assert digest(off) == digest(host), "under Hydra: offloaded digest differs\n" + off.r.tail()
    assert_async(off, 4)


@pytest.mark.mpich
def test_programs_on_real_mpich(exes):
    """The programs themselves are right: they pass on MPICH."""
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed")
    for name, args in ((COLL, []), (LOOP, ["2"])):
        exe = exes[name]
        r = run_job([harness.HYDRA, "-n", "4", exe, *args], exe, timeout_s=JOB_TIMEOUT_S)
        assert_passed(r, name)
