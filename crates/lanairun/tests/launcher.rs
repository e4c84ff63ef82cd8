//! End-to-end tests of the `lanairun` binary. Every run has a hard timeout.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const LANAIRUN: &str = env!("CARGO_BIN_EXE_lanairun");
const PROBE: &str = env!("CARGO_BIN_EXE_pmi-probe");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    pid: u32,
}

/// Runs `prog args` with `input` on stdin; kills it and fails after `limit`.
/// `during` is called with the pid once it has started.
fn run_full(
    prog: &str,
    args: &[&str],
    input: &[u8],
    limit: Duration,
    during: impl FnOnce(u32),
) -> Run {
    let start = Instant::now();
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    during(pid);
    let out = match rx.recv_timeout(limit) {
        Ok(r) => r.expect("wait"),
        Err(_) => {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            panic!("{prog} {args:?} did not finish within {limit:?}");
        }
    };
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: start.elapsed(),
        pid,
    }
}

fn lanairun(args: &[&str]) -> Run {
    run_full(LANAIRUN, args, b"", Duration::from_secs(20), |_| {})
}

fn alive(pid: u32) -> bool {
    // A zombie still has a /proc entry; look at its state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

fn sorted_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort_unstable();
    v
}

#[test]
fn exit_code_propagates() {
    let r = lanairun(&["-n", "3", "sh", "-c", "exit 3"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(r.stderr.contains("exited with code 3"), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("lanairun: rank").count(),
        1,
        "one line for the first failure: {}",
        r.stderr
    );
}

#[test]
fn success_is_zero_and_silent() {
    let r = lanairun(&["-np", "4", "true"]);
    assert_eq!(r.code, Some(0));
    assert_eq!(r.stderr, "");
}

#[test]
fn signal_death_is_reported() {
    let r = lanairun(&["-n", "2", "sh", "-c", "kill -SEGV $$"]);
    assert_eq!(r.code, Some(139), "{}", r.stderr);
    assert!(
        r.stderr.contains("was killed by signal 11 (SIGSEGV)"),
        "{}",
        r.stderr
    );
}

#[test]
fn one_failure_ends_the_job_quickly() {
    let script =
        "echo pid $$; if [ $PMI_RANK = 1 ]; then exit 5; fi; sleep 100 & echo pid $!; wait";
    let r = lanairun(&["-n", "3", "sh", "-c", script]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(5), "took {:?}", r.elapsed);
    assert!(r.stderr.contains("rank 1 (pid "), "{}", r.stderr);
    let pids: Vec<u32> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pid ")?.parse().ok())
        .collect();
    assert!(pids.len() >= 3, "{}", r.stdout);
    for pid in pids {
        assert!(!alive(pid), "process {pid} survived the job");
    }
}

#[test]
fn timeout_ends_the_job() {
    let r = lanairun(&[
        "--timeout",
        "1",
        "-n",
        "2",
        "sh",
        "-c",
        "echo pid $$; exec sleep 30",
    ]);
    assert_eq!(r.code, Some(124), "{}", r.stderr);
    assert!(
        r.stderr.contains("lanairun: job timed out after 1 s"),
        "{}",
        r.stderr
    );
    assert!(
        r.elapsed >= Duration::from_millis(900) && r.elapsed < Duration::from_secs(5),
        "{:?}",
        r.elapsed
    );
    for pid in r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pid ")?.parse::<u32>().ok())
    {
        assert!(!alive(pid), "rank {pid} survived the timeout");
    }
}

#[test]
fn sigterm_to_launcher_ends_the_job() {
    let r = run_full(
        LANAIRUN,
        &["-n", "2", "sh", "-c", "echo pid $$; exec sleep 30"],
        b"",
        Duration::from_secs(10),
        |pid| {
            std::thread::sleep(Duration::from_millis(500));
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        },
    );
    assert_eq!(r.code, Some(143), "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(5));
    for pid in r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pid ")?.parse::<u32>().ok())
    {
        assert!(!alive(pid), "rank {pid} survived SIGTERM to the launcher");
    }
}

#[test]
fn stdout_and_stderr_are_forwarded() {
    let r = lanairun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "echo out-$PMI_RANK; echo err-$PMI_RANK >&2",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(sorted_lines(&r.stdout), ["out-0", "out-1", "out-2"]);
    assert_eq!(sorted_lines(&r.stderr), ["err-0", "err-1", "err-2"]);
}

#[test]
fn large_output_is_not_lost() {
    // Untagged bytes of different ranks may interleave mid-line, so one writer here.
    let r = lanairun(&[
        "-n",
        "2",
        "sh",
        "-c",
        "if [ $PMI_RANK = 1 ]; then seq 1 30000; fi",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let sum: u64 = r
        .stdout
        .lines()
        .map(|l| l.parse::<u64>().expect("whole lines"))
        .sum();
    assert_eq!(sum, 30000 * 30001 / 2);
    // Tagged, every rank's lines stay whole.
    let r = lanairun(&["--tag-output", "-n", "3", "seq", "1", "20000"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut sums = [0u64; 3];
    for line in r.stdout.lines() {
        let (tag, n) = line.split_once("] ").expect("tagged");
        let rank: usize = tag.trim_start_matches('[').parse().expect("rank");
        sums[rank] += n.parse::<u64>().expect("whole line");
    }
    assert_eq!(sums, [20000 * 20001 / 2; 3]);
}

#[test]
fn tag_output_prefixes_whole_lines() {
    let r = lanairun(&[
        "--tag-output",
        "-n",
        "2",
        "sh",
        "-c",
        "printf 'a\\nb'; printf 'c\\n' >&2",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    for rank in 0..2 {
        let mine: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with(&format!("[{rank}] ")))
            .collect();
        assert_eq!(mine, [format!("[{rank}] a"), format!("[{rank}] b")]);
    }
    assert_eq!(lines.len(), 4, "{}", r.stdout);
    assert_eq!(sorted_lines(&r.stderr), ["[0] c", "[1] c"]);
}

#[test]
fn stdin_goes_to_rank_zero_only() {
    let script = "if [ $PMI_RANK = 0 ]; then cat; else cat; echo rank1-eof; fi";
    let r = run_full(
        LANAIRUN,
        &["-n", "2", "sh", "-c", script],
        b"hello\nworld\n",
        Duration::from_secs(20),
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(sorted_lines(&r.stdout), ["hello", "rank1-eof", "world"]);
}

#[test]
fn exported_variables() {
    let r = lanairun(&[
        "-x",
        "FOO=bar",
        "--nodes",
        "2",
        "-n",
        "2",
        "sh",
        "-c",
        "echo $FOO-$LANAI_NODES-$PMI_SIZE-$PMI_RANK",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(sorted_lines(&r.stdout), ["bar-2-2-0", "bar-2-2-1"]);
}

#[test]
fn pmi_exchange_across_ranks() {
    let r = lanairun(&["-n", "4", "--nodes", "3", PROBE]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let kvsname = format!("lanai_{}_", r.pid);
    let lines = sorted_lines(&r.stdout);
    assert_eq!(lines.len(), 4, "{}", r.stdout);
    for (rank, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("rank {rank}/4: ok kvsname={kvsname}")),
            "{line}"
        );
        assert!(
            line.contains("appnum=0 universe=4 vallen_max=1024"),
            "{line}"
        );
        assert!(line.ends_with("mapping=(vector,(0,1,2),(1,2,1))"), "{line}");
    }
}

#[test]
fn job_secret_and_ids() {
    let r = lanairun(&["-n", "3", PROBE, "secret"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut secrets = Vec::new();
    for line in r.stdout.lines() {
        let field = |k: &str| {
            line.split(' ')
                .find_map(|w| w.strip_prefix(k))
                .unwrap_or("")
                .to_string()
        };
        let (secret, kvs, pid, nonce) = (
            field("secret="),
            field("kvsname="),
            field("pid="),
            field("nonce="),
        );
        assert_eq!(secret.len(), 64);
        assert!(secret.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(pid, r.pid.to_string());
        assert_eq!(nonce.len(), 8);
        assert!(nonce.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(kvs, format!("lanai_{pid}_{nonce}"));
        assert_eq!(field("nodes="), "1");
        secrets.push(secret);
    }
    assert_eq!(secrets.len(), 3);
    assert!(secrets.iter().all(|s| *s == secrets[0]));
}

#[test]
fn abort_code_propagates() {
    let r = lanairun(&["-n", "3", PROBE, "abort", "7"]);
    assert_eq!(r.code, Some(7), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("lanairun: rank 0 called MPI_Abort (exit code 7)"),
        "{}",
        r.stderr
    );
    assert!(r.elapsed < Duration::from_secs(5));
}

#[test]
fn exit_without_finalize_is_a_failure() {
    let r = lanairun(&["-n", "2", PROBE, "nofinalize"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("exited without calling MPI_Finalize"),
        "{}",
        r.stderr
    );
}

#[test]
fn malformed_pmi_input_is_answered_and_logged() {
    let r = lanairun(&["-n", "1", PROBE, "raw", "garbage here"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("reply: cmd=error rc=-1"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains("lanairun: rank 0: malformed PMI command: garbage here"),
        "{}",
        r.stderr
    );

    let long = format!("cmd=put kvsname=x key=y value={}", "v".repeat(10_000));
    let r = lanairun(&["-n", "1", PROBE, "raw", &long]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("reply: cmd=error rc=-1"),
        "{}",
        r.stdout
    );
    assert_eq!(
        r.stderr.matches("malformed PMI command").count(),
        1,
        "{}",
        r.stderr
    );
}

#[test]
fn missing_program_is_127() {
    let r = lanairun(&["-n", "4", "/nonexistent/program"]);
    assert_eq!(r.code, Some(127));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("cannot execute"), "{}", r.stderr);
}

#[test]
fn usage_errors_are_2() {
    for args in [
        &["-n"][..],
        &["--bogus", "x"],
        &["-n", "0", "x"],
        &["-n", "2"],
        &["-n", "2", "--nodes", "3", "x"],
    ] {
        let r = lanairun(args);
        assert_eq!(r.code, Some(2), "{args:?}");
        assert!(r.stderr.starts_with("lanairun: "), "{}", r.stderr);
        assert!(r.stderr.contains("usage: lanairun"), "{}", r.stderr);
    }
}

#[test]
fn version_and_help() {
    let r = lanairun(&["--version"]);
    assert_eq!(r.code, Some(0));
    assert_eq!(
        r.stdout.trim(),
        format!("lanairun (Lanai) {}", env!("CARGO_PKG_VERSION"))
    );
    let r = lanairun(&["--help"]);
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.contains("usage: lanairun"));
}

#[test]
fn many_ranks_start_fast() {
    let r = lanairun(&["-n", "64", "true"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.elapsed < Duration::from_secs(2),
        "64 ranks took {:?}",
        r.elapsed
    );
    let r = lanairun(&["-n", "64", PROBE]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.lines().filter(|l| l.contains(": ok ")).count(), 64);
}

/// The client in lanai-wire must work with MPICH's Hydra, not only with us.
#[test]
fn probe_works_under_hydra() {
    let hydra = "mpiexec.hydra";
    if Command::new(hydra)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("skipping: {hydra} is not installed");
        return;
    }
    let r = run_full(
        hydra,
        &["-n", "3", PROBE],
        b"",
        Duration::from_secs(30),
        |_| {},
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ok: Vec<&str> = r.stdout.lines().filter(|l| l.contains(": ok ")).collect();
    assert_eq!(ok.len(), 3, "{}", r.stdout);
    assert!(
        ok.iter()
            .all(|l| l.contains("vallen_max=1024 mapping=(vector,")),
        "{}",
        r.stdout
    );
}
