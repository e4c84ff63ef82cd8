//! Start-up: who we are, where every rank lives, and the job's identity,
//! learned from a PMI-1 server (lanairun or Hydra) or as a singleton.

use super::error::{MpiError, MpiResult};
use lanai_wire::pmi::PmiClient;
use std::fs::File;

/// Facts about the job, fixed at `MPI_Init`.
#[derive(Debug, Clone)]
pub struct JobInfo {
    pub rank: u32,
    pub size: u32,
    /// Node index of every world rank.
    pub node_of: Vec<u32>,
    /// Identity used in shared-memory and socket names.
    pub job_pid: u32,
    pub nonce: String,
    pub uid: u32,
    pub appnum: i32,
    /// All nodes are on this host (lanairun's emulated nodes).
    pub single_host: bool,
}

impl JobInfo {
    pub fn my_node(&self) -> u32 {
        self.node_of[self.rank as usize]
    }

    /// World ranks on this rank's node, in order.
    pub fn local_ranks(&self) -> Vec<u32> {
        let n = self.my_node();
        (0..self.size)
            .filter(|&r| self.node_of[r as usize] == n)
            .collect()
    }

    pub fn node_count(&self) -> usize {
        self.node_of
            .iter()
            .copied()
            .max()
            .map_or(1, |m| m as usize + 1)
    }

    /// Prefix for per-job names (shared memory, doorbells).
    pub fn name_prefix(&self) -> String {
        format!("lanai-{}-{}-{}-", self.uid, self.job_pid, self.nonce)
    }
}

pub type Pmi = PmiClient<File>;

fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok()?.trim().parse().ok()
}

fn pmi_err(e: impl std::fmt::Display) -> MpiError {
    MpiError::other(format!("PMI bootstrap failed: {e}"))
}

/// Parses MPICH's `PMI_process_mapping`, e.g. `(vector,(0,2,4),(2,1,3))`:
/// blocks of (first node, node count, ranks per node), repeated cyclically.
pub fn parse_mapping(s: &str, size: u32) -> Option<Vec<u32>> {
    let body = s.trim().strip_prefix("(vector,")?.strip_suffix(')')?;
    let mut blocks = Vec::new();
    for part in body.split("),") {
        let t = part.trim().trim_start_matches('(').trim_end_matches(')');
        let v: Vec<u32> = t
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?;
        if v.len() != 3 || v[1] == 0 || v[2] == 0 {
            return None;
        }
        blocks.push((v[0], v[1], v[2]));
    }
    let mut out = Vec::with_capacity(size as usize);
    'fill: loop {
        for &(first, count, ppn) in &blocks {
            for node in first..first + count {
                for _ in 0..ppn {
                    if out.len() == size as usize {
                        break 'fill;
                    }
                    out.push(node);
                }
            }
        }
        if blocks.is_empty() {
            return None;
        }
    }
    Some(out)
}

fn hash_hex(s: &str) -> String {
    // FNV-1a: only needs to tell jobs apart in a name, not resist anyone.
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

fn random_hex(bytes: usize) -> MpiResult<String> {
    let mut b = vec![0u8; bytes];
    getrandom::getrandom(&mut b).map_err(|e| MpiError::other(format!("no randomness: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Identity of a job started without a launcher.
pub fn singleton() -> MpiResult<JobInfo> {
    Ok(JobInfo {
        rank: 0,
        size: 1,
        node_of: vec![0],
        job_pid: std::process::id(),
        nonce: random_hex(4)?,
        uid: nix::unistd::getuid().as_raw(),
        appnum: 0,
        single_host: true,
    })
}

/// Talks to the PMI server over `stream` (from `PMI_FD`) and learns the job.
pub fn from_pmi(stream: File) -> MpiResult<(Pmi, JobInfo)> {
    let mut pmi = PmiClient::new(stream);
    pmi.init().map_err(pmi_err)?;
    let rank = env_u32("PMI_RANK").ok_or_else(|| pmi_err("PMI_RANK is not set"))?;
    let size = env_u32("PMI_SIZE").ok_or_else(|| pmi_err("PMI_SIZE is not set"))?;
    if rank >= size {
        return Err(pmi_err(format!(
            "PMI_RANK {rank} is not below PMI_SIZE {size}"
        )));
    }
    let kvs = pmi.get_my_kvsname().map_err(pmi_err)?;
    let appnum = pmi.get_appnum().unwrap_or(0);
    let node_of = match pmi.get("PMI_process_mapping").map_err(pmi_err)? {
        Some(m) => parse_mapping(&m, size)
            .ok_or_else(|| pmi_err(format!("cannot parse PMI_process_mapping {m:?}")))?,
        // Without a mapping, nothing is known to share memory.
        None => (0..size).collect(),
    };
    let (job_pid, nonce) = match (env_u32("LANAI_JOB_PID"), std::env::var("LANAI_JOB_NONCE")) {
        (Some(p), Ok(n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric()) => (p, n),
        _ => {
            // Hydra names the KVS kvs_<pid>_...; that pid owns the job.
            let pid = kvs
                .split('_')
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| nix::unistd::getppid().as_raw() as u32);
            (pid, hash_hex(&kvs))
        }
    };
    let single_host = std::env::var_os("LANAI_NODES").is_some();
    Ok((
        pmi,
        JobInfo {
            rank,
            size,
            node_of,
            job_pid,
            nonce,
            uid: nix::unistd::getuid().as_raw(),
            appnum,
            single_host,
        },
    ))
}

/// The job's secret: rank 0 publishes one if the launcher did not.
pub fn secret_before_barrier(pmi: &mut Pmi, rank: u32) -> MpiResult<()> {
    if rank == 0 && pmi.get("lanai-secret").map_err(pmi_err)?.is_none() {
        pmi.put("lanai-secret", &random_hex(32)?).map_err(pmi_err)?;
    }
    Ok(())
}

pub fn secret_after_barrier(pmi: &mut Pmi) -> MpiResult<Vec<u8>> {
    pmi.get("lanai-secret")
        .map_err(pmi_err)?
        .map(String::into_bytes)
        .ok_or_else(|| pmi_err("the job secret is missing"))
}

pub fn card_key(rank: u32) -> String {
    format!("lanai-tcp-{rank}")
}

pub fn pmi_get(pmi: &mut Pmi, key: &str) -> MpiResult<Option<String>> {
    pmi.get(key).map_err(pmi_err)
}

pub fn pmi_put(pmi: &mut Pmi, key: &str, value: &str) -> MpiResult<()> {
    pmi.put(key, value).map_err(pmi_err)
}

pub fn pmi_barrier(pmi: &mut Pmi) -> MpiResult<()> {
    pmi.barrier().map_err(pmi_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings() {
        assert_eq!(parse_mapping("(vector,(0,2,2))", 4), Some(vec![0, 0, 1, 1]));
        assert_eq!(
            parse_mapping("(vector,(0,1,3),(1,1,2))", 5),
            Some(vec![0, 0, 0, 1, 1])
        );
        assert_eq!(parse_mapping("(vector,(0,1,1))", 3), Some(vec![0, 0, 0]));
        assert_eq!(parse_mapping("(vector,(0,3,1))", 3), Some(vec![0, 1, 2]));
        assert_eq!(parse_mapping("garbage", 3), None);
        assert_eq!(parse_mapping("(vector,(0,0,1))", 3), None);
    }
}
