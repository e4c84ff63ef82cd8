//! Command-line parsing for `lanairun`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub const USAGE: &str = "\
usage: lanairun [options] [-n N] prog [args...] [: [-n N] prog [args...]]...

  -n, -np, --np, -N, --n N    number of ranks to start (default 1); after a ':',
                              the ranks of the next program (MPMD, MPI_APPNUM 1, 2, ...)
  --nodes K                   split the ranks into K emulated nodes (default 1)
  -ppn, -perhost, --npernode N  ranks per emulated node (the last may have fewer)
  --timeout SECS              end the job after SECS seconds (exit code 124)
  --tag-output, -l, -prepend-rank  prefix every output line with [rank]
  -x VAR[=VAL]                pass VAR (with value VAL) to every rank
  -genv VAR VAL               the same as -x VAR=VAL
  -genvlist VAR,VAR...        pass these variables' values to every rank
  -genvnone, -envnone         pass no other variable of lanairun's environment
  -env VAR VAL, -envlist ...  the same, for this program's ranks only (MPMD)
  -wdir, -wd DIR              start this program's ranks in DIR
  --bind-to core|hwthread|none  pin ranks (LANAI_BIND=core) or never (none)
  --oversubscribe, -genvall, -envall, --map-by slot|core  accepted: already what lanairun does
  -host, -hosts, --host, -H H[,H...]  accepted when every host is this machine
  -f, --hostfile, --machinefile FILE  the same, for every host the file lists
  --version                   print the version and exit
  -h, --help                  print this help and exit
(also installed as mpiexec and mpirun; across hosts, use mpiexec.hydra)";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Run(Options),
    Help,
    Version,
}

/// One program of the job and its ranks (more than one: MPMD).
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub ranks: u32,
    pub program: OsString,
    pub args: Vec<OsString>,
    /// `-env`/`-envlist`, for these ranks only; applied after the job's.
    pub env: Vec<(String, Option<String>)>,
    pub wdir: Option<PathBuf>,
    /// `-envnone`: these ranks inherit nothing from the launcher.
    pub env_none: bool,
}

/// A job to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Every program's ranks together.
    pub ranks: u32,
    pub nodes: u32,
    /// `-ppn`: ranks per node, instead of splitting into even blocks.
    pub per_node: Option<u32>,
    pub timeout: Option<Duration>,
    /// The timeout as the user wrote it, for the message.
    pub timeout_text: String,
    pub tag_output: bool,
    /// Variables for every rank; `None` means "pass the launcher's own value".
    pub env: Vec<(String, Option<String>)>,
    /// `-genvnone`: ranks inherit nothing from the launcher's environment,
    /// only the variables named on the command line and PMI's.
    pub env_none: bool,
    /// `--bind-to`, as a `LANAI_BIND` value; overrides the variable.
    pub bind: Option<&'static str>,
    /// In rank order: ranks `0..apps[0].ranks` run the first, and so on.
    pub apps: Vec<App>,
}

impl Options {
    /// Rank `r`'s program and its index (`MPI_APPNUM`).
    pub fn app_of(&self, r: usize) -> (usize, &App) {
        let mut first = 0usize;
        for (i, a) in self.apps.iter().enumerate() {
            first += a.ranks as usize;
            if r < first {
                return (i, a);
            }
        }
        let last = self.apps.len() - 1;
        (last, &self.apps[last])
    }

    /// Ranks on each emulated node, in node order.
    pub fn node_sizes(&self) -> Vec<u32> {
        match self.per_node {
            Some(p) => crate::mapping::ranks_at_most_per_node(self.ranks, p),
            None => crate::mapping::ranks_per_node(self.ranks, self.nodes),
        }
    }
}

/// Why the command line was rejected (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageError {
    MissingValue(String),
    BadNumber {
        option: String,
        value: String,
    },
    UnknownOption(String),
    NoProgram,
    TooManyNodes {
        nodes: u32,
        ranks: u32,
    },
    BadVariable(String),
    /// `--nodes` and `-ppn` disagree.
    NodesAndPerNode {
        nodes: u32,
        per_node: u32,
        ranks: u32,
    },
    /// A host other than this machine.
    RemoteHost(String),
    /// An option value lanairun cannot honour, and why.
    Unsupported {
        option: String,
        value: String,
        why: &'static str,
    },
    TooManyRanks,
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
            Self::BadVariable(v) => write!(f, "{v:?} is not a valid VAR or VAR=VAL"),
            Self::NodesAndPerNode {
                nodes,
                per_node,
                ranks,
            } => write!(
                f,
                "--nodes {nodes} and -ppn {per_node} disagree: {ranks} rank(s) at {per_node} \
                 per node make {} node(s)",
                ranks.div_ceil(*per_node)
            ),
            Self::RemoteHost(h) => write!(
                f,
                "host {h:?} is not this machine: lanairun starts every rank here (use --nodes \
                 for emulated nodes, or MPICH's mpiexec.hydra to run across hosts)"
            ),
            Self::Unsupported { option, value, why } => write!(f, "{option} {value}: {why}"),
            Self::TooManyRanks => write!(f, "more than {} ranks in all", u32::MAX),
        }
    }
}

/// The ranks of the program being read, before its name.
#[derive(Default)]
struct Pending {
    ranks: Option<u32>,
    env: Vec<(String, Option<String>)>,
    wdir: Option<PathBuf>,
    env_none: bool,
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, UsageError> {
    let mut it = args.into_iter();
    let mut o = Options {
        ranks: 0,
        nodes: 1,
        per_node: None,
        timeout: None,
        timeout_text: String::new(),
        tag_output: false,
        env: Vec::new(),
        env_none: false,
        bind: None,
        apps: Vec::new(),
    };
    let mut nodes_given = false;
    let mut app = Pending::default();
    // At the start and after each ':', a program must follow.
    let mut want_program = true;
    while let Some(arg) = it.next() {
        let program = match arg.to_str() {
            Some("--") => Some(it.next().ok_or(UsageError::NoProgram)?),
            Some(text) if text.starts_with('-') && text != "-" => None,
            _ => Some(arg.clone()),
        };
        if let Some(program) = program {
            // The program's own arguments run to a lone ':' (the next
            // program) or the end.
            let mut args = Vec::new();
            let mut more = false;
            for a in it.by_ref() {
                if a == ":" {
                    more = true;
                    break;
                }
                args.push(a);
            }
            let done = std::mem::take(&mut app);
            o.apps.push(App {
                ranks: done.ranks.unwrap_or(1),
                program,
                args,
                env: done.env,
                wdir: done.wdir,
                env_none: done.env_none,
            });
            want_program = more;
            if more {
                continue;
            }
            break;
        }
        let text = arg.to_str().unwrap_or_default();
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
            "-n" | "-np" | "--np" | "-N" | "--n" => {
                app.ranks = Some(positive(name, &value(name)?)?)
            }
            "--nodes" => {
                o.nodes = positive(name, &value(name)?)?;
                nodes_given = true;
            }
            "-ppn" | "--ppn" | "-perhost" | "--npernode" | "-npernode" => {
                o.per_node = Some(positive(name, &value(name)?)?)
            }
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
            "--tag-output" | "-tag-output" | "-l" | "-prepend-rank" | "--prepend-rank" => {
                o.tag_output = true
            }
            "-x" => {
                let v = value(name)?;
                o.env.push(variable(&v)?);
            }
            "-genv" | "-env" => {
                let var = value(name)?;
                let val = value(name)?;
                if var.contains('=') {
                    return Err(UsageError::BadVariable(var));
                }
                let pair = variable(&format!("{var}={val}"))?;
                if name == "-genv" {
                    o.env.push(pair);
                } else {
                    app.env.push(pair);
                }
            }
            "-genvlist" | "-envlist" => {
                let list = value(name)?;
                let vars = list
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(variable)
                    .collect::<Result<Vec<_>, _>>()?;
                // Names only: each takes the launcher's value.
                if let Some((k, _)) = vars.iter().find(|(_, v)| v.is_some()) {
                    return Err(UsageError::BadVariable(format!("{k}=...")));
                }
                if name == "-genvlist" {
                    o.env.extend(vars);
                } else {
                    app.env.extend(vars);
                }
            }
            // Ranks inherit the launcher's environment already.
            "-genvall" | "-envall" => {}
            "-genvnone" => o.env_none = true,
            "-envnone" => app.env_none = true,
            "-wdir" | "--wdir" | "-wd" | "--wd" => app.wdir = Some(PathBuf::from(value(name)?)),
            // lanairun sees ranks outnumber cores and adapts by itself.
            "--oversubscribe" | "-oversubscribe" => {}
            "--bind-to" | "-bind-to" => {
                let v = value(name)?;
                o.bind = Some(match v.as_str() {
                    "core" | "hwthread" | "cpu" => "core",
                    "none" => "none",
                    _ => {
                        return Err(UsageError::Unsupported {
                            option: name.to_string(),
                            value: v,
                            why: "lanairun binds to a core (core, hwthread) or not at all (none)",
                        })
                    }
                });
            }
            "--map-by" | "-map-by" => {
                let v = value(name)?;
                let mut parts = v.split(':');
                let unit = parts.next().unwrap_or_default().to_ascii_lowercase();
                let blocks = matches!(unit.as_str(), "slot" | "core" | "hwthread" | "");
                let modifiers_ok = parts.all(|m| {
                    matches!(
                        m.to_ascii_uppercase().as_str(),
                        "OVERSUBSCRIBE" | "NOOVERSUBSCRIBE"
                    )
                });
                if !blocks || !modifiers_ok {
                    return Err(UsageError::Unsupported {
                        option: name.to_string(),
                        value: v,
                        why: "lanairun places consecutive ranks together (slot, core, \
                              hwthread); choose emulated nodes with --nodes or -ppn",
                    });
                }
            }
            "-host" | "-hosts" | "--host" | "-H" => {
                let v = value(name)?;
                for h in v.split(',').filter(|h| !h.is_empty()) {
                    only_here(h)?;
                }
            }
            "-f" | "-hostfile" | "--hostfile" | "-machinefile" | "--machinefile" => {
                let path = value(name)?;
                let text = std::fs::read_to_string(&path).map_err(|e| UsageError::Unsupported {
                    option: name.to_string(),
                    value: path.clone(),
                    why: io_why(&e),
                })?;
                // One host per line, then `:slots` (Hydra) or ` slots=N`
                // (Open MPI); `#` starts a comment.
                for line in text.lines() {
                    let line = line.split('#').next().unwrap_or_default();
                    if let Some(h) = line.split_whitespace().next() {
                        only_here(h)?;
                    }
                }
            }
            _ => return Err(UsageError::UnknownOption(text.to_string())),
        }
    }
    if want_program {
        return Err(UsageError::NoProgram);
    }
    o.ranks = o
        .apps
        .iter()
        .try_fold(0u32, |t, a| t.checked_add(a.ranks))
        .ok_or(UsageError::TooManyRanks)?;
    if let Some(p) = o.per_node {
        let want = o.ranks.div_ceil(p);
        if nodes_given && o.nodes != want {
            return Err(UsageError::NodesAndPerNode {
                nodes: o.nodes,
                per_node: p,
                ranks: o.ranks,
            });
        }
        o.nodes = want;
    }
    if o.nodes > o.ranks {
        return Err(UsageError::TooManyNodes {
            nodes: o.nodes,
            ranks: o.ranks,
        });
    }
    Ok(Command::Run(o))
}

/// `VAR` or `VAR=VAL`, checked.
fn variable(v: &str) -> Result<(String, Option<String>), UsageError> {
    let (var, val) = match v.split_once('=') {
        Some((k, val)) => (k.to_string(), Some(val.to_string())),
        None => (v.to_string(), None),
    };
    if var.is_empty() || var.contains('\0') || val.as_deref().is_some_and(|s| s.contains('\0')) {
        return Err(UsageError::BadVariable(v.to_string()));
    }
    Ok((var, val))
}

/// `host`, or `host:slots`, names this machine, or the job is refused.
fn only_here(h: &str) -> Result<(), UsageError> {
    let host = h.rsplit_once(':').map_or(
        h,
        |(n, slots)| {
            if slots.parse::<u32>().is_ok() {
                n
            } else {
                h
            }
        },
    );
    if is_this_machine(host) {
        Ok(())
    } else {
        Err(UsageError::RemoteHost(host.to_string()))
    }
}

fn io_why(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file",
        std::io::ErrorKind::PermissionDenied => "permission denied",
        _ => "cannot be read",
    }
}

/// Whether `host` names this machine.
fn is_this_machine(host: &str) -> bool {
    let h = host.trim().to_ascii_lowercase();
    if matches!(
        h.as_str(),
        "localhost" | "localhost.localdomain" | "127.0.0.1" | "::1"
    ) {
        return true;
    }
    let Ok(me) = nix::unistd::gethostname() else {
        return false;
    };
    let me = me.to_string_lossy().to_ascii_lowercase();
    let short = |n: &str| n.split('.').next().unwrap_or_default().to_string();
    h == me || short(&h) == short(&me)
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

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn rank_aliases() {
        for flag in ["-n", "-np", "--np", "-N", "--n"] {
            let o = run(&[flag, "4", "prog", "-n", "9"]).unwrap();
            assert_eq!(o.ranks, 4);
            assert_eq!(o.apps[0].program, "prog");
            assert_eq!(o.apps[0].args, os(&["-n", "9"]));
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
        assert_eq!(o.apps.len(), 1);
        assert_eq!(o.apps[0].program, "-prog");
        assert_eq!(o.apps[0].args, os(&["x"]));
    }

    #[test]
    fn defaults() {
        let o = run(&["prog"]).unwrap();
        assert_eq!(
            (
                o.ranks,
                o.nodes,
                o.timeout,
                o.tag_output,
                o.bind,
                o.per_node
            ),
            (1, 1, None, false, None, None)
        );
        assert_eq!(o.node_sizes(), vec![1]);
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
        assert!(matches!(
            run(&["-genv", "A=B", "1", "p"]),
            Err(UsageError::BadVariable(_))
        ));
        assert!(matches!(
            run(&["-genvlist", "A,B=1", "p"]),
            Err(UsageError::BadVariable(_))
        ));
        assert_eq!(
            run(&["-genv", "A"]),
            Err(UsageError::MissingValue("-genv".into()))
        );
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse(["--help".into()]), Ok(Command::Help));
        assert_eq!(parse(["-h".into()]), Ok(Command::Help));
        assert_eq!(parse(["--version".into()]), Ok(Command::Version));
    }

    #[test]
    fn hydra_and_open_mpi_spellings() {
        let o = run(&[
            "--oversubscribe",
            "-genv",
            "A",
            "1 2",
            "-genvlist",
            "B,C",
            "-genvall",
            "-genvnone",
            "-l",
            "--map-by",
            "core:OVERSUBSCRIBE",
            "--bind-to",
            "none",
            "-host",
            "localhost,127.0.0.1:4",
            "-np",
            "2",
            "prog",
        ])
        .unwrap();
        assert_eq!(
            o.env,
            vec![
                ("A".into(), Some("1 2".into())),
                ("B".into(), None),
                ("C".into(), None)
            ]
        );
        assert!(o.tag_output);
        assert!(o.env_none);
        assert_eq!(o.bind, Some("none"));
        assert_eq!(
            run(&["-bind-to", "hwthread", "p"]).unwrap().bind,
            Some("core")
        );
        assert!(run(&["-prepend-rank", "p"]).unwrap().tag_output);
        assert!(matches!(
            run(&["--bind-to", "socket", "p"]),
            Err(UsageError::Unsupported { .. })
        ));
        assert!(matches!(
            run(&["--map-by", "node", "p"]),
            Err(UsageError::Unsupported { .. })
        ));
        assert!(matches!(
            run(&["--map-by", "slot:PE=2", "p"]),
            Err(UsageError::Unsupported { .. })
        ));
        assert_eq!(
            run(&["-hosts", "localhost,elsewhere.invalid", "p"]),
            Err(UsageError::RemoteHost("elsewhere.invalid".into()))
        );
        let me = nix::unistd::gethostname().unwrap();
        let me = me.to_str().unwrap();
        assert!(run(&["-H", &format!("{me}:2"), "p"]).is_ok());
    }

    #[test]
    fn host_files_must_name_this_machine() {
        let dir = std::env::temp_dir().join(format!("lanairun-hosts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let here = dir.join("here");
        std::fs::write(
            &here,
            "# local\nlocalhost slots=4\n\n127.0.0.1:2  # and this\n",
        )
        .unwrap();
        let far = dir.join("far");
        std::fs::write(&far, "localhost\nnode9 slots=2\n").unwrap();
        let h = here.to_str().unwrap();
        assert!(run(&["-f", h, "p"]).is_ok());
        assert!(run(&["--hostfile", h, "p"]).is_ok());
        assert!(run(&["-machinefile", h, "p"]).is_ok());
        assert_eq!(
            run(&["--machinefile", far.to_str().unwrap(), "p"]),
            Err(UsageError::RemoteHost("node9".into()))
        );
        assert!(matches!(
            run(&["-f", dir.join("none").to_str().unwrap(), "p"]),
            Err(UsageError::Unsupported {
                why: "no such file",
                ..
            })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ranks_per_node() {
        let o = run(&["-n", "8", "-ppn", "3", "p"]).unwrap();
        assert_eq!((o.nodes, o.node_sizes()), (3, vec![3, 3, 2]));
        let o = run(&["-n", "8", "--npernode", "5", "p"]).unwrap();
        assert_eq!(o.node_sizes(), vec![5, 3]);
        let o = run(&["-n", "4", "-perhost", "4", "--nodes", "1", "p"]).unwrap();
        assert_eq!(o.node_sizes(), vec![4]);
        assert_eq!(
            run(&["-n", "4", "-ppn", "1", "--nodes", "2", "p"]),
            Err(UsageError::NodesAndPerNode {
                nodes: 2,
                per_node: 1,
                ranks: 4
            })
        );
    }

    #[test]
    fn programs_after_colons() {
        let o = run(&[
            "-genv", "G", "1", "-n", "1", "-env", "L", "a", "-wdir", "/tmp", "-envnone", "first",
            "x", ":", "-np", "3", "second", "y", "z", ":", "third",
        ])
        .unwrap();
        assert_eq!(o.ranks, 5);
        let names: Vec<_> = o
            .apps
            .iter()
            .map(|a| (a.ranks, a.program.clone()))
            .collect();
        assert_eq!(
            names,
            vec![
                (1, "first".into()),
                (3, "second".into()),
                (1, "third".into())
            ]
        );
        assert_eq!(o.apps[0].args, os(&["x"]));
        assert_eq!(o.apps[1].args, os(&["y", "z"]));
        assert_eq!(o.apps[0].env, vec![("L".into(), Some("a".into()))]);
        assert!(o.apps[1].env.is_empty());
        assert_eq!(o.apps[0].wdir, Some(PathBuf::from("/tmp")));
        assert_eq!(o.apps[1].wdir, None);
        assert_eq!(
            (o.apps[0].env_none, o.apps[1].env_none, o.env_none),
            (true, false, false)
        );
        assert_eq!(o.env, vec![("G".into(), Some("1".into()))]);
        let who: Vec<usize> = (0..5).map(|r| o.app_of(r).0).collect();
        assert_eq!(who, vec![0, 1, 1, 1, 2]);
        // A ':' inside a program's arguments ends them only when alone.
        let o = run(&["p", "a:b", "::"]).unwrap();
        assert_eq!(o.apps[0].args, os(&["a:b", "::"]));
        assert_eq!(
            run(&["-n", "1", "p", ":", "-n", "2"]),
            Err(UsageError::NoProgram)
        );
        assert_eq!(run(&["p", ":"]), Err(UsageError::NoProgram));
    }
}
