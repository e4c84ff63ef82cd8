"""The user-facing tools and knobs: lanaicc, lanai-info, LANAI_* settings,
statistics, static connections, segment sweeping, error lines, symbols."""

import os
import re
import subprocess

import pytest

import harness

BIN = os.path.join(harness.BUILD_DIR, "bin")
README = os.path.join(harness.REPO_ROOT, "README.md")


def run(argv, env=None, timeout=60):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e)


def test_lanaicc_show_and_info():
    show = run([os.path.join(BIN, "lanaicc"), "-show", "-O2", "x.c"]).stdout
    inc = os.path.join(harness.BUILD_DIR, "include")
    lib = os.path.join(harness.BUILD_DIR, "lib")
    assert f"-I{os.path.realpath(inc)}" in show
    assert f"-Wl,-rpath,{os.path.realpath(lib)}" in show and show.rstrip().endswith("-lmpi")
    assert "-O2 x.c" in show
    assert "-lmpi" not in run([os.path.join(BIN, "lanaicc"), "-compile_info"]).stdout
    assert "-lmpi" in run([os.path.join(BIN, "lanaicc"), "-link_info"]).stdout
    # -c compiles only: no linker flags.
    assert "-lmpi" not in run([os.path.join(BIN, "lanaicc"), "-show", "-c", "x.c"]).stdout
    # The familiar names point at the same tools.
    assert run([os.path.join(BIN, "mpicc"), "-show"]).stdout.split()[1:2] == show.split()[1:2]
    assert os.path.realpath(os.path.join(BIN, "mpiexec")) == os.path.realpath(harness.LANAIRUN)
    assert os.path.realpath(os.path.join(BIN, "mpirun")) == os.path.realpath(harness.LANAIRUN)


def test_lanai_info_lists_every_knob_with_its_value():
    out = run([os.path.join(BIN, "lanai-info")], env={"LANAI_EAGER_LIMIT": "4096"}).stdout
    assert re.search(r"^Lanai \d+\.\d+\.\d+", out, re.M)
    table = run([os.path.join(BIN, "lanai-info"), "--markdown"]).stdout.strip().splitlines()
    names = [re.match(r"\| `(LANAI_\w+)`", row).group(1) for row in table]
    assert len(names) >= 10
    for n in names:
        assert n in out
    assert re.search(r"LANAI_EAGER_LIMIT\s+\*4096", out), "a set knob shows its value, marked"


def test_readme_knob_table_matches_the_registry():
    table = run([os.path.join(BIN, "lanai-info"), "--markdown"]).stdout.strip()
    with open(README) as f:
        readme = f.read()
    assert table in readme, "README's knob table is stale: paste `lanai-info --markdown`"


@pytest.fixture(scope="module")
def ring():
    exe = os.path.join(harness.OUT_DIR, "tools", "ring")
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    src = os.path.join(harness.REPO_ROOT, "examples", "ring.c")
    r = run([harness.LANAICC, "-O1", "-o", exe, src])
    assert r.returncode == 0, r.stderr
    return exe


def test_stats_report_transports(ring):
    res = harness.run_job(harness.lanairun_argv(ring, 4, 2), ring, {"LANAI_STATS": "1"})
    harness.assert_clean(res)
    assert res.returncode == 0, res.tail()
    lines = re.findall(r"^lanai: stats rank (\d+): tcp connections (\d+) .*shm peers (\d+) msgs (\d+)", res.output, re.M)
    assert sorted(int(r) for r, *_ in lines) == [0, 1, 2, 3], res.tail()
    for _, conns, peers, msgs in lines:
        assert int(conns) >= 1 and int(peers) == 1 and int(msgs) >= 1


def test_static_connect_and_ondemand(ring):
    for mode in ["static", "ondemand"]:
        res = harness.run_job(harness.lanairun_argv(ring, 6, 3), ring, {"LANAI_CONNECT": mode, "LANAI_STATS": "1"})
        harness.assert_clean(res)
        assert res.returncode == 0 and "ring+allreduce: OK" in res.output, res.tail()
        conns = [int(c) for c in re.findall(r"tcp connections (\d+)", res.output)]
        if mode == "static":
            # Every rank is connected to all 4 ranks on the other two nodes.
            assert conns == [4] * 6, res.tail()


def test_bad_knob_values_are_named(ring):
    for knob, value in [("LANAI_SPIN", "fast"), ("LANAI_CONNECT", "sometimes"), ("LANAI_BARRIER", "magic"), ("LANAI_EAGER_LIMIT", "-1")]:
        res = harness.run_job(harness.lanairun_argv(ring, 2, 1), ring, {knob: value})
        harness.assert_clean(res)
        assert res.returncode != 0
        assert f"lanai: MPI_Init: {knob}" in res.output, res.tail()


def test_stale_segments_are_swept(ring):
    uid = os.getuid()
    # A segment whose owning launcher (a pid that cannot exist) is gone.
    stale = f"/dev/shm/lanai-{uid}-4194999-deadbeef-n0"
    with open(stale, "wb") as f:
        f.write(b"x" * 4096)
    res = harness.run_job(harness.lanairun_argv(ring, 2, 1), ring)
    assert res.returncode == 0, res.tail()
    assert not os.path.exists(stale), "a dead job's segment survived the next job"


def test_invalid_rank_is_one_clear_line(tmp_path):
    src = tmp_path / "badrank.c"
    src.write_text(
        "#include <mpi.h>\n"
        "int main(int c, char **v) { int x = 0, r; MPI_Init(&c, &v); MPI_Comm_rank(MPI_COMM_WORLD, &r);\n"
        "  if (r == 0) MPI_Send(&x, 1, MPI_INT, 7, 0, MPI_COMM_WORLD);\n"
        "  MPI_Barrier(MPI_COMM_WORLD); MPI_Finalize(); return 0; }\n"
    )
    exe = str(tmp_path / "badrank")
    assert run([harness.LANAICC, "-o", exe, str(src)]).returncode == 0
    res = harness.run_job(harness.lanairun_argv(exe, 4, 1), exe)
    harness.assert_clean(res)
    assert res.returncode == 1
    assert "lanai: MPI_Send: invalid rank 7 (communicator size 4)" in res.output, res.tail()


def test_unsupported_function_names_itself(tmp_path):
    src = tmp_path / "unsup.c"
    src.write_text(
        "#include <mpi.h>\n#include <stdio.h>\n"
        "int main(int c, char **v) { MPI_Init(&c, &v);\n"
        "  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);\n"
        "  int rc = MPI_Close_port(\"nowhere\"), cls; MPI_Error_class(rc, &cls);\n"
        "  printf(\"class=%d\\n\", cls); MPI_Finalize(); return 0; }\n"
    )
    exe = str(tmp_path / "unsup")
    assert run([harness.LANAICC, "-o", exe, str(src)]).returncode == 0
    res = harness.run_job(harness.lanairun_argv(exe, 1, 1), exe)
    assert res.returncode == 0, res.tail()
    assert "class=44" in res.output  # MPI_ERR_UNSUPPORTED_OPERATION under ERRORS_RETURN
    # Under the default handler it ends the job, naming the function.
    src.write_text(src.read_text().replace("  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);\n", ""))
    assert run([harness.LANAICC, "-o", exe, str(src)]).returncode == 0
    res = harness.run_job(harness.lanairun_argv(exe, 2, 1), exe)
    harness.assert_clean(res)
    assert res.returncode != 0
    assert "lanai: MPI_Close_port: not supported by Lanai yet" in res.output, res.tail()


@pytest.mark.skipif(not harness.have(harness.MPICH_CC), reason="mpicc.mpich is not installed")
def test_mpich_binaries_find_every_symbol(ring, tmp_path):
    exe = str(tmp_path / "ring_mpich")
    src = os.path.join(harness.REPO_ROOT, "examples", "ring.c")
    assert run([harness.MPICH_CC, "-o", exe, src]).returncode == 0
    tool = os.path.join(harness.REPO_ROOT, "tools", "check_symbols.sh")
    r = run(["bash", tool, exe], env={"LANAI_LIB": os.path.join(harness.LANAI_LIB, "libmpi.so.12")})
    assert r.returncode == 0 and "present" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(not harness.have(harness.MPICH_CC), reason="mpicc.mpich is not installed")
def test_header_values_match_mpich():
    r = run(["bash", os.path.join(harness.REPO_ROOT, "tools", "check_header.sh")], timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def _connections_of_rank0(tmp_path, source_expr):
    """Rank 0 receives one message from rank 1, posting the receive with
    `source_expr`; returns rank 0's TCP connection count (8 ranks, 8 nodes)."""
    src = tmp_path / "anysrc.c"
    src.write_text(
        "#include <mpi.h>\n"
        "int main(int c, char **v) { int x = 5, r; MPI_Init(&c, &v); MPI_Comm_rank(MPI_COMM_WORLD, &r);\n"
        f"  if (r == 0) MPI_Recv(&x, 1, MPI_INT, {source_expr}, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
        "  if (r == 1) MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);\n"
        "  MPI_Finalize(); return x == 5 ? 0 : 1; }\n"
    )
    exe = str(tmp_path / "anysrc")
    assert run([harness.LANAICC, "-o", exe, str(src)]).returncode == 0
    # The finalize barrier's algorithm decides the other connections: pin it.
    env = {"LANAI_STATS": "1", "LANAI_BARRIER": "dissemination"}
    res = harness.run_job(harness.lanairun_argv(exe, 8, 8), exe, env)
    harness.assert_clean(res)
    assert res.returncode == 0, res.tail()
    m = re.search(r"^lanai: stats rank 0: tcp connections (\d+)", res.output, re.M)
    return int(m.group(1))


def test_any_source_connects_to_everyone_first(tmp_path):
    # Seed 004: a wildcard receive may match anyone, so rank 0 connects to
    # all seven peers before it can match; a named source needs only rank 1
    # plus the peers of MPI_Finalize's dissemination barrier (1, 2, 4, 6, 7).
    assert _connections_of_rank0(tmp_path, "MPI_ANY_SOURCE") == 7
    assert _connections_of_rank0(tmp_path, "1") == 5


ALGORITHM_KNOBS = [
    ("LANAI_BARRIER", v) for v in ["dissemination", "pairwise", "binomial", "central"]
] + [("LANAI_BCAST", v) for v in ["binomial", "scatter_allgather"]] + [
    ("LANAI_ALLREDUCE", v) for v in ["recursive_doubling", "reduce_bcast", "rabenseifner", "ring"]
] + [("LANAI_REDUCE", v) for v in ["binomial", "kary"]]


@pytest.mark.parametrize("knob,value", ALGORITHM_KNOBS, ids=[f"{k}={v}" for k, v in ALGORITHM_KNOBS])
@pytest.mark.parametrize("nranks,nodes", [(4, 2), (5, 1)], ids=["n4-nodes2", "n5-nodes1"])
def test_every_collective_algorithm_by_hand(lanai_builds, knob, value, nranks, nodes):
    # coll_basic checks results against local computations and checks that
    # float allreduce results are bitwise identical on every rank.
    exe = lanai_builds["coll_basic"]
    res = harness.run_job(harness.lanairun_argv(exe, nranks, nodes), exe, {knob: value})
    harness.assert_clean(res)
    harness.assert_passed(res, "coll_basic")


@pytest.mark.parametrize("bind", ["none", "core", "auto"])
@pytest.mark.parametrize("nranks,nodes", [(2, 1), (4, 1), (4, 2)])
def test_streams_of_large_rooted_collectives(nranks, nodes, bind):
    # Pinned ranks used to expose a sender asleep on a full queue (nobody
    # wakes a sender when the receiver frees ring space).
    exe, err = harness.compile_program(harness.LANAICC, "coll_stream", "lanai")
    assert not err, err
    res = harness.run_job(harness.lanairun_argv(exe, nranks, nodes), exe, {"LANAI_BIND": bind}, timeout_s=60)
    harness.assert_clean(res)
    harness.assert_passed(res, "coll_stream")
    # 300 rounds take well under a second when senders keep pushing their
    # queues; a sender sleeping on a full queue waits out a timeout per round.
    assert res.wall_s < 20, f"took {res.wall_s:.1f} s\n" + res.tail()


def test_wildcard_receive_of_a_rendezvous_message_reports_its_envelope(tmp_path):
    # A receive posted before a large (rendezvous) message arrives must report
    # the sender and tag of the message it matched, by any transport.
    src = tmp_path / "wild.c"
    src.write_text(
        "#include <mpi.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
        "int main(int c, char **v) { int r, s, bad = 0; MPI_Init(&c, &v);\n"
        "  MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &s);\n"
        "  int n = 1 << 18; int *b = malloc(n * sizeof(int));\n"
        "  if (r == 0) { for (int k = 1; k < s; k++) { MPI_Request q; MPI_Status st; int cnt;\n"
        "      MPI_Irecv(b, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &q);\n"
        "      MPI_Send(&k, 1, MPI_INT, k, 0, MPI_COMM_WORLD); MPI_Wait(&q, &st);\n"
        "      MPI_Get_count(&st, MPI_INT, &cnt);\n"
        "      if (st.MPI_SOURCE != k || st.MPI_TAG != 40 + k || cnt != n || b[n - 1] != k) bad++; }\n"
        "    printf(bad ? \"FAIL wild\\n\" : \"PASS wild\\n\"); }\n"
        "  else { int k; MPI_Recv(&k, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
        "    for (int i = 0; i < n; i++) b[i] = r; MPI_Send(b, n, MPI_INT, 0, 40 + r, MPI_COMM_WORLD); }\n"
        "  MPI_Finalize(); return bad; }\n"
    )
    exe = str(tmp_path / "wild")
    assert run([harness.LANAICC, "-o", exe, str(src)]).returncode == 0
    for n, k in [(2, 1), (4, 1), (4, 2)]:
        res = harness.run_job(harness.lanairun_argv(exe, n, k), exe)
        harness.assert_clean(res)
        harness.assert_passed(res, "wild")


@pytest.mark.parametrize("prog", ["large", "ordering", "modes", "probe", "persistent"])
def test_rendezvous_without_single_copy(lanai_builds, prog):
    # LANAI_SINGLE_COPY=off takes the path used when the kernel refuses
    # process_vm_readv: the sender streams the message through the ring.
    exe = lanai_builds[prog]
    res = harness.run_job(harness.lanairun_argv(exe, 4, 1), exe, {"LANAI_SINGLE_COPY": "off"})
    harness.assert_clean(res)
    harness.assert_passed(res, prog)


def _allowed_cpus_per_rank(nranks, bind, flag=None):
    """Each rank's allowed CPUs, as the kernel reports them, by rank; with
    `flag`, chosen by `--bind-to flag` over LANAI_BIND=bind."""
    script = 'echo "$PMI_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
    opts = ["--bind-to", flag] if flag else []
    r = run([harness.LANAIRUN, *opts, "-n", str(nranks), "sh", "-c", script],
            env={"LANAI_BIND": bind})
    assert r.returncode == 0, r.stdout + r.stderr
    out = {}
    for line in r.stdout.split("\n"):
        if line.strip():
            rank, cpus = line.split()
            out[int(rank)] = cpus
    assert sorted(out) == list(range(nranks)), r.stdout
    return out


def _cpu_list(cpus):
    """The kernel's list syntax for a set of CPUs, e.g. 0-1,4."""
    cpus, parts, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def _spread_order(cpus):
    """CPUs in pinning order: the first thread of every physical core (by
    package, then core), then every core's second thread, and so on."""
    def place(c):
        try:
            top = f"/sys/devices/system/cpu/cpu{c}/topology/"
            return (int(open(top + "physical_package_id").read()), int(open(top + "core_id").read()))
        except (OSError, ValueError):
            return (1 << 62, c)
    seen, keyed = {}, []
    for c in sorted(cpus):
        k = place(c)
        keyed.append(((seen.get(k, 0), k, c), c))
        seen[k] = seen.get(k, 0) + 1
    return [c for _, c in sorted(keyed)]


def test_oversubscribed_ranks_are_pinned_round_robin_from_the_start():
    cpus = _spread_order(os.sched_getaffinity(0))
    everything = _cpu_list(cpus)
    n = len(cpus) + 1
    # Ranks outnumber cores: auto pins rank i to the (i mod cores)-th core
    # in spread order, before the program's first instruction (the shell
    # reads it at once).
    got = _allowed_cpus_per_rank(n, "auto")
    assert got == {r: str(cpus[r % len(cpus)]) for r in range(n)}
    # none never pins; auto leaves ranks that fit to the kernel; core pins them.
    assert set(_allowed_cpus_per_rank(n, "none").values()) == {everything}
    fit = min(2, len(cpus))
    assert set(_allowed_cpus_per_rank(fit, "auto").values()) == {everything}
    assert _allowed_cpus_per_rank(fit, "core") == {r: str(cpus[r]) for r in range(fit)}
    # Open MPI's and Hydra's --bind-to say the same, over the variable.
    assert _allowed_cpus_per_rank(fit, "none", "core") == {r: str(cpus[r]) for r in range(fit)}
    assert set(_allowed_cpus_per_rank(n, "core", "none").values()) == {everything}


def test_an_unknown_bind_choice_is_a_usage_error():
    r = run([harness.LANAIRUN, "-n", "2", "true"], env={"LANAI_BIND": "sockets"})
    assert r.returncode == 2
    assert 'LANAI_BIND="sockets": expected auto, core or none' in r.stderr


# ------------------------------------------- the launcher's other spellings


@pytest.fixture(scope="module")
def mpmd():
    exe, err = harness.compile_program(harness.LANAICC, "mpmd", "lanai")
    assert exe, err
    return exe


@pytest.fixture(scope="module")
def mpmd_mpich():
    if not harness.have(harness.MPICH_CC):
        pytest.skip(f"{harness.MPICH_CC} not installed (Debian: apt install libmpich-dev)")
    exe, err = harness.compile_program(harness.MPICH_CC, "mpmd", "mpich")
    assert exe, err
    return exe


def _layout(output):
    m = re.search(r"^(?:\[0\] )?layout appnums=(\S+) shared=(\S+)$", output, re.M)
    assert m, output
    return m.group(1), m.group(2)


@pytest.mark.parametrize("nodes", [1, 2, 3])
def test_several_programs_in_one_job(mpmd, tmp_path, nodes):
    # Three programs (here one binary told what to expect): each gets its
    # MPI_APPNUM, its own -env and -wdir, and the job's -genv.
    wdir = os.path.realpath(tmp_path)
    argv = [harness.LANAIRUN, "--timeout", str(harness.JOB_TIMEOUT_S), "-genv", "LANAI_TEST_G",
            "g", "--nodes", str(nodes),
            "-n", "1", "-env", "LANAI_TEST_ENV", "first", mpmd, "0", "first", ":",
            "-np", "2", "-wdir", wdir, mpmd, "1", "-", wdir, ":",
            mpmd, "2", "-"]
    res = harness.run_job(argv, mpmd)
    harness.assert_passed(res, "mpmd")
    harness.assert_clean(res)
    assert _layout(res.output)[0] == "0,1,1,2"


@pytest.mark.mpich
def test_several_programs_built_with_mpich(mpmd_mpich):
    argv = [harness.LANAIRUN, "--timeout", str(harness.JOB_TIMEOUT_S), "-x", "LANAI_TEST_G=g",
            "--nodes", "2", "-n", "2", mpmd_mpich, "0", "-", ":", "-n", "2", mpmd_mpich, "1", "-"]
    res = harness.run_job(argv, mpmd_mpich, env_extra=harness.lib_env())
    harness.assert_passed(res, "mpmd")
    harness.assert_clean(res)
    assert _layout(res.output) == ("0,0,1,1", "2,2,2,2")


def test_several_programs_under_hydra(mpmd):
    if not harness.have(harness.HYDRA):
        pytest.skip(f"{harness.HYDRA} not installed (Debian: apt install mpich)")
    argv = [harness.HYDRA, "-genv", "LANAI_TEST_G", "g", "-n", "2", mpmd, "0", "-", ":",
            "-n", "1", "-env", "LANAI_TEST_ENV", "x", mpmd, "1", "x"]
    res = harness.run_job(argv, mpmd, env_extra=harness.lib_env(),
                          timeout_s=harness.JOB_TIMEOUT_S)
    harness.assert_passed(res, "mpmd")
    harness.assert_clean(res)
    assert _layout(res.output)[0] == "0,0,1"


def test_genvnone_and_envnone_pass_only_what_is_named(mpmd):
    # The launcher's LANAI_TEST_ENV reaches only the program without
    # -envnone; -genv's variable reaches everyone; with -genvnone nobody
    # inherits it.
    leak = {"LANAI_TEST_ENV": "leak"}
    argv = [harness.LANAIRUN, "--timeout", str(harness.JOB_TIMEOUT_S), "-genv", "LANAI_TEST_G",
            "g", "-n", "1", "-envnone", mpmd, "0", "-", ":", "-n", "2", mpmd, "1", "leak"]
    res = harness.run_job(argv, mpmd, env_extra=leak)
    harness.assert_passed(res, "mpmd")
    harness.assert_clean(res)
    argv = [harness.LANAIRUN, "--timeout", str(harness.JOB_TIMEOUT_S), "-genvnone", "-genv",
            "LANAI_TEST_G", "g", "-n", "3", "--nodes", "2", mpmd, "0", "-"]
    res = harness.run_job(argv, mpmd, env_extra=leak)
    harness.assert_passed(res, "mpmd")
    harness.assert_clean(res)


@pytest.mark.parametrize("flag,ranks,per_node,shared", [
    ("-ppn", 8, 3, "3,3,3,3,3,3,2,2"),
    ("--npernode", 4, 2, "2,2,2,2"),
    ("-perhost", 3, 3, "3,3,3"),
])
def test_ranks_per_node(mpmd, flag, ranks, per_node, shared):
    argv = [harness.LANAIRUN, "--timeout", str(harness.JOB_TIMEOUT_S), "-n", str(ranks), flag,
            str(per_node), mpmd, "0", "-"]
    res = harness.run_job(argv, mpmd, env_extra={"LANAI_TEST_G": "g"})
    harness.assert_passed(res, "mpmd")
    harness.assert_clean(res)
    assert _layout(res.output)[1] == shared


def test_open_mpi_and_hydra_spellings_are_accepted(mpmd, tmp_path):
    # What scripts written for mpirun or mpiexec.hydra pass on one machine.
    host = os.uname().nodename
    hosts = tmp_path / "hosts"
    hosts.write_text(f"localhost slots=2\n{host}:1  # this machine\n")
    argv = [harness.LANAIRUN, "--oversubscribe", "-genvall", "-genvlist", "LANAI_TEST_G",
            "--map-by", "core:OVERSUBSCRIBE", "--bind-to", "none", "-host", f"localhost,{host}:4",
            "--hostfile", str(hosts), "-l", "-np", "3", mpmd, "0", "-"]
    res = harness.run_job(argv, mpmd, env_extra={"LANAI_TEST_G": "g"})
    assert res.returncode == 0, res.tail()
    # -l labels every line with its rank.
    assert re.search(r"^\[0\] PASS mpmd$", res.output, re.M), res.tail()
    assert _layout(res.output)[0] == "0,0,0"
    harness.assert_clean(res)


@pytest.mark.parametrize("argv,code,message", [
    (["-host", "elsewhere.invalid", "true"], 2, 'host "elsewhere.invalid" is not this machine'),
    (["--map-by", "node", "true"], 2, "--map-by node: lanairun places consecutive ranks"),
    (["--bind-to", "socket", "true"], 2, "--bind-to socket: lanairun binds to a core"),
    (["-n", "4", "-ppn", "2", "--nodes", "3", "true"], 2, "--nodes 3 and -ppn 2 disagree"),
    (["-n", "1", "true", ":", "-n", "2"], 2, "no program to run"),
    (["-wdir", "/nonexistent/lanai", "true"], 1, "-wdir /nonexistent/lanai: No such file"),
    (["-genv", "ONLY_A_NAME"], 2, "option -genv needs a value"),
    # The first program's rank, already started, is ended with the job.
    (["-n", "1", "sleep", "30", ":", "-n", "1", "/nonexistent/lanai"], 127,
     'cannot execute "/nonexistent/lanai"'),
])
def test_launcher_options_it_cannot_honour_are_refused(argv, code, message):
    r = run([harness.LANAIRUN, *argv])
    assert r.returncode == code, r.stdout + r.stderr
    assert message in r.stderr, r.stderr


# ------------------------------------------- pacing of one-way TCP streams


def _bbr_possible():
    """Whether this kernel lets this user set BBR on a socket, as Lanai does."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"bbr")
            return True
        except OSError:
            return False


def test_tcp_paces_streams_of_small_messages_and_not_exchanges():
    # Non-roots of a run of small reduces over TCP stream to the root and
    # switch to pacing; allreduces (exchanges) never do. Results are
    # checked by the programs either way.
    stream, err = harness.compile_program(harness.LANAICC, "coll_runahead", "lanai")
    assert stream, err
    res = harness.run_job(harness.lanairun_argv(stream, 4, 4, ["3000", "8", "0", "reduce"]),
                          stream, {"LANAI_STATS": "1"})
    harness.assert_passed(res, "coll_runahead")
    harness.assert_clean(res)
    paced = harness.rank_stats(res.output, "paced streams")
    assert sorted(paced) == [0, 1, 2, 3], res.tail()
    assert paced[0] == 0, "the root only receives: " + res.tail()
    if _bbr_possible():
        assert sum(paced.values()) >= 1, res.tail()
    exchange, err = harness.compile_program(harness.LANAICC, "allreduce_bits", "lanai")
    assert exchange, err
    res = harness.run_job(harness.lanairun_argv(exchange, 4, 4), exchange, {"LANAI_STATS": "1"})
    harness.assert_passed(res, "allreduce_bits")
    paced = harness.rank_stats(res.output, "paced streams")
    assert paced == {0: 0, 1: 0, 2: 0, 3: 0}, res.tail()
