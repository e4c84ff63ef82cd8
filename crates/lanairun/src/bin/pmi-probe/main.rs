//! `pmi-probe`: a small PMI-1 client used by lanairun's tests and to check
//! interoperability with Hydra. It speaks through `PMI_FD` using
//! `lanai_wire::pmi::PmiClient` and prints what it learned.
//!
//! Modes (first argument):
//! - `exchange` (default): init, maxes, kvsname, put, barrier, get the next
//!   rank's key, get `PMI_process_mapping`, get a missing key, finalize.
//! - `abort CODE`: init, then abort with CODE.
//! - `nofinalize`: init, then exit 0 without finalize.
//! - `secret`: print the `lanai-secret` key and the environment's job ids.
//! - `raw LINE`: send LINE (plus newline) verbatim and print the reply.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod pmi_fd;

use std::io::{BufRead, BufReader, Write};
use std::process::ExitCode;

use lanai_wire::pmi::{PmiClient, PmiError};

fn env_num(name: &str) -> Result<i64, String> {
    let v = std::env::var(name).map_err(|_| format!("{name} is not set"))?;
    v.parse()
        .map_err(|_| format!("{name}={v:?} is not a number"))
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("pmi-probe: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<u8, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rank = env_num("PMI_RANK")?;
    let size = env_num("PMI_SIZE")?;
    let stream = pmi_fd::stream_from_env()?;
    let mode = args.first().map_or("exchange", String::as_str);
    if mode == "raw" {
        let line = args.get(1).ok_or("raw needs a line")?;
        let mut s = stream;
        s.write_all(line.as_bytes())
            .and_then(|()| s.write_all(b"\n"))
            .map_err(|e| e.to_string())?;
        let mut reply = String::new();
        BufReader::new(s)
            .read_line(&mut reply)
            .map_err(|e| e.to_string())?;
        print!("reply: {reply}");
        return Ok(0);
    }
    let mut pmi = PmiClient::new(stream);
    let e = |e: PmiError| e.to_string();
    pmi.init().map_err(e)?;
    match mode {
        "exchange" => {
            let maxes = pmi.get_maxes().map_err(e)?;
            let kvs = pmi.get_my_kvsname().map_err(e)?;
            let appnum = pmi.get_appnum().map_err(e)?;
            let universe = pmi.get_universe_size().map_err(e)?;
            pmi.put(
                &format!("probe-{rank}"),
                &format!("value-of-{rank}-{}", rank * 7 + 1),
            )
            .map_err(e)?;
            pmi.barrier().map_err(e)?;
            let peer = (rank + 1) % size;
            let got = pmi.get(&format!("probe-{peer}")).map_err(e)?;
            let expected = format!("value-of-{peer}-{}", peer * 7 + 1);
            if got.as_deref() != Some(expected.as_str()) {
                return Err(format!(
                    "rank {rank}: key of rank {peer} is {got:?}, expected {expected:?}"
                ));
            }
            let mapping = pmi.get("PMI_process_mapping").map_err(e)?;
            let missing = pmi.get("no-such-key").map_err(e)?;
            if missing.is_some() {
                return Err(format!("rank {rank}: a missing key returned {missing:?}"));
            }
            pmi.barrier().map_err(e)?;
            pmi.finalize().map_err(e)?;
            println!(
                "rank {rank}/{size}: ok kvsname={kvs} appnum={appnum} universe={universe} vallen_max={} mapping={}",
                maxes.vallen_max,
                mapping.unwrap_or_default()
            );
        }
        "abort" => {
            let code: i32 = args
                .get(1)
                .and_then(|c| c.parse().ok())
                .ok_or("abort needs a code")?;
            if rank == 0 {
                pmi.abort(code, "probe asked to abort").map_err(e)?;
            }
            // Wait to be killed by the launcher.
            std::thread::sleep(std::time::Duration::from_secs(30));
            return Ok(0);
        }
        "nofinalize" => return Ok(0),
        "secret" => {
            let secret = pmi.get("lanai-secret").map_err(e)?.unwrap_or_default();
            let kvs = pmi.get_my_kvsname().map_err(e)?;
            let pid = std::env::var("LANAI_JOB_PID").unwrap_or_default();
            let nonce = std::env::var("LANAI_JOB_NONCE").unwrap_or_default();
            let nodes = std::env::var("LANAI_NODES").unwrap_or_default();
            pmi.finalize().map_err(e)?;
            println!(
                "rank {rank}: secret={secret} kvsname={kvs} pid={pid} nonce={nonce} nodes={nodes}"
            );
        }
        other => return Err(format!("unknown mode {other:?}")),
    }
    Ok(0)
}
