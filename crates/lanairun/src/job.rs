//! One job: spawn the ranks, then a single-threaded poll loop that serves
//! PMI, forwards stdio, reaps children and ends the job on the first failure.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use nix::sys::signal::{killpg, sigprocmask, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, getuid, Pid};

use crate::cli::Options;
use crate::mapping::process_mapping;
use crate::output::Forwarder;
use crate::placement::{self, Place};
use crate::pmi_server::{Event, PmiServer};
use crate::spawn::spawn_rank;

/// Time between SIGTERM and SIGKILL when the job is ended.
const GRACE: Duration = Duration::from_secs(1);
/// After SIGKILL, how long to wait for the ranks to be reaped before giving up.
const REAP_LIMIT: Duration = Duration::from_secs(3);
/// Bytes of our stdin buffered for rank 0 before we stop reading.
const STDIN_BUFFER: usize = 64 * 1024;

/// Why the job could not be started.
#[derive(Debug)]
pub enum JobError {
    /// The program does not exist or is not executable.
    CannotExecute { program: OsString, error: io::Error },
    /// A rank could not be started for another reason (e.g. out of processes).
    SpawnFailed { rank: usize, error: io::Error },
    /// A system call the launcher needs failed.
    Setup { what: &'static str, errno: Errno },
    /// `-wdir` names a directory the ranks cannot start in.
    BadWdir {
        dir: std::path::PathBuf,
        error: io::Error,
    },
}

impl JobError {
    /// The launcher's exit status for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::CannotExecute { .. } => 127,
            _ => 1,
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CannotExecute { program, error } => {
                write!(f, "cannot execute {:?}: {}", program, describe_io(error))
            }
            Self::SpawnFailed { rank, error } => {
                write!(f, "cannot start rank {rank}: {}", describe_io(error))
            }
            Self::Setup { what, errno } => write!(f, "{what} failed: {}", errno.desc()),
            Self::BadWdir { dir, error } => {
                write!(f, "-wdir {}: {}", dir.display(), describe_io(error))
            }
        }
    }
}

impl std::error::Error for JobError {}

fn describe_io(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

fn setup(what: &'static str) -> impl FnOnce(Errno) -> JobError {
    move |errno| JobError::Setup { what, errno }
}

/// One rank as the launcher sees it.
struct Rank {
    pid: Pid,
    pmi: Option<UnixStream>,
    pmi_out: Vec<u8>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out_fwd: Forwarder,
    err_fwd: Forwarder,
    status: Option<WaitStatus>,
}

/// The job is being ended: SIGTERM was sent, SIGKILL follows.
struct Ending {
    code: u8,
    kill_at: Instant,
    killed_at: Option<Instant>,
}

/// What a ready file descriptor belongs to.
#[derive(Clone, Copy, Debug)]
enum Source {
    Signals,
    Stdin,
    RankStdin,
    Pmi(usize),
    Stdout(usize),
    Stderr(usize),
}

struct Job {
    ranks: Vec<Rank>,
    pgid: Pid,
    pmi: PmiServer,
    signals: SignalFd,
    /// Our stdin is still open and being forwarded to rank 0.
    stdin_open: bool,
    rank_stdin: Option<ChildStdin>,
    stdin_buf: Vec<u8>,
    deadline: Option<Instant>,
    timeout_text: String,
    ending: Option<Ending>,
}

/// Runs the job described by `opts`; returns the launcher's exit status.
pub fn run(opts: &Options) -> Result<u8, JobError> {
    let uid = getuid().as_raw();
    lanai_common::shm_names::sweep(uid, None);
    raise_fd_limit();
    let result = start(opts).map(|mut job| {
        job.event_loop();
        job.finish()
    });
    lanai_common::shm_names::sweep(uid, Some(getpid().as_raw() as u32));
    result
}

/// Lets a large job have its 3 descriptors per rank.
fn raise_fd_limit() {
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

fn random_hex(bytes: usize) -> Result<String, JobError> {
    let mut buf = vec![0u8; bytes];
    getrandom::getrandom(&mut buf).map_err(|e| JobError::Setup {
        what: "getrandom",
        errno: e.raw_os_error().map_or(Errno::EIO, Errno::from_raw),
    })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn set_nonblocking(fd: &impl AsRawFd) -> Result<(), JobError> {
    let flags = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL).map_err(setup("fcntl(F_GETFL)"))?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(flags)).map_err(setup("fcntl(F_SETFL)"))?;
    Ok(())
}

fn start(opts: &Options) -> Result<Job, JobError> {
    // Signals are taken through a signalfd so the loop never busy-waits; the
    // children get an empty mask back from std's spawn.
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
    ] {
        mask.add(s);
    }
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None).map_err(setup("sigprocmask"))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(setup("signalfd"))?;

    let size = opts.ranks as usize;
    let job_pid = getpid().as_raw();
    let nonce = random_hex(4)?;
    let secret = random_hex(32)?;
    let kvsname = format!("lanai_{job_pid}_{nonce}");
    let initial = [
        (
            "PMI_process_mapping".to_string(),
            process_mapping(&opts.node_sizes()),
        ),
        ("lanai-secret".to_string(), secret),
    ];
    let appnums = (0..size).map(|r| opts.app_of(r).0 as i32).collect();
    let pmi = PmiServer::new(kvsname, appnums, initial);
    // Orphans of the ranks come to us, so they are reaped rather than left as zombies.
    let _ = nix::sys::prctl::set_child_subreaper(true);

    let mut ranks: Vec<Rank> = Vec::with_capacity(size);
    let mut rank_stdin = None;
    let mut pgid = None;
    for app in &opts.apps {
        if let Some(dir) = &app.wdir {
            let checked = std::fs::metadata(dir).and_then(|m| {
                if m.is_dir() {
                    Ok(())
                } else {
                    Err(io::Error::from_raw_os_error(Errno::ENOTDIR as i32))
                }
            });
            if let Err(error) = checked {
                return Err(JobError::BadWdir {
                    dir: dir.clone(),
                    error,
                });
            }
        }
    }
    let order = pin_order(opts.ranks, opts.bind);
    for r in 0..size {
        let core = order.as_ref().map(|o| o[r % o.len()]);
        let spawned = spawn_one(opts, r, core, pgid, job_pid, &nonce);
        let (rank, stdin) = match spawned {
            Ok(x) => x,
            Err(e) => {
                abandon(&ranks, pgid);
                return Err(e);
            }
        };
        pgid.get_or_insert(rank.pid);
        if stdin.is_some() {
            rank_stdin = stdin;
        }
        ranks.push(rank);
    }
    let pgid = pgid.ok_or(JobError::Setup {
        what: "spawn",
        errno: Errno::EINVAL,
    })?;
    if let Some(s) = &rank_stdin {
        set_nonblocking(s)?;
    }
    Ok(Job {
        ranks,
        pgid,
        pmi,
        signals,
        stdin_open: rank_stdin.is_some(),
        rank_stdin,
        stdin_buf: Vec::new(),
        deadline: opts.timeout.map(|t| Instant::now() + t),
        timeout_text: opts.timeout_text.clone(),
        ending: None,
    })
}

/// Kills and reaps ranks already started when a later one cannot be.
fn abandon(ranks: &[Rank], pgid: Option<Pid>) {
    if let Some(g) = pgid {
        let _ = killpg(g, Signal::SIGKILL);
    }
    for r in ranks {
        let _ = waitpid(r.pid, None);
    }
}

/// The cores ranks are pinned to, round-robin (one thread of every core
/// before a second of any), or none: always with `LANAI_BIND=core`, and
/// under `auto` (the default) only when ranks outnumber cores.
/// Oversubscribed ranks that the kernel moves between cores, or stacks five
/// on one and three on the other, take turns unevenly; spread evenly, each
/// waits one switch per collective (8 ranks on 2 cores: barrier 4.7-5.0 us
/// pinned, 4.5-15 us not). With a core each, placement is left to the
/// kernel unless asked. Computed once per job: it reads sysfs per core.
fn pin_order(ranks: u32, given: Option<&str>) -> Option<Vec<usize>> {
    let bind = match given {
        Some(b) => b.to_string(),
        None => bind_choice().ok()?,
    };
    if bind == "none" {
        return None;
    }
    let mine = nix::sched::sched_getaffinity(Pid::from_raw(0)).ok()?;
    let cpus: Vec<(usize, Option<Place>)> = (0..nix::sched::CpuSet::count())
        .filter(|&c| mine.is_set(c).unwrap_or(false))
        .map(|c| (c, placement::place_of(c)))
        .collect();
    if cpus.is_empty() || (bind == "auto" && ranks as usize <= cpus.len()) {
        return None;
    }
    Some(placement::spread(&cpus))
}

/// `LANAI_BIND`, checked.
pub fn bind_choice() -> Result<String, String> {
    let bind = lanai_common::knobs::get(&lanai_common::knobs::BIND);
    match bind.as_str() {
        "auto" | "core" | "none" => Ok(bind),
        _ => Err(format!("LANAI_BIND={bind:?}: expected auto, core or none")),
    }
}

/// The set holding only `cpu`.
fn cpu_set(cpu: usize) -> Option<nix::sched::CpuSet> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).ok()?;
    Some(set)
}

fn spawn_one(
    opts: &Options,
    r: usize,
    core: Option<usize>,
    pgid: Option<Pid>,
    job_pid: i32,
    nonce: &str,
) -> Result<(Rank, Option<ChildStdin>), JobError> {
    // Both ends close-on-exec; the hook in `spawn` clears it on the child's end
    // in that child only.
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(setup("socketpair"))?;
    let (_, app) = opts.app_of(r);
    let mut cmd = Command::new(&app.program);
    cmd.args(&app.args);
    if let Some(dir) = &app.wdir {
        cmd.current_dir(dir);
    }
    for var in [
        "PMI_PORT",
        "PMI_ID",
        "PMI_SPAWNED",
        "PMI_KVSNAME",
        "PMI_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    if opts.env_none || app.env_none {
        cmd.env_clear();
    }
    // The job's variables, then this program's (MPMD), which win. A name
    // alone takes the launcher's value, which matters once cleared.
    for (k, v) in opts.env.iter().chain(&app.env) {
        match v {
            Some(v) => {
                cmd.env(k, v);
            }
            None => {
                if let Some(v) = std::env::var_os(k) {
                    cmd.env(k, v);
                }
            }
        }
    }
    cmd.env("PMI_FD", theirs.as_raw_fd().to_string())
        .env("PMI_RANK", r.to_string())
        .env("PMI_SIZE", opts.ranks.to_string())
        .env("LANAI_JOB_PID", job_pid.to_string())
        .env("LANAI_JOB_NONCE", nonce)
        .env("LANAI_NODES", opts.nodes.to_string())
        .stdin(if r == 0 {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(pgid.map_or(0, Pid::as_raw));
    let cpus = core.and_then(cpu_set);
    let mut child = spawn_rank(cmd, theirs.as_raw_fd(), cpus)
        .map_err(|error| classify_spawn_error(&app.program, r, error))?;
    drop(theirs);
    let pmi = UnixStream::from(ours);
    pmi.set_nonblocking(true).map_err(|e| JobError::Setup {
        what: "set_nonblocking",
        errno: e.raw_os_error().map_or(Errno::EIO, Errno::from_raw),
    })?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    if let Some(s) = &stdout {
        set_nonblocking(s)?;
    }
    if let Some(s) = &stderr {
        set_nonblocking(s)?;
    }
    let pid = Pid::from_raw(child.id() as i32);
    let rank = Rank {
        pid,
        pmi: Some(pmi),
        pmi_out: Vec::new(),
        stdout,
        stderr,
        out_fwd: Forwarder::new(r, opts.tag_output),
        err_fwd: Forwarder::new(r, opts.tag_output),
        status: None,
    };
    Ok((rank, child.stdin.take()))
}

fn classify_spawn_error(program: &OsString, rank: usize, error: io::Error) -> JobError {
    let not_executable = matches!(
        error.raw_os_error().map(Errno::from_raw),
        Some(
            Errno::ENOENT
                | Errno::EACCES
                | Errno::ENOEXEC
                | Errno::ENOTDIR
                | Errno::EISDIR
                | Errno::ELOOP
                | Errno::ENAMETOOLONG
                | Errno::EPERM
        )
    );
    if not_executable {
        JobError::CannotExecute {
            program: program.clone(),
            error,
        }
    } else {
        JobError::SpawnFailed { rank, error }
    }
}

/// Reaps adopted orphans (we are their subreaper) for at most `limit`.
fn reap_leftovers(limit: Duration) {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(5)),
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    Signal::try_from(sig).map_or("unknown signal", Signal::as_str)
}

impl Job {
    fn all_reaped(&self) -> bool {
        self.ranks.iter().all(|r| r.status.is_some())
    }

    fn event_loop(&mut self) {
        while !self.all_reaped() {
            let now = Instant::now();
            if let Some(d) = self.deadline {
                if self.ending.is_none() && now >= d {
                    eprintln!("lanairun: job timed out after {} s", self.timeout_text);
                    self.end(124);
                }
            }
            let mut wake = if self.ending.is_none() {
                self.deadline
            } else {
                None
            };
            if let Some(e) = &mut self.ending {
                match e.killed_at {
                    None if now >= e.kill_at => {
                        let _ = killpg(self.pgid, Signal::SIGKILL);
                        e.killed_at = Some(now);
                        wake = Some(now + REAP_LIMIT);
                    }
                    None => wake = Some(e.kill_at),
                    Some(t) if now >= t + REAP_LIMIT => {
                        eprintln!("lanairun: some ranks could not be reaped; giving up");
                        return;
                    }
                    Some(t) => wake = Some(t + REAP_LIMIT),
                }
            }
            let timeout = match wake {
                None => PollTimeout::NONE,
                // Round up so we do not wake a hair early and spin.
                Some(w) => {
                    let ms = w.saturating_duration_since(Instant::now()).as_millis() + 1;
                    PollTimeout::from(u16::try_from(ms).unwrap_or(u16::MAX))
                }
            };
            let ready = match self.poll_once(timeout) {
                Ok(r) => r,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    eprintln!("lanairun: poll failed: {}", e.desc());
                    self.end(1);
                    return;
                }
            };
            for (source, flags) in ready {
                self.handle(source, flags);
            }
        }
    }

    /// One poll over every open descriptor; returns the ready ones.
    fn poll_once(&self, timeout: PollTimeout) -> Result<Vec<(Source, PollFlags)>, Errno> {
        let stdin = io::stdin();
        let mut fds = Vec::with_capacity(3 + 3 * self.ranks.len());
        let mut sources = Vec::with_capacity(fds.capacity());
        let input = PollFlags::POLLIN;
        fds.push(PollFd::new(self.signals.as_fd(), input));
        sources.push(Source::Signals);
        if self.stdin_open && self.ending.is_none() && self.stdin_buf.len() < STDIN_BUFFER {
            fds.push(PollFd::new(stdin.as_fd(), input));
            sources.push(Source::Stdin);
        }
        if let Some(s) = &self.rank_stdin {
            if !self.stdin_buf.is_empty() {
                fds.push(PollFd::new(s.as_fd(), PollFlags::POLLOUT));
                sources.push(Source::RankStdin);
            }
        }
        for (i, r) in self.ranks.iter().enumerate() {
            if let Some(s) = &r.pmi {
                let flags = if r.pmi_out.is_empty() {
                    input
                } else {
                    input | PollFlags::POLLOUT
                };
                fds.push(PollFd::new(s.as_fd(), flags));
                sources.push(Source::Pmi(i));
            }
            if let Some(s) = &r.stdout {
                fds.push(PollFd::new(s.as_fd(), input));
                sources.push(Source::Stdout(i));
            }
            if let Some(s) = &r.stderr {
                fds.push(PollFd::new(s.as_fd(), input));
                sources.push(Source::Stderr(i));
            }
        }
        poll(&mut fds, timeout)?;
        Ok(fds
            .iter()
            .zip(sources)
            .filter_map(|(fd, src)| fd.revents().filter(|f| !f.is_empty()).map(|f| (src, f)))
            .collect())
    }

    fn handle(&mut self, source: Source, flags: PollFlags) {
        match source {
            Source::Signals => self.read_signals(),
            Source::Stdin => self.read_stdin(),
            Source::RankStdin => self.flush_stdin(),
            Source::Pmi(r) => {
                if flags.contains(PollFlags::POLLOUT) {
                    self.flush_pmi(r);
                }
                if flags.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
                    self.read_pmi(r);
                }
            }
            Source::Stdout(r) => self.read_output(r, false, false),
            Source::Stderr(r) => self.read_output(r, true, false),
        }
    }

    fn read_signals(&mut self) {
        while let Ok(Some(info)) = self.signals.read_signal() {
            let sig = info.ssi_signo as i32;
            if sig == Signal::SIGCHLD as i32 {
                self.reap();
            } else if self.ending.is_none() {
                eprintln!("lanairun: caught {}; ending the job", signal_name(sig));
                self.end(128 + sig as u8);
            } else if let Some(e) = &mut self.ending {
                // A second signal while ending: skip the grace period.
                e.kill_at = Instant::now();
            }
        }
    }

    fn reap(&mut self) {
        loop {
            let status = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => return,
                Ok(s) => s,
            };
            let Some(pid) = status.pid() else { continue };
            let Some(r) = self.ranks.iter().position(|x| x.pid == pid) else {
                continue;
            };
            if matches!(status, WaitStatus::Exited(..) | WaitStatus::Signaled(..)) {
                self.rank_exited(r, status);
            }
        }
    }

    /// A rank is gone: take in what it left in its pipes, then judge its exit.
    fn rank_exited(&mut self, r: usize, status: WaitStatus) {
        self.read_pmi(r);
        self.read_output(r, false, true);
        self.read_output(r, true, true);
        self.ranks[r].status = Some(status);
        if r == 0 {
            self.rank_stdin = None;
            self.stdin_open = false;
        }
        if self.ending.is_some() {
            return;
        }
        let pid = self.ranks[r].pid;
        match status {
            WaitStatus::Exited(_, 0) if self.pmi.initialized(r) && !self.pmi.finalized(r) => {
                eprintln!("lanairun: rank {r} (pid {pid}) exited without calling MPI_Finalize");
                self.end(1);
            }
            WaitStatus::Exited(_, 0) => {}
            WaitStatus::Exited(_, code) => {
                eprintln!("lanairun: rank {r} (pid {pid}) exited with code {code}");
                self.end(code as u8);
            }
            WaitStatus::Signaled(_, sig, core) => {
                let n = sig as i32;
                let dumped = if core { ", core dumped" } else { "" };
                eprintln!(
                    "lanairun: rank {r} (pid {pid}) was killed by signal {n} ({}{dumped})",
                    sig.as_str()
                );
                self.end(128u8.wrapping_add(n as u8));
            }
            _ => {}
        }
    }

    /// Starts ending the job: SIGTERM now, SIGKILL after the grace period.
    fn end(&mut self, code: u8) {
        if self.ending.is_some() {
            return;
        }
        self.ending = Some(Ending {
            code,
            kill_at: Instant::now() + GRACE,
            killed_at: None,
        });
        self.rank_stdin = None;
        self.stdin_open = false;
        let _ = killpg(self.pgid, Signal::SIGTERM);
    }

    fn read_stdin(&mut self) {
        let mut buf = [0u8; 16 * 1024];
        // One read: poll said it will not block, and fd 0 is not ours to make non-blocking.
        match nix::unistd::read(io::stdin().as_raw_fd(), &mut buf) {
            Ok(0) | Err(_) => {
                self.stdin_open = false;
                if self.stdin_buf.is_empty() {
                    self.rank_stdin = None;
                }
            }
            Ok(n) => {
                self.stdin_buf.extend_from_slice(&buf[..n]);
                self.flush_stdin();
            }
        }
    }

    fn flush_stdin(&mut self) {
        let Some(s) = &mut self.rank_stdin else {
            self.stdin_buf.clear();
            return;
        };
        while !self.stdin_buf.is_empty() {
            match s.write(&self.stdin_buf) {
                Ok(n) => {
                    self.stdin_buf.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // Rank 0 closed its stdin; nothing more to forward.
                    self.rank_stdin = None;
                    self.stdin_open = false;
                    self.stdin_buf.clear();
                    return;
                }
            }
        }
        if !self.stdin_open {
            self.rank_stdin = None;
        }
    }

    fn read_pmi(&mut self, r: usize) {
        let mut buf = [0u8; 8192];
        loop {
            let Some(s) = &mut self.ranks[r].pmi else {
                return;
            };
            match s.read(&mut buf) {
                Ok(0) => {
                    self.ranks[r].pmi = None;
                    return;
                }
                Ok(n) => {
                    let events = self.pmi.feed(r, &buf[..n]);
                    self.apply(events);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.ranks[r].pmi = None;
                    return;
                }
            }
        }
    }

    fn apply(&mut self, events: Vec<Event>) {
        for ev in events {
            match ev {
                Event::Reply { rank, text } => {
                    if let Some(x) = self.ranks.get_mut(rank) {
                        x.pmi_out.extend_from_slice(text.as_bytes());
                        self.flush_pmi(rank);
                    }
                }
                Event::Log(line) => eprintln!("lanairun: {line}"),
                Event::Abort {
                    rank,
                    code,
                    message,
                } => {
                    // An abort is often an echo of another rank's death (a
                    // lost connection): report the death first if it happened.
                    self.reap();
                    if self.ending.is_none() {
                        let msg = message.map(|m| format!(": {m}")).unwrap_or_default();
                        eprintln!("lanairun: rank {rank} called MPI_Abort (exit code {code}){msg}");
                        // The OS keeps the low 8 bits of an exit status.
                        self.end(code as u8);
                    }
                }
            }
        }
    }

    fn flush_pmi(&mut self, r: usize) {
        let rank = &mut self.ranks[r];
        let Some(s) = &mut rank.pmi else {
            rank.pmi_out.clear();
            return;
        };
        while !rank.pmi_out.is_empty() {
            match s.write(&rank.pmi_out) {
                Ok(n) => {
                    rank.pmi_out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    rank.pmi = None;
                    rank.pmi_out.clear();
                    return;
                }
            }
        }
    }

    /// Forwards what is readable now. `drain` reads until the pipe is empty
    /// (the rank has exited); otherwise a bounded amount, to stay fair.
    fn read_output(&mut self, r: usize, is_stderr: bool, drain: bool) {
        let mut buf = [0u8; 16 * 1024];
        let rank = &mut self.ranks[r];
        let (pipe, fwd): (&mut dyn Read, &mut Forwarder) = if is_stderr {
            match &mut rank.stderr {
                Some(p) => (p, &mut rank.err_fwd),
                None => return,
            }
        } else {
            match &mut rank.stdout {
                Some(p) => (p, &mut rank.out_fwd),
                None => return,
            }
        };
        let mut rounds = 0;
        let closed = loop {
            match pipe.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => {
                    if is_stderr {
                        fwd.push(&buf[..n], &mut io::stderr().lock());
                    } else {
                        fwd.push(&buf[..n], &mut io::stdout().lock());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break true,
            }
            rounds += 1;
            // Bounded even when draining, in case a leftover child keeps writing.
            if rounds >= if drain { 1024 } else { 4 } {
                break false;
            }
        };
        if closed {
            if is_stderr {
                fwd.finish(&mut io::stderr().lock());
                rank.stderr = None;
            } else {
                fwd.finish(&mut io::stdout().lock());
                rank.stdout = None;
            }
        }
    }

    /// After the loop: last output, leftovers of the job killed, exit status.
    fn finish(&mut self) -> u8 {
        for r in 0..self.ranks.len() {
            self.read_output(r, false, true);
            self.read_output(r, true, true);
            let rank = &mut self.ranks[r];
            rank.out_fwd.finish(&mut io::stdout().lock());
            rank.err_fwd.finish(&mut io::stderr().lock());
        }
        // Anything a rank left running in the job's group goes with it.
        if killpg(self.pgid, Signal::SIGKILL).is_ok() {
            reap_leftovers(Duration::from_millis(500));
        }
        self.ending.as_ref().map_or(0, |e| e.code)
    }
}
