//! The launcher's PMI-1 server, without IO: bytes from a rank go in, replies
//! and job events come out. The event loop in `job` moves the bytes.

use std::collections::HashMap;

use lanai_wire::pmi::{parse_line, Request, Response, MAX_LINE};

/// Limits announced by `get_maxes` (Hydra's values).
pub const KVSNAME_MAX: usize = 256;
pub const KEYLEN_MAX: usize = 64;
pub const VALLEN_MAX: usize = 1024;

/// Something the event loop must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Send `text` to `rank`'s PMI connection.
    Reply { rank: usize, text: String },
    /// The rank asked to end the job.
    Abort {
        rank: usize,
        code: i32,
        message: Option<String>,
    },
    /// A line to print on the launcher's stderr (without the `lanairun: ` prefix).
    Log(String),
}

#[derive(Debug, Default)]
struct RankState {
    inbuf: Vec<u8>,
    /// An oversized line is being skipped up to its newline.
    skipping: bool,
    initialized: bool,
    finalized: bool,
    in_barrier: bool,
    /// The rank's program in an MPMD job (`MPI_APPNUM`).
    appnum: i32,
}

/// PMI state shared by the whole job: one key-value space, one barrier.
#[derive(Debug)]
pub struct PmiServer {
    kvsname: String,
    kvs: HashMap<String, String>,
    ranks: Vec<RankState>,
    waiting: usize,
}

impl PmiServer {
    /// A server for one rank per entry of `appnums` (each rank's program
    /// number), whose KVS starts with `initial`.
    pub fn new(
        kvsname: String,
        appnums: Vec<i32>,
        initial: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        Self {
            kvsname,
            kvs: initial.into_iter().collect(),
            ranks: appnums
                .into_iter()
                .map(|appnum| RankState {
                    appnum,
                    ..RankState::default()
                })
                .collect(),
            waiting: 0,
        }
    }

    /// Whether `rank` has sent `cmd=init`.
    pub fn initialized(&self, rank: usize) -> bool {
        self.ranks.get(rank).is_some_and(|r| r.initialized)
    }

    /// Whether `rank` has sent `cmd=finalize`.
    pub fn finalized(&self, rank: usize) -> bool {
        self.ranks.get(rank).is_some_and(|r| r.finalized)
    }

    /// Feeds bytes read from `rank`'s connection; returns what to do.
    pub fn feed(&mut self, rank: usize, bytes: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        let Some(state) = self.ranks.get_mut(rank) else {
            return events;
        };
        state.inbuf.extend_from_slice(bytes);
        let mut lines = Vec::new();
        loop {
            let state = &mut self.ranks[rank];
            match state.inbuf.iter().position(|&b| b == b'\n') {
                Some(pos) => {
                    let rest = state.inbuf.split_off(pos + 1);
                    let line = std::mem::replace(&mut state.inbuf, rest);
                    if std::mem::take(&mut state.skipping) {
                        continue;
                    }
                    lines.push(line);
                }
                None => {
                    if state.inbuf.len() > MAX_LINE {
                        if !state.skipping {
                            events.push(malformed(
                                rank,
                                &format!("line longer than {MAX_LINE} bytes"),
                            ));
                            events.push(error_reply(rank, "line too long"));
                        }
                        state.skipping = true;
                        state.inbuf.clear();
                    }
                    break;
                }
            }
        }
        for line in lines {
            self.handle_line(rank, &line, &mut events);
        }
        events
    }

    fn handle_line(&mut self, rank: usize, bytes: &[u8], events: &mut Vec<Event>) {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let req = match parse_line(bytes).and_then(|l| Request::from_line(&l)) {
            Ok(r) => r,
            Err(e) => {
                events.push(malformed(rank, &format!("{} ({e})", printable(bytes))));
                events.push(error_reply(rank, &e.to_string()));
                return;
            }
        };
        let reply = |r: Response| Event::Reply {
            rank,
            text: r.format(),
        };
        match req {
            Request::Init { version, .. } => {
                self.ranks[rank].initialized = true;
                events.push(reply(Response::Init {
                    rc: if version == 1 { 0 } else { -1 },
                }));
            }
            Request::GetMaxes => events.push(reply(Response::Maxes {
                kvsname_max: KVSNAME_MAX,
                keylen_max: KEYLEN_MAX,
                vallen_max: VALLEN_MAX,
            })),
            Request::GetAppnum => events.push(reply(Response::Appnum(self.ranks[rank].appnum))),
            Request::GetMyKvsname => events.push(reply(Response::MyKvsname(self.kvsname.clone()))),
            Request::GetUniverseSize => {
                events.push(reply(Response::UniverseSize(self.ranks.len() as i32)))
            }
            Request::Put {
                kvsname,
                key,
                value,
            } => {
                let result = if kvsname != self.kvsname {
                    Err("unknown kvsname")
                } else if key.is_empty() || key.len() > KEYLEN_MAX {
                    Err("key length out of range")
                } else if value.len() > VALLEN_MAX {
                    Err("value too long")
                } else {
                    self.kvs.insert(key, value);
                    Ok(())
                };
                let (rc, msg) = match result {
                    Ok(()) => (0, "success"),
                    Err(m) => (-1, m),
                };
                events.push(reply(Response::PutResult {
                    rc,
                    msg: msg.to_string(),
                }));
            }
            Request::Get { kvsname, key } => {
                let found = (kvsname == self.kvsname)
                    .then(|| self.kvs.get(&key))
                    .flatten();
                events.push(reply(match found {
                    Some(v) => Response::GetFound(v.clone()),
                    None => Response::GetNotFound { key },
                }));
            }
            Request::BarrierIn => {
                if self.ranks[rank].in_barrier {
                    events.push(Event::Log(format!("rank {rank}: barrier_in sent twice")));
                    events.push(error_reply(rank, "already in the barrier"));
                    return;
                }
                self.ranks[rank].in_barrier = true;
                self.waiting += 1;
                if self.waiting == self.ranks.len() {
                    self.waiting = 0;
                    for (r, state) in self.ranks.iter_mut().enumerate() {
                        state.in_barrier = false;
                        events.push(Event::Reply {
                            rank: r,
                            text: Response::BarrierOut.format(),
                        });
                    }
                }
            }
            Request::Finalize => {
                self.ranks[rank].finalized = true;
                events.push(reply(Response::FinalizeAck));
            }
            Request::Abort { exit_code, message } => {
                events.push(Event::Abort {
                    rank,
                    code: exit_code,
                    message,
                });
            }
            Request::Unknown { cmd } => {
                events.push(Event::Log(format!(
                    "rank {rank}: unsupported PMI command: {}",
                    printable(cmd.as_bytes())
                )));
                events.push(error_reply(rank, &format!("unsupported command {cmd}")));
            }
        }
    }
}

fn malformed(rank: usize, detail: &str) -> Event {
    Event::Log(format!("rank {rank}: malformed PMI command: {detail}"))
}

fn error_reply(rank: usize, msg: &str) -> Event {
    Event::Reply {
        rank,
        text: Response::Error {
            msg: msg.to_string(),
        }
        .format(),
    }
}

/// A short, printable rendering of peer bytes for a log line.
fn printable(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut s: String = text
        .trim_end()
        .chars()
        .take(120)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().count() > 120 {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(n: usize) -> PmiServer {
        PmiServer::new(
            "kvs_test".into(),
            vec![0; n],
            [(
                "PMI_process_mapping".to_string(),
                "(vector,(0,1,2))".to_string(),
            )],
        )
    }

    fn replies(events: &[Event]) -> Vec<(usize, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Reply { rank, text } => Some((*rank, text.clone())),
                _ => None,
            })
            .collect()
    }

    fn one(s: &mut PmiServer, rank: usize, line: &str) -> String {
        let r = replies(&s.feed(rank, line.as_bytes()));
        assert_eq!(r.len(), 1, "{line}: {r:?}");
        assert_eq!(r[0].0, rank);
        r[0].1.clone()
    }

    #[test]
    fn each_rank_gets_its_program_number() {
        let mut s = PmiServer::new("kvs_test".into(), vec![0, 1, 1, 2], []);
        for (rank, want) in [(0, 0), (1, 1), (2, 1), (3, 2)] {
            assert_eq!(
                one(&mut s, rank, "cmd=get_appnum\n"),
                format!("cmd=appnum appnum={want}\n")
            );
        }
    }

    #[test]
    fn session() {
        let mut s = server(2);
        assert!(!s.initialized(0));
        assert_eq!(
            one(&mut s, 0, "cmd=init pmi_version=1 pmi_subversion=1\n"),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
        );
        assert!(s.initialized(0));
        assert_eq!(
            one(&mut s, 0, "cmd=get_maxes\n"),
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n"
        );
        assert_eq!(one(&mut s, 0, "cmd=get_appnum\n"), "cmd=appnum appnum=0\n");
        assert_eq!(
            one(&mut s, 0, "cmd=get_universe_size\n"),
            "cmd=universe_size size=2\n"
        );
        assert_eq!(
            one(&mut s, 0, "cmd=get_my_kvsname\n"),
            "cmd=my_kvsname kvsname=kvs_test\n"
        );
        assert_eq!(
            one(&mut s, 0, "cmd=put kvsname=kvs_test key=a value=1\n"),
            "cmd=put_result rc=0 msg=success\n"
        );
        assert_eq!(
            one(&mut s, 1, "cmd=get kvsname=kvs_test key=a\n"),
            "cmd=get_result rc=0 msg=success value=1\n"
        );
        assert_eq!(
            one(
                &mut s,
                1,
                "cmd=get kvsname=kvs_test key=PMI_process_mapping\n"
            ),
            "cmd=get_result rc=0 msg=success value=(vector,(0,1,2))\n"
        );
        assert_eq!(
            one(&mut s, 1, "cmd=get kvsname=kvs_test key=b\n"),
            "cmd=get_result rc=-1 msg=key_b_not_found value=unknown\n"
        );
        assert_eq!(
            one(&mut s, 1, "cmd=get kvsname=other key=a\n"),
            "cmd=get_result rc=-1 msg=key_a_not_found value=unknown\n"
        );
        assert!(s.feed(0, b"cmd=barrier_in\n").is_empty());
        let out = replies(&s.feed(1, b"cmd=barrier_in\n"));
        assert_eq!(
            out,
            vec![
                (0, "cmd=barrier_out\n".to_string()),
                (1, "cmd=barrier_out\n".to_string())
            ]
        );
        // The barrier can be used again.
        assert!(s.feed(1, b"cmd=barrier_in\n").is_empty());
        assert_eq!(replies(&s.feed(0, b"cmd=barrier_in\n")).len(), 2);
        assert!(!s.finalized(0));
        assert_eq!(one(&mut s, 0, "cmd=finalize\n"), "cmd=finalize_ack\n");
        assert!(s.finalized(0) && !s.finalized(1));
    }

    #[test]
    fn split_and_joined_lines() {
        let mut s = server(1);
        assert!(s.feed(0, b"cmd=get_app").is_empty());
        let r = replies(&s.feed(0, b"num\ncmd=get_universe_size\ncmd=get_maxes"));
        assert_eq!(
            r.iter().map(|x| x.1.as_str()).collect::<Vec<_>>(),
            ["cmd=appnum appnum=0\n", "cmd=universe_size size=1\n"]
        );
        assert_eq!(replies(&s.feed(0, b"\n")).len(), 1);
    }

    #[test]
    fn abort_is_an_event() {
        let mut s = server(3);
        let ev = s.feed(2, b"cmd=abort exitcode=7 message=it broke\n");
        assert_eq!(
            ev,
            vec![Event::Abort {
                rank: 2,
                code: 7,
                message: Some("it broke".into())
            }]
        );
    }

    #[test]
    fn malformed_lines_get_a_log_and_an_error() {
        let mut s = server(1);
        for bad in [
            "garbage\n",
            "cmd=put key=a\n",
            "cmd=init pmi_version=x pmi_subversion=1\n",
            "cmd=spawn\n",
            "cmd=x =y\n",
        ] {
            let ev = s.feed(0, bad.as_bytes());
            assert_eq!(ev.len(), 2, "{bad}: {ev:?}");
            assert!(
                matches!(&ev[0], Event::Log(m) if m.starts_with("rank 0: ")),
                "{ev:?}"
            );
            assert!(
                matches!(&ev[1], Event::Reply { rank: 0, text } if text.starts_with("cmd=error rc=-1 msg=")),
                "{ev:?}"
            );
        }
        // Still serving afterwards.
        assert_eq!(one(&mut s, 0, "cmd=get_appnum\n"), "cmd=appnum appnum=0\n");
    }

    #[test]
    fn oversized_line_is_skipped_once() {
        let mut s = server(1);
        let big = vec![b'x'; MAX_LINE + 1];
        let ev = s.feed(0, &big);
        assert!(matches!(&ev[0], Event::Log(m) if m.contains("malformed PMI command")));
        assert_eq!(replies(&ev).len(), 1);
        // The rest of the long line is dropped silently, then service resumes.
        assert!(s.feed(0, &big).is_empty());
        assert!(s.feed(0, b"tail\n").is_empty());
        assert_eq!(one(&mut s, 0, "cmd=get_appnum\n"), "cmd=appnum appnum=0\n");
    }

    #[test]
    fn put_limits() {
        let mut s = server(1);
        let long_key = format!(
            "cmd=put kvsname=kvs_test key={} value=1\n",
            "k".repeat(KEYLEN_MAX + 1)
        );
        assert!(one(&mut s, 0, &long_key).starts_with("cmd=put_result rc=-1"));
        let long_val = format!(
            "cmd=put kvsname=kvs_test key=k value={}\n",
            "v".repeat(VALLEN_MAX + 1)
        );
        assert!(one(&mut s, 0, &long_val).starts_with("cmd=put_result rc=-1"));
        assert!(one(&mut s, 0, "cmd=put kvsname=nope key=k value=1\n")
            .starts_with("cmd=put_result rc=-1"));
    }

    #[test]
    fn double_barrier_in_is_refused() {
        let mut s = server(2);
        assert!(s.feed(0, b"cmd=barrier_in\n").is_empty());
        let r = replies(&s.feed(0, b"cmd=barrier_in\n"));
        assert_eq!(r.len(), 1);
        assert!(r[0].1.starts_with("cmd=error"));
        assert_eq!(replies(&s.feed(1, b"cmd=barrier_in\n")).len(), 2);
    }

    #[test]
    fn bytes_for_unknown_rank_are_ignored() {
        let mut s = server(1);
        assert!(s.feed(5, b"cmd=get_appnum\n").is_empty());
    }
}
