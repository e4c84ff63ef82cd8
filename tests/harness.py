"""Helpers for the C conformance suite: paths, builds, job runs and the
post-run hygiene checks (no stray processes, no leaked /dev/shm entries).

Standard library only, so `python3 -m pytest tests/` needs nothing else.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS_DIR)
C_DIR = os.path.join(TESTS_DIR, "c")
OUT_DIR = os.path.join(C_DIR, "out")

# LANAI_BUILD_DIR lets the suite be pointed at another build tree (or at a
# shim tree that wraps MPICH, which is how the runner itself was validated).
BUILD_DIR = os.environ.get("LANAI_BUILD_DIR", os.path.join(REPO_ROOT, "build"))
LANAICC = os.path.join(BUILD_DIR, "bin", "lanaicc")
LANAIRUN = os.path.join(BUILD_DIR, "bin", "lanairun")
LANAI_LIB = os.path.join(BUILD_DIR, "lib")

MPICH_CC = "mpicc.mpich"
HYDRA = "mpiexec.hydra"

QUICK = os.environ.get("LANAI_TEST_QUICK", "") not in ("", "0")

# Seconds lanairun may let a job run, and the harder backstop around it.
JOB_TIMEOUT_S = 60
BACKSTOP_S = JOB_TIMEOUT_S + 30

# Programs that must end with "PASS <name>" and exit 0.
PASSING_PROGRAMS = [
    "p2p_basic",
    "ordering",
    "probe",
    "errors",
    "modes",
    "large",
    "persistent",
    "coll_basic",
    "env",
    "stress",
]
# Programs whose point is a failing job; the runner checks how it fails.
FAILING_PROGRAMS = ["abort", "crash", "noexit_finalize"]
ALL_PROGRAMS = PASSING_PROGRAMS + FAILING_PROGRAMS

# Extra arguments in the regular matrix (stress runs longer in its own test).
PROGRAM_ARGS = {"stress": ["1"]}

SHM_GLOB = "/dev/shm/lanai-*"


@dataclass
class JobResult:
    argv: list
    returncode: int
    output: str
    wall_s: float
    timed_out: bool = False
    leftover_pids: list = field(default_factory=list)
    new_shm: list = field(default_factory=list)

    def tail(self, lines=60):
        text = "\n".join(self.output.splitlines()[-lines:])
        return (
            f"command: {' '.join(self.argv)}\n"
            f"exit: {self.returncode}  wall: {self.wall_s:.1f}s"
            f"{'  (killed by the backstop timeout)' if self.timed_out else ''}\n"
            f"--- output tail ---\n{text}\n-------------------"
        )


def compile_program(cc, name, flavor, extra_env=None):
    """Build tests/c/<name>.c with `cc` into tests/c/out/<flavor>/<name>.

    Returns (path, None) or (None, compiler output)."""
    out_dir = os.path.join(OUT_DIR, flavor)
    os.makedirs(out_dir, exist_ok=True)
    exe = os.path.join(out_dir, name)
    src = os.path.join(C_DIR, name + ".c")
    argv = [cc, "-O2", "-g", "-o", exe, src]
    env = dict(os.environ)
    if extra_env:
        env.update(extra_env)
    proc = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=120
    )
    if proc.returncode != 0:
        return None, f"$ {' '.join(argv)}\n{proc.stdout}"
    return exe, None


def processes_running(exe):
    """Pids (other than ours) whose command line mentions `exe`: the ranks
    themselves and any launcher still holding them."""
    me = os.getpid()
    found = []
    needle = exe.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state == b"Z":
            continue  # a zombie holds no resources; its parent is gone or reaping
        # Like `pgrep -f`: a substring of the whole command line.
        if needle in cmdline.replace(b"\0", b" "):
            found.append(int(entry))
    return found


def rank_pids(exe):
    """Pids whose executable is `exe` (the rank processes, not the launcher)."""
    real = os.path.realpath(exe)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/exe") == real:
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def shm_entries():
    return set(glob.glob(SHM_GLOB))


def _shm_owner_pid(path):
    """The pid in `lanai-<uid>-<pid>-<nonce>-n<node>` (a job segment) or
    `lanai-test-<pid>-...` (a crate's unit test), or None."""
    m = re.match(r"lanai-(?:test|\d+)-(\d+)-", os.path.basename(path))
    return int(m.group(1)) if m else None


def _leaked_shm(before, launcher_pid, grace_s=2.0):
    """New /dev/shm/lanai-* entries that this job left behind.

    Other jobs may run on the machine at the same time, so an entry counts
    only if it outlives a short grace period and its name points at our
    launcher or at a process that no longer exists (a finished job: under
    Hydra or as a singleton the name carries a rank's or mpiexec's pid)."""
    deadline = time.monotonic() + grace_s
    while True:
        leaked = []
        for path in sorted(shm_entries() - before):
            pid = _shm_owner_pid(path)
            if pid is None or pid == launcher_pid or not os.path.exists(f"/proc/{pid}"):
                leaked.append(path)
        if not leaked or time.monotonic() >= deadline:
            return leaked
        time.sleep(0.1)


def _wait_gone(exe, grace_s):
    deadline = time.monotonic() + grace_s
    while True:
        pids = processes_running(exe)
        if not pids or time.monotonic() >= deadline:
            return pids
        time.sleep(0.1)


def _kill_pids(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def run_job(argv, exe, env_extra=None, timeout_s=BACKSTOP_S):
    """Run a job to completion and collect what the hygiene checks need.

    The job runs in its own session so that a backstop timeout can kill the
    whole process group, launcher and ranks together."""
    env = dict(os.environ)
    if env_extra:
        env.update(env_extra)
    shm_before = shm_entries()
    start = time.monotonic()
    timed_out = False
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
    wall = time.monotonic() - start
    leftovers = _wait_gone(exe, grace_s=3.0)
    # Leave the machine clean for the next test either way.
    _kill_pids(leftovers)
    new_shm = _leaked_shm(shm_before, proc.pid)
    return JobResult(
        argv=list(argv),
        returncode=proc.returncode,
        output=out.decode(errors="replace"),
        wall_s=wall,
        timed_out=timed_out,
        leftover_pids=leftovers,
        new_shm=new_shm,
    )


def lanairun_argv(exe, nranks, nodes, args=()):
    return [
        LANAIRUN,
        "-n",
        str(nranks),
        "--nodes",
        str(nodes),
        "--timeout",
        str(JOB_TIMEOUT_S),
        exe,
        *args,
    ]


def lib_env():
    """Environment that makes an MPICH-built binary load Lanai."""
    old = os.environ.get("LD_LIBRARY_PATH", "")
    return {"LD_LIBRARY_PATH": LANAI_LIB + (":" + old if old else "")}


def assert_clean(result):
    """Every run: no process of the binary survives and no shm leaks."""
    assert not result.leftover_pids, (
        f"processes still alive after the job ended: {result.leftover_pids}\n" + result.tail()
    )
    assert not result.new_shm, (
        f"/dev/shm entries left behind: {result.new_shm}\n" + result.tail()
    )


def assert_ended_by_killed_rank(result, rank, within_s=10):
    """A rank killed itself with SIGKILL: the job must end soon after, fail,
    name that rank and the signal, print no FAIL line (no survivor got past
    the collective) and leave nothing behind."""
    assert not result.timed_out, "job hung after a rank died\n" + result.tail()
    assert result.returncode != 0, result.tail()
    assert result.wall_s < within_s, f"took {result.wall_s:.1f}s to end\n" + result.tail()
    assert re.search(rf"rank {rank}\b.*(SIGKILL|signal 9)", result.output), result.tail()
    assert "FAIL" not in result.output, result.tail()
    assert_clean(result)


def assert_passed(result, name):
    assert not result.timed_out, "job hung past the backstop timeout\n" + result.tail()
    pass_line = re.compile(rf"^PASS {re.escape(name)}\s*$", re.M)
    assert result.returncode == 0, f"exit code {result.returncode}\n" + result.tail()
    assert pass_line.search(result.output), f"no 'PASS {name}' line\n" + result.tail()
    assert not re.search(r"^FAIL ", result.output, re.M), "FAIL lines printed\n" + result.tail()


def have(tool):
    return shutil.which(tool) is not None


def rank_stats(output, field):
    """{rank: N} for the `<field> N` of every rank's LANAI_STATS line."""
    found = re.findall(rf"stats rank (\d+):.*{re.escape(field)} (\d+)", output)
    return {int(r): int(n) for r, n in found}


def assert_passes_under_hydra(exe, name, nranks, args=(), on_lanai=True):
    """Run an mpicc.mpich build under mpiexec.hydra, on Lanai (through
    LD_LIBRARY_PATH) or on MPICH itself, and require it to pass cleanly."""
    import pytest

    if not have(HYDRA):
        pytest.skip("mpiexec.hydra not installed")
    env = lib_env() if on_lanai else None
    r = run_job([HYDRA, "-n", str(nranks), exe, *args], exe, env)
    assert_passed(r, name)
    if on_lanai:
        assert_clean(r)


def _socket_inodes(pid):
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
    return inodes


def _proc_addr(hexaddr):
    """A /proc/net/tcp{,6} address: 32-bit words in host (little-endian) order."""
    import ipaddress
    import struct

    raw = bytes.fromhex(hexaddr)
    words = [raw[i:i + 4] for i in range(0, len(raw), 4)]
    packed = b"".join(struct.pack(">I", struct.unpack("<I", w)[0]) for w in words)
    return str(ipaddress.ip_address(packed))


def listening_ports(pids):
    """(host, port) of TCP sockets in LISTEN state owned by `pids`, read from
    /proc: each pid's socket inodes matched against its namespace's
    /proc/<pid>/net/tcp{,6}. Unlike `ss -p` this never scans every process,
    so it stays fast on a loaded machine."""
    found = []
    for pid in pids:
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        for table in ("tcp", "tcp6"):
            try:
                with open(f"/proc/{pid}/net/{table}") as f:
                    lines = f.read().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                cols = line.split()
                # cols: sl local remote st ... uid timeout inode
                if len(cols) < 10 or cols[3] != "0A" or cols[9] not in inodes:
                    continue
                hexhost, _, hexport = cols[1].partition(":")
                host = _proc_addr(hexhost)
                if host == "0.0.0.0":
                    host = "127.0.0.1"
                elif host == "::":
                    host = "::1"
                elif host.startswith("::ffff:"):
                    host = host[7:]
                found.append((host, int(hexport, 16)))
    return sorted(set(found))


def build_programs(names, flavor):
    """Compile tests/c/<name>.c for every name: with lanaicc for "lanai"
    (failing when build/ lacks it), with mpicc.mpich for "mpich" (skipping
    when MPICH is not installed). Returns {name: exe}; any compiler error
    fails the test with the compiler's output."""
    import pytest

    if flavor == "lanai":
        if not (os.access(LANAICC, os.X_OK) and os.access(LANAIRUN, os.X_OK)):
            pytest.fail(f"{LANAICC} or lanairun missing: run `make` first", pytrace=False)
        cc = LANAICC
    else:
        if not have(MPICH_CC):
            pytest.skip(f"{MPICH_CC} not installed (Debian: apt install libmpich-dev)")
        cc = MPICH_CC
    built, errors = {}, []
    for name in names:
        exe, err = compile_program(cc, name, flavor)
        if err:
            errors.append(err)
        else:
            built[name] = exe
    if errors:
        pytest.fail(f"{cc} failed to build:\n" + "\n".join(errors), pytrace=False)
    return built


def shape_params(programs, shapes):
    """pytest parameters (program, ranks, nodes) for every program and
    shape; runs of 8 ranks or more are marked slow."""
    import pytest

    return [
        pytest.param(prog, n, k, id=f"{prog}-n{n}-nodes{k}", marks=[pytest.mark.slow] if n >= 8 else [])
        for prog in programs
        for n, k in shapes
    ]
