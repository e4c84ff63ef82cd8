"""The mpi4py wheel from PyPI (its MPICH-ABI extension) on Lanai.

Installs a pinned wheel into a throwaway venv (cached under /tmp between
runs), checks that every MPI symbol its extension imports is in
libmpi.so.12, and runs `mpi4py.bench helloworld` and `ringtest` at 4 ranks
with only LD_LIBRARY_PATH pointing at Lanai: mpi4py must pick its MPICH
extension on its own (MPI4PY_MPIABI is not set).

The wheel comes from the package index; with no index reachable the tests
fail, unless LANAI_TEST_OFFLINE=1 says to skip them.
"""

import os
import re
import subprocess
import sys

import pytest

import harness
from harness import assert_clean, lanairun_argv, lib_env, run_job

MPI4PY_VERSION = "4.1.2"
VENV = f"/tmp/lanai-mpi4py-{MPI4PY_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}"
PY = os.path.join(VENV, "bin", "python")


def _sh(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


@pytest.fixture(scope="module")
def venv_python():
    ok = _sh([PY, "-c", "import mpi4py"]) if os.path.exists(PY) else None
    if ok is None or ok.returncode != 0:
        r = _sh([sys.executable, "-m", "venv", "--clear", VENV])
        assert r.returncode == 0, "python3 -m venv failed (Debian: apt install python3-venv)\n" + r.stdout
        r = _sh(
            [PY, "-m", "pip", "install", "-q", "--only-binary=:all:", f"mpi4py=={MPI4PY_VERSION}"],
            timeout=600,
        )
        if r.returncode != 0:
            if os.environ.get("LANAI_TEST_OFFLINE") == "1":
                pytest.skip("no package index reachable (LANAI_TEST_OFFLINE=1)")
            pytest.fail("pip could not install the mpi4py wheel:\n" + r.stdout[-3000:], pytrace=False)
    return PY


def _extension(py):
    r = _sh([py, "-c", "import mpi4py, os; print(os.path.dirname(mpi4py.__file__))"])
    assert r.returncode == 0, r.stdout
    d = r.stdout.strip()
    ext = [f for f in os.listdir(d) if f.startswith("MPI.mpich.") and f.endswith(".so")]
    assert ext, f"no MPICH extension in {d}: {os.listdir(d)}"
    return os.path.join(d, ext[0])


def _symbols(argv):
    r = _sh(argv)
    assert r.returncode == 0, r.stdout
    return [line.split() for line in r.stdout.splitlines() if line.strip()]


def test_every_imported_mpi_symbol_exists(venv_python):
    ext = _extension(venv_python)
    imported = {
        (f[-1], f[0]) for f in _symbols(["nm", "-D", "--undefined-only", ext])
        if re.match(r"^P?MPIX?_", f[-1])
    }
    lib = os.path.join(harness.LANAI_LIB, "libmpi.so.12")
    exported = {f[-1] for f in _symbols(["nm", "-D", "--defined-only", lib])}
    missing = sorted(
        name for name, kind in imported
        # MPI_Abi_* are the MPI 5 standard ABI's; exporting them would tell
        # mpi4py that the library is not MPICH's ABI.
        if name not in exported and not name.startswith("MPI_Abi_")
    )
    assert not missing, f"{len(missing)} symbols the mpi4py extension imports are missing: {missing}"
    assert not any(n.startswith("MPI_Abi_") for n in exported)


BENCHES = {
    "helloworld": [],
    # ringtest checks the message that went round (it aborts on a mismatch).
    "ringtest": ["-n", "1024", "-l", "50"],
}


@pytest.mark.parametrize("bench", list(BENCHES))
def test_mpi4py_bench_at_four_ranks(venv_python, bench, monkeypatch):
    monkeypatch.delenv("MPI4PY_MPIABI", raising=False)
    env = lib_env()
    argv = lanairun_argv(venv_python, 4, 1, ["-m", "mpi4py.bench", bench, *BENCHES[bench]])
    r = run_job(argv, venv_python, env)
    assert not r.timed_out, r.tail()
    assert r.returncode == 0, f"mpi4py.bench {bench} failed\n" + r.tail()
    if bench == "helloworld":
        for rank in range(4):
            assert re.search(rf"Hello, World! I am process {rank} of 4", r.output), r.tail()
    else:
        assert re.search(r"time for 50 loops = \S+ seconds \(4 processes, 1024 bytes\)", r.output), r.tail()
    assert_clean(r)


# Each rank writes its line with one write(2), so the two never interleave.
ERROR_SCRIPT = """
import os
from mpi4py import MPI
c = MPI.COMM_WORLD
try:
    c.Send(bytearray(4), dest=c.size, tag=0)
    line = "no exception"
except MPI.Exception as e:
    line = f"class={e.Get_error_class()} want={MPI.ERR_RANK} code={e.Get_error_code()} text={e}"
os.write(1, (line + "\\n").encode())
"""


def test_mpi4py_exception_says_what_failed(venv_python, tmp_path, monkeypatch):
    """A failed call raises MPI.Exception with the right class, and its text
    names the function and the cause, not just the class."""
    monkeypatch.delenv("MPI4PY_MPIABI", raising=False)
    script = tmp_path / "bad_rank.py"
    script.write_text(ERROR_SCRIPT)
    argv = lanairun_argv(venv_python, 2, 1, [str(script)])
    r = run_job(argv, venv_python, lib_env())
    assert r.returncode == 0, r.tail()
    lines = re.findall(r"^class=(\d+) want=(\d+) code=(\d+) text=(.*)$", r.output, re.M)
    assert len(lines) == 2, r.tail()
    for cls, want, code, text in lines:
        assert cls == want and code != cls, r.tail()
        assert re.search(r"MPI_Send(_c)?: invalid rank 2 \(communicator size 2\)", text), r.tail()
    assert_clean(r)
