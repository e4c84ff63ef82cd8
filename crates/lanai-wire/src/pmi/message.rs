//! Typed PMI-1 messages: what a rank asks ([`Request`]) and what the server
//! answers ([`Response`]), with the exact wire spelling Hydra uses.

use super::line::{parse_line, Line};
use super::PmiError;

/// A request from a rank to the PMI server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `cmd=init pmi_version=1 pmi_subversion=1`
    Init { version: i32, subversion: i32 },
    /// `cmd=get_maxes`
    GetMaxes,
    /// `cmd=get_appnum`
    GetAppnum,
    /// `cmd=get_my_kvsname`
    GetMyKvsname,
    /// `cmd=get_universe_size`
    GetUniverseSize,
    /// `cmd=put kvsname=K key=A value=B`
    Put {
        kvsname: String,
        key: String,
        value: String,
    },
    /// `cmd=get kvsname=K key=A`
    Get { kvsname: String, key: String },
    /// `cmd=barrier_in`
    BarrierIn,
    /// `cmd=finalize`
    Finalize,
    /// `cmd=abort exitcode=N [message=text]`; the server sends no reply.
    Abort {
        exit_code: i32,
        message: Option<String>,
    },
    /// Any other command; the server answers with [`Response::Error`].
    Unknown { cmd: String },
}

impl Request {
    /// Parses one request line.
    pub fn parse(bytes: &[u8]) -> Result<Self, PmiError> {
        Self::from_line(&parse_line(bytes)?)
    }

    /// Gives a parsed line its type.
    pub fn from_line(l: &Line) -> Result<Self, PmiError> {
        let owned = |k: &'static str| l.require(k).map(str::to_string);
        Ok(match l.cmd.as_str() {
            "init" => Self::Init {
                version: l.require_i32("pmi_version")?,
                subversion: l.require_i32("pmi_subversion")?,
            },
            "get_maxes" => Self::GetMaxes,
            "get_appnum" => Self::GetAppnum,
            "get_my_kvsname" => Self::GetMyKvsname,
            "get_universe_size" => Self::GetUniverseSize,
            "put" => Self::Put {
                kvsname: owned("kvsname")?,
                key: owned("key")?,
                value: owned("value")?,
            },
            "get" => Self::Get {
                kvsname: owned("kvsname")?,
                key: owned("key")?,
            },
            "barrier_in" => Self::BarrierIn,
            "finalize" => Self::Finalize,
            "abort" => Self::Abort {
                exit_code: l.require_i32("exitcode")?,
                message: l
                    .get("message")
                    .or_else(|| l.get("msg"))
                    .map(str::to_string),
            },
            other => Self::Unknown {
                cmd: other.to_string(),
            },
        })
    }

    /// The request as a [`Line`].
    pub fn to_line(&self) -> Line {
        match self {
            Self::Init {
                version,
                subversion,
            } => Line::new("init")
                .with("pmi_version", version)
                .with("pmi_subversion", subversion),
            Self::GetMaxes => Line::new("get_maxes"),
            Self::GetAppnum => Line::new("get_appnum"),
            Self::GetMyKvsname => Line::new("get_my_kvsname"),
            Self::GetUniverseSize => Line::new("get_universe_size"),
            Self::Put {
                kvsname,
                key,
                value,
            } => Line::new("put")
                .with("kvsname", kvsname)
                .with("key", key)
                .with("value", value),
            Self::Get { kvsname, key } => {
                Line::new("get").with("kvsname", kvsname).with("key", key)
            }
            Self::BarrierIn => Line::new("barrier_in"),
            Self::Finalize => Line::new("finalize"),
            Self::Abort { exit_code, message } => {
                let l = Line::new("abort").with("exitcode", exit_code);
                match message {
                    Some(m) if !m.trim().is_empty() => l.with("message", one_line(m)),
                    _ => l,
                }
            }
            Self::Unknown { cmd } => Line::new(cmd),
        }
    }

    /// The wire form, ending in `\n`.
    pub fn format(&self) -> String {
        self.to_line().format()
    }
}

/// A reply from the PMI server to a rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// `cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=R`
    Init { rc: i32 },
    /// `cmd=maxes kvsname_max=.. keylen_max=.. vallen_max=..`
    Maxes {
        kvsname_max: usize,
        keylen_max: usize,
        vallen_max: usize,
    },
    /// `cmd=appnum appnum=N`
    Appnum(i32),
    /// `cmd=my_kvsname kvsname=K`
    MyKvsname(String),
    /// `cmd=universe_size size=N`
    UniverseSize(i32),
    /// `cmd=put_result rc=R msg=M`
    PutResult { rc: i32, msg: String },
    /// `cmd=get_result rc=0 msg=success value=V`
    GetFound(String),
    /// `cmd=get_result rc=-1 msg=key_<key>_not_found value=unknown`
    GetNotFound { key: String },
    /// `cmd=barrier_out`
    BarrierOut,
    /// `cmd=finalize_ack`
    FinalizeAck,
    /// `cmd=error rc=-1 msg=M`: the answer to a malformed or unknown request.
    Error { msg: String },
}

impl Response {
    /// The response as a [`Line`].
    pub fn to_line(&self) -> Line {
        match self {
            Self::Init { rc } => Line::new("response_to_init")
                .with("pmi_version", 1)
                .with("pmi_subversion", 1)
                .with("rc", rc),
            Self::Maxes {
                kvsname_max,
                keylen_max,
                vallen_max,
            } => Line::new("maxes")
                .with("kvsname_max", kvsname_max)
                .with("keylen_max", keylen_max)
                .with("vallen_max", vallen_max),
            Self::Appnum(n) => Line::new("appnum").with("appnum", n),
            Self::MyKvsname(k) => Line::new("my_kvsname").with("kvsname", k),
            Self::UniverseSize(n) => Line::new("universe_size").with("size", n),
            Self::PutResult { rc, msg } => Line::new("put_result")
                .with("rc", rc)
                .with("msg", one_word(msg)),
            Self::GetFound(v) => Line::new("get_result")
                .with("rc", 0)
                .with("msg", "success")
                .with("value", v),
            Self::GetNotFound { key } => Line::new("get_result")
                .with("rc", -1)
                .with("msg", format!("key_{}_not_found", one_word(key)))
                .with("value", "unknown"),
            Self::BarrierOut => Line::new("barrier_out"),
            Self::FinalizeAck => Line::new("finalize_ack"),
            Self::Error { msg } => Line::new("error").with("rc", -1).with("msg", one_word(msg)),
        }
    }

    /// The wire form, ending in `\n`.
    pub fn format(&self) -> String {
        self.to_line().format()
    }
}

/// Free text made safe for a field that readers cut at the first space.
fn one_word(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// Free text made safe for the last field of a line (spaces kept).
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let all = [
            Request::Init {
                version: 1,
                subversion: 1,
            },
            Request::GetMaxes,
            Request::GetAppnum,
            Request::GetMyKvsname,
            Request::GetUniverseSize,
            Request::Put {
                kvsname: "k".into(),
                key: "a".into(),
                value: "(vector,(0,1,3))".into(),
            },
            Request::Put {
                kvsname: "k".into(),
                key: "a".into(),
                value: String::new(),
            },
            Request::Get {
                kvsname: "k".into(),
                key: "a".into(),
            },
            Request::BarrierIn,
            Request::Finalize,
            Request::Abort {
                exit_code: 3,
                message: None,
            },
            Request::Abort {
                exit_code: -1,
                message: Some("bad thing happened".into()),
            },
            Request::Unknown {
                cmd: "spawn".into(),
            },
        ];
        for r in all {
            assert_eq!(
                Request::parse(r.format().as_bytes()).unwrap(),
                r,
                "{}",
                r.format()
            );
        }
    }

    #[test]
    fn exact_wire_spelling() {
        assert_eq!(
            Request::Init {
                version: 1,
                subversion: 1
            }
            .format(),
            "cmd=init pmi_version=1 pmi_subversion=1\n"
        );
        assert_eq!(
            Response::Init { rc: 0 }.format(),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
        );
        assert_eq!(
            Response::Maxes {
                kvsname_max: 256,
                keylen_max: 64,
                vallen_max: 1024
            }
            .format(),
            "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n"
        );
        assert_eq!(
            Response::GetFound("v".into()).format(),
            "cmd=get_result rc=0 msg=success value=v\n"
        );
        assert_eq!(
            Response::GetNotFound {
                key: "nothere".into()
            }
            .format(),
            "cmd=get_result rc=-1 msg=key_nothere_not_found value=unknown\n"
        );
        assert_eq!(
            Response::PutResult {
                rc: 0,
                msg: "success".into()
            }
            .format(),
            "cmd=put_result rc=0 msg=success\n"
        );
        assert_eq!(
            Response::Error {
                msg: "no such command".into()
            }
            .format(),
            "cmd=error rc=-1 msg=no_such_command\n"
        );
    }

    #[test]
    fn abort_message_newlines_are_flattened() {
        let r = Request::Abort {
            exit_code: 2,
            message: Some("a\nb".into()),
        };
        assert_eq!(r.format(), "cmd=abort exitcode=2 message=a b\n");
    }

    #[test]
    fn missing_fields_are_errors() {
        assert!(matches!(
            Request::parse(b"cmd=put key=a value=b"),
            Err(PmiError::MissingField {
                field: "kvsname",
                ..
            })
        ));
        assert!(matches!(
            Request::parse(b"cmd=abort"),
            Err(PmiError::MissingField {
                field: "exitcode",
                ..
            })
        ));
        assert!(matches!(
            Request::parse(b"cmd=init pmi_version=one pmi_subversion=1"),
            Err(PmiError::BadNumber { .. })
        ));
    }
}
