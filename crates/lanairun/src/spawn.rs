//! Starting one rank process. This is the launcher's only unsafe code: the
//! `pre_exec` hook that runs in the child between fork and exec.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::Signal;
use nix::unistd::{getpid, getppid, Pid};

/// Spawns `cmd` so that the child dies with the launcher (`PR_SET_PDEATHSIG`)
/// and inherits `pmi_fd` (which is close-on-exec in the launcher, so no other
/// rank inherits it), pinned to `cpus` when given, before its first
/// instruction. Process group and stdio are set on `cmd` by the caller.
pub fn spawn_rank(mut cmd: Command, pmi_fd: RawFd, cpus: Option<CpuSet>) -> io::Result<Child> {
    let launcher = getpid();
    let hook = move || -> io::Result<()> {
        if let Some(set) = &cpus {
            // Best effort: placement is a performance matter, never an error.
            let _ = sched_setaffinity(Pid::from_raw(0), set);
        }
        set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
        // The launcher may have died before the line above took effect.
        if getppid() != launcher {
            return Err(io::Error::from(Errno::ESRCH));
        }
        fcntl(pmi_fd, FcntlArg::F_SETFD(FdFlag::empty())).map_err(io::Error::from)?;
        Ok(())
    };
    // SAFETY: the hook runs in the forked child before exec and only makes
    // async-signal-safe system calls (sched_setaffinity, prctl, getppid,
    // fcntl) on data built before the fork; it neither
    // allocates nor takes locks (io::Error from an errno does not allocate).
    unsafe {
        cmd.pre_exec(hook);
    }
    cmd.spawn()
}
