//! Command-line parsing for `lanairun`.

use std::ffi::OsString;
use std::fmt;
use std::time::Duration;

pub const USAGE: &str = "\
usage: lanairun -n N [--nodes K] [--timeout SECS] [--tag-output] [-x VAR[=VAL]]... [--] prog [args...]

  -n, -np, --np, -N, --n N   number of ranks to start (default 1)
  --nodes K                  split the ranks into K emulated nodes (default 1)
  --timeout SECS             end the job after SECS seconds (exit code 124)
  --tag-output               prefix every output line with [rank]
  -x VAR[=VAL]               pass VAR (with value VAL) to every rank
  --version                  print the version and exit
  -h, --help                 print this help and exit
(also installed as mpiexec and mpirun)";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Run(Options),
    Help,
    Version,
}

/// A job to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub ranks: u32,
    pub nodes: u32,
    pub timeout: Option<Duration>,
    /// The timeout as the user wrote it, for the message.
    pub timeout_text: String,
    pub tag_output: bool,
    /// `-x` variables; `None` means "pass the launcher's own value".
    pub env: Vec<(String, Option<String>)>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// Why the command line was rejected (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageError {
    MissingValue(String),
    BadNumber { option: String, value: String },
    UnknownOption(String),
    NoProgram,
    TooManyNodes { nodes: u32, ranks: u32 },
    BadVariable(String),
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingValue(o) => write!(f, "option {o} needs a value"),
            Self::BadNumber { option, value } => {
                write!(f, "option {option}: {value:?} is not a valid number")
            }
            Self::UnknownOption(o) => write!(f, "unknown option {o:?}"),
            Self::NoProgram => write!(f, "no program to run"),
            Self::TooManyNodes { nodes, ranks } => {
                write!(
                    f,
                    "--nodes {nodes} is more than the {ranks} rank(s) requested"
                )
            }
            Self::BadVariable(v) => write!(f, "-x {v:?} is not a valid VAR or VAR=VAL"),
        }
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, UsageError> {
    let mut it = args.into_iter();
    let mut o = Options {
        ranks: 1,
        nodes: 1,
        timeout: None,
        timeout_text: String::new(),
        tag_output: false,
        env: Vec::new(),
        program: OsString::new(),
        args: Vec::new(),
    };
    let mut program = None;
    while let Some(arg) = it.next() {
        let Some(text) = arg.to_str() else {
            program = Some(arg);
            break;
        };
        if !text.starts_with('-') || text == "-" {
            program = Some(arg);
            break;
        }
        if text == "--" {
            program = it.next();
            break;
        }
        // Long options also take `--opt=value`.
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (text, None),
        };
        let mut value = |name: &str| -> Result<String, UsageError> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .and_then(|v| v.into_string().ok())
                    .ok_or_else(|| UsageError::MissingValue(name.to_string())),
            }
        };
        match name {
            "-h" | "--help" => return Ok(Command::Help),
            "--version" => return Ok(Command::Version),
            "-n" | "-np" | "--np" | "-N" | "--n" => o.ranks = positive(name, &value(name)?)?,
            "--nodes" => o.nodes = positive(name, &value(name)?)?,
            "--timeout" => {
                let v = value(name)?;
                let secs: f64 = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| UsageError::BadNumber {
                        option: name.to_string(),
                        value: v.clone(),
                    })?;
                o.timeout = Some(Duration::from_secs_f64(secs.min(1e9)));
                o.timeout_text = v.trim().to_string();
            }
            "--tag-output" => o.tag_output = true,
            "-x" => {
                let v = value(name)?;
                let (var, val) = match v.split_once('=') {
                    Some((k, val)) => (k.to_string(), Some(val.to_string())),
                    None => (v.clone(), None),
                };
                if var.is_empty()
                    || var.contains('\0')
                    || val.as_deref().is_some_and(|s| s.contains('\0'))
                {
                    return Err(UsageError::BadVariable(v));
                }
                o.env.push((var, val));
            }
            _ => return Err(UsageError::UnknownOption(text.to_string())),
        }
    }
    o.program = program.ok_or(UsageError::NoProgram)?;
    o.args = it.collect();
    if o.nodes > o.ranks {
        return Err(UsageError::TooManyNodes {
            nodes: o.nodes,
            ranks: o.ranks,
        });
    }
    Ok(Command::Run(o))
}

fn positive(option: &str, v: &str) -> Result<u32, UsageError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| UsageError::BadNumber {
            option: option.to_string(),
            value: v.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options, UsageError> {
        match parse(args.iter().map(OsString::from))? {
            Command::Run(o) => Ok(o),
            c => panic!("expected a run, got {c:?}"),
        }
    }

    #[test]
    fn rank_aliases() {
        for flag in ["-n", "-np", "--np", "-N", "--n"] {
            let o = run(&[flag, "4", "prog", "-n", "9"]).unwrap();
            assert_eq!(o.ranks, 4);
            assert_eq!(o.program, "prog");
            assert_eq!(o.args, vec![OsString::from("-n"), OsString::from("9")]);
        }
        assert_eq!(run(&["--np=3", "p"]).unwrap().ranks, 3);
    }

    #[test]
    fn all_options() {
        let o = run(&[
            "-n",
            "5",
            "--nodes",
            "2",
            "--timeout",
            "1.5",
            "--tag-output",
            "-x",
            "A=1",
            "-x",
            "B",
            "--",
            "-prog",
            "x",
        ])
        .unwrap();
        assert_eq!((o.ranks, o.nodes, o.tag_output), (5, 2, true));
        assert_eq!(o.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(o.timeout_text, "1.5");
        assert_eq!(
            o.env,
            vec![("A".into(), Some("1".into())), ("B".into(), None)]
        );
        assert_eq!(o.program, "-prog");
        assert_eq!(o.args, vec![OsString::from("x")]);
    }

    #[test]
    fn defaults() {
        let o = run(&["prog"]).unwrap();
        assert_eq!(
            (o.ranks, o.nodes, o.timeout, o.tag_output),
            (1, 1, None, false)
        );
    }

    #[test]
    fn errors() {
        assert_eq!(run(&["-n"]), Err(UsageError::MissingValue("-n".into())));
        assert!(matches!(
            run(&["-n", "0", "p"]),
            Err(UsageError::BadNumber { .. })
        ));
        assert!(matches!(
            run(&["-n", "x", "p"]),
            Err(UsageError::BadNumber { .. })
        ));
        assert!(matches!(
            run(&["--timeout", "-1", "p"]),
            Err(UsageError::BadNumber { .. })
        ));
        assert_eq!(
            run(&["--bogus", "p"]),
            Err(UsageError::UnknownOption("--bogus".into()))
        );
        assert_eq!(run(&["-n", "2"]), Err(UsageError::NoProgram));
        assert_eq!(run(&["-n", "2", "--"]), Err(UsageError::NoProgram));
        assert_eq!(
            run(&["-n", "2", "--nodes", "3", "p"]),
            Err(UsageError::TooManyNodes { nodes: 3, ranks: 2 })
        );
        assert!(matches!(
            run(&["-x", "=1", "p"]),
            Err(UsageError::BadVariable(_))
        ));
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse(["--help".into()]), Ok(Command::Help));
        assert_eq!(parse(["-h".into()]), Ok(Command::Help));
        assert_eq!(parse(["--version".into()]), Ok(Command::Version));
    }
}
