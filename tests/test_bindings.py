"""Fortran and C++ programs built with Debian's mpif90.mpich and
mpicxx.mpich run on Lanai.

Such a binary links MPICH's own libmpichfort.so.12 (or libmpichcxx.so.12)
on top of libmpich.so.12; with LD_LIBRARY_PATH=build/lib only the latter
becomes Lanai, so MPICH's language layer must work unchanged over Lanai's C
library (the common blocks the Fortran layer fills in at init, the MPII_*
helpers both call for attributes, generalized requests, user operations and
error handlers). Each program in f/ and cxx/ ends with `PASS <name>` from
rank 0 or prints `FAIL <name>: ...` and aborts.

Without the compilers (Debian: gfortran, g++, libmpich-dev) the tests skip,
except under CI=true where that is a broken setup and they fail.
"""

import os
import re
import subprocess

import pytest

import harness
from harness import JOB_TIMEOUT_S, assert_clean, assert_passed, lanairun_argv, lib_env, run_job

FC = "mpif90.mpich"
CXX = "mpicxx.mpich"
F_DIR = os.path.join(harness.TESTS_DIR, "f")
CXX_DIR = os.path.join(harness.TESTS_DIR, "cxx")
F_OUT = os.path.join(F_DIR, "out")

# name: (compiler, source)
PROGRAMS = {
    "f_basic": (FC, os.path.join(F_DIR, "f_basic.f90")),
    "f_attr": (FC, os.path.join(F_DIR, "f_attr.f90")),
    "f_op_greq": (FC, os.path.join(F_DIR, "f_op_greq.f90")),
    "f_errh": (FC, os.path.join(F_DIR, "f_errh.f90")),
    "f_types": (FC, os.path.join(F_DIR, "f_types.f90")),
    "f77_basic": (FC, os.path.join(F_DIR, "f77_basic.f")),
    "f08_basic": (FC, os.path.join(F_DIR, "f08_basic.f90")),
    "cxx_classes": (CXX, os.path.join(CXX_DIR, "cxx_classes.cxx")),
}

# 8 ranks on one node is marked slow by shape_params, as elsewhere.
SHAPES = [(1, 1), (2, 1), (4, 2), (5, 3), (8, 1)]
HYDRA_RANKS = 3

pytestmark = pytest.mark.mpich


def _in_ci():
    return os.environ.get("CI", "").lower() in ("true", "1")


def _require(tool, package):
    """Skip when a tool is missing, except in CI where it must be there."""
    if harness.have(tool):
        return
    reason = f"{tool} not installed (Debian: apt install {package})"
    if _in_ci():
        pytest.fail(f"{reason}; CI=true, so this is an error, not a skip", pytrace=False)
    pytest.skip(reason)


# The FAIL-line helper every free-form Fortran program uses.
FTEST = os.path.join(F_DIR, "ftest.f90")


def _fortran_flags(compiler, src):
    """-J keeps .mod files out of the working directory; the helper module
    is compiled ahead of each free-form program."""
    if compiler == CXX:
        return []
    return ["-J", F_OUT] + ([FTEST] if src.endswith(".f90") else [])


@pytest.fixture(scope="module")
def binding_builds():
    """{name: exe} for every program that compiled, {name: output} for the
    rest, so one bad program fails only its own tests."""
    _require(FC, "gfortran libmpich-dev")
    _require(CXX, "g++ libmpich-dev")
    os.makedirs(F_OUT, exist_ok=True)
    built, errors = {}, {}
    for name, (compiler, src) in PROGRAMS.items():
        exe = os.path.join(F_OUT, name)
        argv = [compiler, "-O2", "-g", *_fortran_flags(compiler, src), "-o", exe, src]
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=120)
        if proc.returncode == 0:
            built[name] = exe
        else:
            errors[name] = f"$ {' '.join(argv)}\n{proc.stdout}"
    return built, errors


def _exe(binding_builds, name):
    built, errors = binding_builds
    if name in errors:
        pytest.fail(f"{PROGRAMS[name][0]} failed to build {name}:\n{errors[name]}", pytrace=False)
    return built[name]


def _mpich_env():
    """The caller's environment minus any path into Lanai's build, so the
    binary loads MPICH's own libmpich.so.12."""
    lanai = os.path.realpath(harness.LANAI_LIB)
    keep = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":")
            if p and os.path.realpath(p) != lanai]
    return {"LD_LIBRARY_PATH": ":".join(keep)}


def _resolved(exe, env_extra, soname):
    env = dict(os.environ)
    env.update(env_extra)
    out = subprocess.run(["ldd", exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=env, timeout=30).stdout
    m = re.search(rf"^\s*{re.escape(soname)} => (\S+)", out, re.M)
    assert m, f"ldd does not list {soname} for {exe}:\n{out}"
    return os.path.realpath(m.group(1)), out


def test_binary_loads_lanai_through_ld_library_path(binding_builds):
    _require("ldd", "libc-bin")
    exe = _exe(binding_builds, "f_basic")
    lanai = os.path.realpath(os.path.join(harness.LANAI_LIB, "libmpich.so.12"))
    path, out = _resolved(exe, lib_env(), "libmpich.so.12")
    assert path == lanai, f"libmpich.so.12 is not Lanai's under LD_LIBRARY_PATH:\n{out}"
    # The Fortran layer stays MPICH's: that is the combination under test.
    fort, out = _resolved(exe, lib_env(), "libmpichfort.so.12")
    assert os.path.dirname(fort) != os.path.dirname(lanai), out
    # And without it the binary is a plain MPICH one (no rpath into build/).
    path, out = _resolved(exe, _mpich_env(), "libmpich.so.12")
    assert path != lanai, f"libmpich.so.12 resolves to Lanai without LD_LIBRARY_PATH:\n{out}"


@pytest.mark.parametrize("prog,nranks,nodes", harness.shape_params(list(PROGRAMS), SHAPES))
def test_on_lanai(binding_builds, prog, nranks, nodes):
    exe = _exe(binding_builds, prog)
    result = run_job(lanairun_argv(exe, nranks, nodes), exe, env_extra=lib_env())
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_on_lanai_under_hydra(binding_builds, prog):
    _require(harness.HYDRA, "mpich")
    exe = _exe(binding_builds, prog)
    # No lanairun --timeout here, so the backstop is the only limit.
    result = run_job([harness.HYDRA, "-n", str(HYDRA_RANKS), exe], exe, env_extra=lib_env(),
                     timeout_s=JOB_TIMEOUT_S)
    assert_passed(result, prog)
    assert_clean(result)


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_program_passes_on_mpich(binding_builds, prog):
    """The programs themselves are right: they pass on MPICH proper, so a
    failure on Lanai is Lanai's."""
    _require(harness.HYDRA, "mpich")
    exe = _exe(binding_builds, prog)
    result = run_job([harness.HYDRA, "-n", "4", exe], exe, env_extra=_mpich_env(),
                     timeout_s=JOB_TIMEOUT_S)
    assert_passed(result, prog)


# Weak hooks of the toolchain that no MPI library defines.
TOOLCHAIN_WEAK = {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__"}


@pytest.mark.parametrize("soname", ["libmpichfort.so.12", "libmpichcxx.so.12"])
def test_language_layer_finds_every_symbol(binding_builds, soname):
    """Everything MPICH's language library imports without a version
    (that is, from libmpich) is defined by Lanai, so a binary linked with
    -z now, or LD_BIND_NOW=1, loads too."""
    _require("nm", "binutils")
    prog = "f_basic" if "fort" in soname else "cxx_classes"
    layer, out = _resolved(_exe(binding_builds, prog), lib_env(), soname)

    def symbols(path, *flags):
        text = subprocess.run(["nm", "-D", *flags, path], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=60).stdout
        return {line.split()[-1] for line in text.splitlines() if line.split()}

    wanted = {s for s in symbols(layer, "--undefined-only") if "@" not in s} - TOOLCHAIN_WEAK
    lanai = symbols(os.path.join(harness.LANAI_LIB, "libmpi.so.12"), "--defined-only")
    missing = sorted(wanted - lanai)
    assert len(wanted) > 100, f"nm found too few imports in {layer}:\n{out}"
    assert not missing, f"{soname} imports symbols Lanai does not define: {missing}"


# Lanai's own wrappers: mpifort builds against MPICH's Fortran layer and
# Lanai (no LD_LIBRARY_PATH needed), mpicxx builds C++ on the C API.
WRAPPED = {
    "f_basic": "mpifort",
    "f77_basic": "mpif77",
}


def _without_lanai_path():
    env = _mpich_env()
    env["LD_LIBRARY_PATH"] = env["LD_LIBRARY_PATH"] or "/nonexistent"
    return env


@pytest.mark.parametrize("prog,wrapper", sorted(WRAPPED.items()))
def test_lanai_fortran_wrapper_builds_programs_that_load_lanai(binding_builds, prog, wrapper):
    _require(FC, "gfortran libmpich-dev")
    exe = os.path.join(F_OUT, f"{prog}-{wrapper}")
    src = PROGRAMS[prog][1]
    argv = [os.path.join(harness.BUILD_DIR, "bin", wrapper), "-O2",
            *_fortran_flags(FC, src), "-o", exe, src]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"$ {' '.join(argv)}\n{proc.stdout}"
    # The rpath reaches MPICH's Fortran layer's own libmpich.so.12 too.
    lanai = os.path.realpath(os.path.join(harness.LANAI_LIB, "libmpi.so.12"))
    path, out = _resolved(exe, _without_lanai_path(), "libmpi.so.12")
    assert path == lanai, out
    for m in re.finditer(r"^\s*(libmpich\.so\.12|libmpi\.so\.12) => (\S+)", out, re.M):
        assert os.path.realpath(m.group(2)) == lanai, f"{m.group(1)} is not Lanai's:\n{out}"
    result = run_job(lanairun_argv(exe, 3, 2), exe, env_extra=_without_lanai_path())
    assert_passed(result, prog)
    assert_clean(result)


def test_lanai_cxx_wrapper():
    _require("c++", "g++")
    src = os.path.join(F_OUT, "c_api.cxx")
    exe = os.path.join(F_OUT, "c_api_cxx")
    os.makedirs(F_OUT, exist_ok=True)
    with open(src, "w") as f:
        f.write(
            "#include <mpi.h>\n#include <cstdio>\n#include <vector>\n"
            "int main(int argc, char **argv) {\n"
            "  MPI_Init(&argc, &argv);\n"
            "  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);\n"
            "  std::vector<long> v(3, r + 1), s(3);\n"
            "  MPI_Allreduce(v.data(), s.data(), 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);\n"
            "  if (r == 0 && s[2] == (long)n * (n + 1) / 2) std::printf(\"PASS c_api_cxx\\n\");\n"
            "  MPI_Finalize();\n}\n")
    for wrapper in ("mpicxx", "mpic++", "lanaicxx"):
        show = subprocess.run([os.path.join(harness.BUILD_DIR, "bin", wrapper), "-show", "x.cc"],
                              stdout=subprocess.PIPE, text=True, timeout=30).stdout.split()
        assert show[0] == os.environ.get("LANAI_CXX", "c++") and show[-1] == "-lmpi", show
    argv = [os.path.join(harness.BUILD_DIR, "bin", "mpicxx"), "-O2", "-o", exe, src]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout
    result = run_job(lanairun_argv(exe, 4, 2), exe, env_extra=_without_lanai_path())
    assert_passed(result, "c_api_cxx")
    assert_clean(result)


def test_lanai_fortran_wrapper_says_where_the_layer_is_missing(tmp_path):
    env = dict(os.environ, LANAI_FORTRAN_LAYER="nonsense")
    proc = subprocess.run([os.path.join(harness.BUILD_DIR, "bin", "mpifort"), "-show"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          timeout=30)
    assert proc.returncode == 1 and "LANAI_FORTRAN_LAYER" in proc.stderr, proc.stderr
