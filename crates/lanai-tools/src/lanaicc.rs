//! `lanaicc` (also installed as `mpicc`): runs the C compiler with Lanai's
//! header, library and an rpath, like MPICH's `mpicc`.
#![forbid(unsafe_code)]

use lanai_common::knobs;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The install prefix: the directory above this binary's `bin/`.
fn prefix() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent()?.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."))
}

fn compile_flags(pre: &std::path::Path) -> Vec<String> {
    vec![format!("-I{}", pre.join("include").display())]
}

fn link_flags(pre: &std::path::Path) -> Vec<String> {
    let lib = pre.join("lib");
    vec![
        format!("-L{}", lib.display()),
        format!("-Wl,-rpath,{}", lib.display()),
        "-lmpi".into(),
    ]
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pre = prefix();
    let cc = knobs::get(&knobs::CC);
    let mut show = false;
    let mut user = Vec::new();
    for a in &args {
        match a.as_str() {
            "-show" | "--show" => show = true,
            "-compile_info" | "--compile_info" => {
                println!("{} {}", cc, compile_flags(&pre).join(" "));
                return ExitCode::SUCCESS;
            }
            "-link_info" | "--link_info" => {
                println!("{} {}", cc, link_flags(&pre).join(" "));
                return ExitCode::SUCCESS;
            }
            "-v" | "--version" if args.len() == 1 => {
                println!("lanaicc (Lanai) {} wrapping {cc}", lanai_common::VERSION);
                return ExitCode::SUCCESS;
            }
            _ => user.push(a.clone()),
        }
    }
    // Only compiling (-c, -E, -S): linker flags would just draw warnings.
    let link = !user
        .iter()
        .any(|a| a == "-c" || a == "-E" || a == "-S" || a == "-M" || a == "-MM");
    let mut full = compile_flags(&pre);
    full.extend(user);
    if link {
        full.extend(link_flags(&pre));
    }
    if show {
        println!("{} {}", cc, full.join(" "));
        return ExitCode::SUCCESS;
    }
    if args.is_empty() {
        eprintln!("lanaicc: no input files (try lanaicc -show)");
        return ExitCode::from(1);
    }
    match Command::new(&cc).args(&full).status() {
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("lanaicc: cannot run the C compiler {cc:?}: {e} (set LANAI_CC)");
            ExitCode::from(127)
        }
    }
}
