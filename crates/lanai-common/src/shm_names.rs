//! Names of per-job shared-memory segments, and the sweep of stale ones.
//!
//! A segment is named `lanai-<uid>-<pid>-<nonce>-n<node>`, where `pid` is the
//! launcher's (or, under a foreign launcher, an ancestor's) process id. A
//! segment whose pid no longer exists belongs to a dead job and is swept.

use std::path::Path;

/// Directory where POSIX shared memory objects appear on Linux.
pub const SHM_DIR: &str = "/dev/shm";

/// The `shm_open` name (with leading slash) of node `node`'s segment.
pub fn segment_name(uid: u32, job_pid: u32, nonce: &str, node: u32) -> String {
    format!("/lanai-{uid}-{job_pid}-{nonce}-n{node}")
}

/// The prefix shared by every segment of one job (for sweeping after it).
pub fn job_prefix(uid: u32, job_pid: u32) -> String {
    format!("lanai-{uid}-{job_pid}-")
}

/// Parses `lanai-<uid>-<pid>-...` into `(uid, pid)`.
pub fn parse(file_name: &str) -> Option<(u32, u32)> {
    let rest = file_name.strip_prefix("lanai-")?;
    let mut it = rest.splitn(3, '-');
    let uid = it.next()?.parse().ok()?;
    let pid = it.next()?.parse().ok()?;
    it.next()?;
    Some((uid, pid))
}

/// Removes this user's segments whose owning process is gone, or (with
/// `job_pid`) every segment of that job. Returns the names removed.
pub fn sweep(uid: u32, job_pid: Option<u32>) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir(SHM_DIR) else {
        return removed;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((u, pid)) = parse(name) else {
            continue;
        };
        if u != uid {
            continue;
        }
        let dead = match job_pid {
            Some(j) => pid == j,
            None => !Path::new(&format!("/proc/{pid}")).exists(),
        };
        if dead && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(name.to_string());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let n = segment_name(1000, 4242, "ab12", 3);
        assert_eq!(n, "/lanai-1000-4242-ab12-n3");
        assert_eq!(parse(&n[1..]), Some((1000, 4242)));
        assert!(n[1..].starts_with(&job_prefix(1000, 4242)));
    }

    #[test]
    fn rejects_foreign_names() {
        assert_eq!(parse("sem.foo"), None);
        assert_eq!(parse("lanai-x-1-a"), None);
        assert_eq!(parse("lanai-1-2"), None);
    }
}
