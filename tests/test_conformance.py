"""C conformance programs run on Lanai: the rank/node matrix for both
builds, abnormal endings (abort, crash, no MPI_Finalize), Hydra and
singleton launches, and a stress run while a stranger attacks the job's
TCP ports.

`LANAI_TEST_QUICK=1` shrinks the matrix; `LANAI_BUILD_DIR` points the
suite at another build tree.
"""

import os
import random
import re
import socket
import struct
import threading
import time

import pytest

import harness
from harness import (
    JOB_TIMEOUT_S,
    assert_clean,
    assert_passed,
    lanairun_argv,
    lib_env,
    run_job,
)

# ---------------------------------------------------------------- matrix


def _shapes(ranks, nodes):
    return [(n, k) for n in ranks for k in nodes if k <= n]


if harness.QUICK:
    LANAI_SHAPES = [(1, 1), (2, 2), (4, 1), (4, 3)]
    MPICH_SHAPES = [(2, 1), (4, 2)]
else:
    # MPICH-built binaries get the same matrix: running them unchanged is
    # the point of the MPICH ABI.
    LANAI_SHAPES = _shapes([1, 2, 3, 4, 8], [1, 2, 3])
    MPICH_SHAPES = LANAI_SHAPES


def _matrix():
    params = []
    for flavor, shapes in (("lanai", LANAI_SHAPES), ("mpich", MPICH_SHAPES)):
        for prog in harness.PASSING_PROGRAMS:
            for n, k in shapes:
                marks = []
                if flavor == "mpich":
                    marks.append(pytest.mark.mpich)
                if n >= 8:
                    marks.append(pytest.mark.slow)
                params.append(
                    pytest.param(prog, flavor, n, k, id=f"{prog}-{flavor}-n{n}-nodes{k}",
                                 marks=marks)
                )
    return params


def _env_for(flavor):
    return lib_env() if flavor == "mpich" else None


@pytest.mark.parametrize("prog,flavor,nranks,nodes", _matrix())
def test_program(builds, prog, flavor, nranks, nodes):
    exe = builds[prog]
    argv = lanairun_argv(exe, nranks, nodes, harness.PROGRAM_ARGS.get(prog, ()))
    result = run_job(argv, exe, env_extra=_env_for(flavor))
    assert_passed(result, prog)
    assert_clean(result)


# ------------------------------------------------------ abnormal endings


def _launcher_lines(result, program_prefix):
    """Output lines not printed by the program itself (it prefixes its own
    lines with `<name>:`), so that checks see the launcher's report."""
    return [
        line for line in result.output.splitlines() if not line.startswith(program_prefix + ":")
    ]


ABORT_CASES = [
    pytest.param("lanai", n, k, id=f"lanai-n{n}-nodes{k}") for n in (2, 4) for k in (1, 2)
] + [
    pytest.param("mpich", n, k, id=f"mpich-n{n}-nodes{k}", marks=pytest.mark.mpich)
    for n, k in ((2, 1), (4, 2))
]


@pytest.mark.parametrize("flavor,nranks,nodes", ABORT_CASES)
def test_abort_exit_code(builds, flavor, nranks, nodes):
    exe = builds["abort"]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe, env_extra=_env_for(flavor))
    assert not result.timed_out, "abort hung\n" + result.tail()
    assert result.returncode == 7, "want exit code 7 from MPI_Abort\n" + result.tail()
    assert result.wall_s < 30, f"abort took {result.wall_s:.1f}s\n" + result.tail()
    assert "FAIL abort" not in result.output, result.tail()
    assert_clean(result)


def _shape_params(shapes):
    return [pytest.param(n, k, id=f"n{n}-nodes{k}") for n, k in shapes]


@pytest.mark.parametrize("nranks,nodes", _shape_params([(1, 1), (2, 1), (2, 2), (4, 2)]))
def test_crash_ends_job(lanai_builds, nranks, nodes):
    exe = lanai_builds["crash"]
    victim = 1 if nranks > 1 else 0
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert not result.timed_out, "job hung after a rank crashed\n" + result.tail()
    assert result.returncode != 0, "a crashed job exited 0\n" + result.tail()
    assert result.wall_s < 10, (
        f"job took {result.wall_s:.1f}s to end after a rank crashed\n" + result.tail()
    )
    report = "\n".join(_launcher_lines(result, "crash"))
    assert re.search(rf"\brank\W{{0,3}}{victim}\b", report, re.I), (
        f"launcher output does not name rank {victim}\n" + result.tail()
    )
    assert re.search(r"SIGSEGV|signal 11\b|segmentation fault", report, re.I), (
        "launcher output does not name the signal\n" + result.tail()
    )
    assert_clean(result)


@pytest.mark.parametrize("nranks,nodes", _shape_params([(1, 1), (2, 1), (4, 2)]))
def test_exit_without_finalize_reported(lanai_builds, nranks, nodes):
    exe = lanai_builds["noexit_finalize"]
    result = run_job(lanairun_argv(exe, nranks, nodes), exe)
    assert not result.timed_out, "job hung\n" + result.tail()
    assert result.returncode != 0, (
        "rank 0 left without MPI_Finalize but the job exited 0\n" + result.tail()
    )
    assert result.wall_s < JOB_TIMEOUT_S / 2, (
        "the launcher only noticed through its timeout\n" + result.tail()
    )
    report = "\n".join(_launcher_lines(result, "noexit_finalize"))
    assert re.search(r"finaliz", report, re.I), (
        "launcher output does not mention the missing MPI_Finalize\n" + result.tail()
    )
    assert_clean(result)


# ------------------------------------------------- other launch paths


HYDRA_CASES = [
    pytest.param(prog, flavor, id=f"{prog}-{flavor}",
                 marks=[pytest.mark.mpich] if flavor == "mpich" else [])
    for prog in ("p2p_basic", "coll_basic", "large")
    for flavor in ("lanai", "mpich")
]


@pytest.mark.parametrize("prog,flavor", HYDRA_CASES)
def test_under_hydra(builds, prog, flavor):
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed (Debian: apt install mpich)")
    exe = builds[prog]
    # No lanairun --timeout here, so the backstop is the only limit.
    result = run_job([harness.HYDRA, "-n", "4", exe], exe, env_extra=lib_env(),
                     timeout_s=JOB_TIMEOUT_S)
    assert_passed(result, prog)
    assert_clean(result)


SINGLETON_CASES = [
    pytest.param(prog, flavor, id=f"{prog}-{flavor}",
                 marks=[pytest.mark.mpich] if flavor == "mpich" else [])
    for prog in ("p2p_basic", "coll_basic")
    for flavor in ("lanai", "mpich")
]


@pytest.mark.parametrize("prog,flavor", SINGLETON_CASES)
def test_singleton(builds, prog, flavor):
    exe = builds[prog]
    result = run_job([exe], exe, env_extra=lib_env(), timeout_s=JOB_TIMEOUT_S)
    assert_passed(result, prog)
    assert_clean(result)


# ------------------------------------------- strangers on the TCP ports


def _garbage_payloads(rng):
    yield rng.randbytes(rng.randint(1, 4096))
    yield b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: lanai-test\r\n\r\n"
    # Length-like headers claiming huge frames, both byte orders.
    yield struct.pack("<I", 0xFFFFFFFF) + rng.randbytes(12)
    yield struct.pack(">I", 0x7FFFFFFF) + rng.randbytes(12)
    yield struct.pack("<Q", 2**63 - 1) + struct.pack("<Q", 2**64 - 1)
    yield b""  # connect and close at once


def _attack(host, port, payload, stats):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            s.connect((host, port))
            if payload:
                s.sendall(payload)
            stats["attacks"] += 1
            return True
    except OSError:
        # Refused or reset is a fine answer to garbage.
        stats["refused"] += 1
        return False


def _stranger(exes, stop, stats, hold_open, release):
    """Find the listening ports of the processes running `exes` (the ranks,
    and the offload engines) and throw garbage at them until the job ends.
    With hold_open, also keep one silent half-open connection per port (a
    stalled stranger must not block real peers). Half a second after every
    owner has had garbage on one of its ports, it creates the file `release`,
    which lets the job end; until then the job runs on, however slow this
    thread is."""
    rng = random.Random(0x1A4A1)
    held = {}
    attacked = set()
    covered_at = None
    start = time.monotonic()
    try:
        while not stop.is_set():
            ports = []
            owner_of = {}
            for exe in exes:
                for host, port in harness.listening_ports(harness.rank_pids(exe)):
                    ports.append((host, port))
                    owner_of[(host, port)] = exe
                    stats["ports"].add((host, port))
                    stats["owners"].add(os.path.basename(exe))
            if ports and stats["found_s"] is None:
                stats["found_s"] = time.monotonic() - start
            for host, port in ports:
                # Garbage first: the job may be about to end, and a stalled
                # connection proves nothing without it.
                for payload in _garbage_payloads(rng):
                    if stop.is_set():
                        break
                    if _attack(host, port, payload, stats):
                        attacked.add(owner_of[(host, port)])
                if hold_open and (host, port) not in held and not stop.is_set():
                    try:
                        s = socket.create_connection((host, port), timeout=0.5)
                        s.sendall(b"\x00\x01")
                        held[(host, port)] = s
                    except OSError:
                        pass
            # Half a second more lets the victims log their rejections.
            if len(attacked) == len(exes) and covered_at is None:
                covered_at = time.monotonic()
            if covered_at is not None and time.monotonic() - covered_at > 0.5 \
                    and not os.path.exists(release):
                with open(release, "w"):
                    pass
            stop.wait(0.05)
    except Exception as e:  # noqa: BLE001 - reported by the test, not lost in the thread
        stats["error"] = repr(e)
    finally:
        for s in held.values():
            s.close()


ENGINE = os.path.join(harness.BUILD_DIR, "bin", "lanai-engine")


@pytest.mark.parametrize("hold_open,engines", [(False, False), (True, False), (True, True)],
                         ids=["garbage", "garbage+stalled", "garbage+stalled+engines"])
def test_stress_with_strangers(lanai_builds, hold_open, engines, tmp_path):
    # With engines, every collective runs in the offload engines, whose
    # links between the two nodes are attacked as well as the ranks'.
    if engines and not os.path.exists(ENGINE):
        pytest.skip("build/bin/lanai-engine not built")
    exe = lanai_builds["stress"]
    stats = {"ports": set(), "owners": set(), "attacks": 0, "refused": 0,
             "found_s": None, "error": None}
    stop = threading.Event()
    exes = [exe, ENGINE] if engines else [exe]
    release = str(tmp_path / "attacked")
    thread = threading.Thread(target=_stranger, args=(exes, stop, stats, hold_open, release),
                              daemon=True)
    thread.start()
    env = {"LANAI_STRESS_UNTIL": release}
    if engines:
        env["LANAI_OFFLOAD"] = "all"
    try:
        # At least 3 s of traffic, and on until every owner has been attacked.
        result = run_job(lanairun_argv(exe, 4, 2, ["3"]), exe, env)
    finally:
        stop.set()
        thread.join(10)
    summary = (
        f"stranger: {len(stats['ports'])} port(s) {sorted(stats['ports'])} "
        f"of {sorted(stats['owners'])}, "
        f"{stats['attacks']} connections with garbage, {stats['refused']} refused, "
        f"first port found after {stats['found_s']} s, thread error {stats['error']}\n"
    )
    assert_passed(result, "stress")
    assert stats["error"] is None, "the stranger failed\n" + summary
    assert stats["ports"], (
        "no listening TCP port of the ranks was found, so nothing was attacked\n"
        + summary + result.tail()
    )
    assert stats["attacks"] > 0, "no garbage connection succeeded\n" + summary + result.tail()
    if engines:
        assert "lanai-engine" in stats["owners"], "no engine port was attacked\n" + summary
        # Logged by the engine, named as one (not as the rank it numbers like).
        assert re.search(r"lanai: the engine of node \d: rejected TCP connection from",
                         result.output), "no engine logged a rejection\n" + result.tail()
    assert_clean(result)
