//! A blocking PMI-1 client for one rank, over any byte stream (in practice
//! the Unix socket named by `PMI_FD`).

use std::io::{Read, Write};

use super::line::{parse_line, Line, MAX_LINE};
use super::message::Request;
use super::PmiError;

/// The server's size limits, from `get_maxes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maxes {
    pub kvsname_max: usize,
    pub keylen_max: usize,
    pub vallen_max: usize,
}

impl Default for Maxes {
    /// Hydra's limits, assumed until the server states its own.
    fn default() -> Self {
        Self {
            kvsname_max: 256,
            keylen_max: 64,
            vallen_max: 1024,
        }
    }
}

/// One rank's connection to the PMI server. Calls block until the reply.
pub struct PmiClient<S: Read + Write> {
    stream: S,
    /// Bytes read past the end of the last reply.
    pending: Vec<u8>,
    maxes: Maxes,
    kvsname: Option<String>,
}

impl<S: Read + Write> std::fmt::Debug for PmiClient<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmiClient")
            .field("maxes", &self.maxes)
            .field("kvsname", &self.kvsname)
            .finish()
    }
}

impl<S: Read + Write> PmiClient<S> {
    /// Wraps a connected stream; nothing is sent yet.
    pub fn new(stream: S) -> Self {
        Self {
            stream,
            pending: Vec::new(),
            maxes: Maxes::default(),
            kvsname: None,
        }
    }

    /// The underlying stream.
    pub fn into_inner(self) -> S {
        self.stream
    }

    /// `cmd=init pmi_version=1 pmi_subversion=1`; fails unless `rc=0`.
    pub fn init(&mut self) -> Result<(), PmiError> {
        let reply = self.call(
            &Request::Init {
                version: 1,
                subversion: 1,
            },
            "response_to_init",
            "init",
        )?;
        check_rc(&reply, "init")
    }

    /// The server's limits; later `put`/`get` calls are checked against them.
    pub fn get_maxes(&mut self) -> Result<Maxes, PmiError> {
        let reply = self.call(&Request::GetMaxes, "maxes", "get_maxes")?;
        check_rc(&reply, "get_maxes")?;
        let field = |k: &'static str| -> Result<usize, PmiError> {
            let n = reply.require_i32(k)?;
            usize::try_from(n).map_err(|_| PmiError::BadNumber {
                field: k,
                value: n.to_string(),
            })
        };
        self.maxes = Maxes {
            kvsname_max: field("kvsname_max")?,
            keylen_max: field("keylen_max")?,
            vallen_max: field("vallen_max")?,
        };
        Ok(self.maxes)
    }

    /// The name of the job's key-value space (cached after the first call).
    pub fn get_my_kvsname(&mut self) -> Result<String, PmiError> {
        if let Some(k) = &self.kvsname {
            return Ok(k.clone());
        }
        let reply = self.call(&Request::GetMyKvsname, "my_kvsname", "get_my_kvsname")?;
        check_rc(&reply, "get_my_kvsname")?;
        let k = reply.require("kvsname")?.to_string();
        self.kvsname = Some(k.clone());
        Ok(k)
    }

    /// This rank's application number (0 for a single-program job).
    pub fn get_appnum(&mut self) -> Result<i32, PmiError> {
        let reply = self.call(&Request::GetAppnum, "appnum", "get_appnum")?;
        check_rc(&reply, "get_appnum")?;
        reply.require_i32("appnum")
    }

    /// The universe size; Hydra answers -1 when it does not know.
    pub fn get_universe_size(&mut self) -> Result<i32, PmiError> {
        let reply = self.call(
            &Request::GetUniverseSize,
            "universe_size",
            "get_universe_size",
        )?;
        check_rc(&reply, "get_universe_size")?;
        reply.require_i32("size")
    }

    /// Stores `key=value` in the job's key-value space. Other ranks see it
    /// after the next [`barrier`](Self::barrier).
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        self.check_key(key)?;
        if value.len() > self.maxes.vallen_max {
            return Err(PmiError::InvalidValue {
                len: value.len(),
                reason: "longer than the server's vallen_max",
            });
        }
        // Hydra cuts values at the first space, so refuse rather than corrupt.
        if value.contains([' ', '\t', '\n', '\r']) {
            return Err(PmiError::InvalidValue {
                len: value.len(),
                reason: "contains whitespace",
            });
        }
        let kvsname = self.get_my_kvsname()?;
        let req = Request::Put {
            kvsname,
            key: key.to_string(),
            value: value.to_string(),
        };
        let reply = self.call(&req, "put_result", "put")?;
        check_rc(&reply, "put")
    }

    /// The value of `key`, or `None` when the server does not have it.
    pub fn get(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        self.check_key(key)?;
        let kvsname = self.get_my_kvsname()?;
        let reply = self.call(
            &Request::Get {
                kvsname,
                key: key.to_string(),
            },
            "get_result",
            "get",
        )?;
        if rc_of(&reply)? != 0 {
            return Ok(None);
        }
        Ok(Some(reply.require("value")?.to_string()))
    }

    /// Waits until every rank of the job has entered the barrier.
    pub fn barrier(&mut self) -> Result<(), PmiError> {
        let reply = self.call(&Request::BarrierIn, "barrier_out", "barrier")?;
        check_rc(&reply, "barrier")
    }

    /// Tells the server this rank is done with PMI.
    pub fn finalize(&mut self) -> Result<(), PmiError> {
        let reply = self.call(&Request::Finalize, "finalize_ack", "finalize")?;
        check_rc(&reply, "finalize")
    }

    /// Asks the server to end the job with `code`. No reply is awaited: the
    /// server is expected to kill this process.
    pub fn abort(&mut self, code: i32, msg: &str) -> Result<(), PmiError> {
        let message = (!msg.is_empty()).then(|| msg.to_string());
        self.send(&Request::Abort {
            exit_code: code,
            message,
        })
    }

    fn check_key(&self, key: &str) -> Result<(), PmiError> {
        let bad = |reason| {
            Err(PmiError::InvalidKey {
                key: key.to_string(),
                reason,
            })
        };
        if key.is_empty() {
            return bad("empty");
        }
        if key.len() > self.maxes.keylen_max {
            return bad("longer than the server's keylen_max");
        }
        if key.contains(|c: char| c.is_whitespace() || c == '=') {
            return bad("contains whitespace or '='");
        }
        Ok(())
    }

    fn send(&mut self, req: &Request) -> Result<(), PmiError> {
        let text = req.format();
        if text.len() > MAX_LINE {
            return Err(PmiError::LineTooLong {
                len: text.len(),
                max: MAX_LINE,
            });
        }
        self.stream.write_all(text.as_bytes())?;
        self.stream.flush()?;
        Ok(())
    }

    /// Sends `req` and reads one reply, which must be `cmd=<expected>`.
    fn call(
        &mut self,
        req: &Request,
        expected: &'static str,
        what: &'static str,
    ) -> Result<Line, PmiError> {
        self.send(req)?;
        let reply = self.read_line()?;
        if reply.cmd == expected {
            return Ok(reply);
        }
        if reply.cmd == "error" {
            let msg = reply.get("msg").unwrap_or("").to_string();
            return Err(PmiError::Failed {
                cmd: what,
                rc: rc_of(&reply).unwrap_or(-1),
                msg,
            });
        }
        Err(PmiError::UnexpectedReply {
            expected,
            got: reply.format().trim_end().to_string(),
        })
    }

    fn read_line(&mut self) -> Result<Line, PmiError> {
        let mut chunk = [0u8; 1024];
        loop {
            if let Some(pos) = self.pending.iter().position(|&b| b == b'\n') {
                let rest = self.pending.split_off(pos + 1);
                let line = std::mem::replace(&mut self.pending, rest);
                return parse_line(&line);
            }
            if self.pending.len() > MAX_LINE {
                return Err(PmiError::LineTooLong {
                    len: self.pending.len(),
                    max: MAX_LINE,
                });
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(PmiError::Closed),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The reply's `rc`, 0 when absent (several replies carry none).
fn rc_of(l: &Line) -> Result<i32, PmiError> {
    match l.get("rc") {
        None => Ok(0),
        Some(_) => l.require_i32("rc"),
    }
}

fn check_rc(l: &Line, cmd: &'static str) -> Result<(), PmiError> {
    match rc_of(l)? {
        0 => Ok(()),
        rc => Err(PmiError::Failed {
            cmd,
            rc,
            msg: l.get("msg").unwrap_or("").to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A scripted server: replies are read from `input`, requests land in `output`.
    struct Script {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Script {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            // One byte at a time, to exercise reassembly.
            let n = buf.len().min(1);
            self.input.read(&mut buf[..n])
        }
    }

    impl Write for Script {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.output.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn client(replies: &str) -> PmiClient<Script> {
        PmiClient::new(Script {
            input: Cursor::new(replies.as_bytes().to_vec()),
            output: Vec::new(),
        })
    }

    fn sent(c: PmiClient<Script>) -> String {
        String::from_utf8(c.into_inner().output).unwrap()
    }

    #[test]
    fn hydra_session() {
        let mut c = client(concat!(
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
            "cmd=my_kvsname kvsname=kvs_1_0\n",
            "cmd=appnum appnum=0\n",
            "cmd=universe_size size=-1\n",
            "cmd=put_result rc=0 msg=success\n",
            "cmd=barrier_out\n",
            "cmd=get_result rc=0 msg=success value=(vector,(0,1,3))\n",
            "cmd=get_result rc=-1 msg=key_x_not_found value=unknown\n",
            "cmd=finalize_ack\n",
        ));
        c.init().unwrap();
        assert_eq!(
            c.get_maxes().unwrap(),
            Maxes {
                kvsname_max: 256,
                keylen_max: 64,
                vallen_max: 1024
            }
        );
        assert_eq!(c.get_my_kvsname().unwrap(), "kvs_1_0");
        assert_eq!(c.get_appnum().unwrap(), 0);
        assert_eq!(c.get_universe_size().unwrap(), -1);
        c.put("a", "b").unwrap();
        c.barrier().unwrap();
        assert_eq!(
            c.get("PMI_process_mapping").unwrap().as_deref(),
            Some("(vector,(0,1,3))")
        );
        assert_eq!(c.get("x").unwrap(), None);
        c.finalize().unwrap();
        assert_eq!(
            sent(c),
            concat!(
                "cmd=init pmi_version=1 pmi_subversion=1\n",
                "cmd=get_maxes\n",
                "cmd=get_my_kvsname\n",
                "cmd=get_appnum\n",
                "cmd=get_universe_size\n",
                "cmd=put kvsname=kvs_1_0 key=a value=b\n",
                "cmd=barrier_in\n",
                "cmd=get kvsname=kvs_1_0 key=PMI_process_mapping\n",
                "cmd=get kvsname=kvs_1_0 key=x\n",
                "cmd=finalize\n",
            )
        );
    }

    #[test]
    fn init_failure_is_reported() {
        let mut c = client("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n");
        assert!(matches!(
            c.init(),
            Err(PmiError::Failed {
                cmd: "init",
                rc: -1,
                ..
            })
        ));
    }

    #[test]
    fn wrong_reply_and_closed_stream() {
        let mut c = client("cmd=barrier_out\n");
        assert!(matches!(
            c.get_appnum(),
            Err(PmiError::UnexpectedReply {
                expected: "appnum",
                ..
            })
        ));
        assert!(matches!(c.finalize(), Err(PmiError::Closed)));
        let mut c = client("cmd=error rc=-1 msg=unknown_command\n");
        assert!(matches!(
            c.barrier(),
            Err(PmiError::Failed { cmd: "barrier", .. })
        ));
    }

    #[test]
    fn oversized_reply_is_bounded() {
        let mut c = client(&"x".repeat(MAX_LINE + 10));
        assert!(matches!(c.barrier(), Err(PmiError::LineTooLong { .. })));
    }

    #[test]
    fn bad_keys_and_values_are_refused_locally() {
        let mut c = client("cmd=my_kvsname kvsname=k\n");
        assert!(matches!(c.put("", "v"), Err(PmiError::InvalidKey { .. })));
        assert!(matches!(
            c.put("a b", "v"),
            Err(PmiError::InvalidKey { .. })
        ));
        assert!(matches!(
            c.put("a=b", "v"),
            Err(PmiError::InvalidKey { .. })
        ));
        assert!(matches!(
            c.put(&"k".repeat(65), "v"),
            Err(PmiError::InvalidKey { .. })
        ));
        assert!(matches!(
            c.put("k", "a b"),
            Err(PmiError::InvalidValue { .. })
        ));
        assert!(matches!(
            c.put("k", &"v".repeat(1025)),
            Err(PmiError::InvalidValue { .. })
        ));
        assert_eq!(sent(c), "");
    }

    #[test]
    fn abort_sends_without_waiting() {
        let mut c = client("");
        c.abort(7, "it broke").unwrap();
        assert_eq!(sent(c), "cmd=abort exitcode=7 message=it broke\n");
    }
}
