//! `lanaicc` (also `mpicc`), `lanaicxx` (`mpicxx`, `mpic++`) and
//! `lanaifort` (`mpifort`, `mpif90`, `mpif77`): run the compiler with
//! Lanai's header, library and an rpath, like MPICH's wrappers. The name
//! it is called by picks the language.
//!
//! Lanai has no Fortran modules of its own: its ABI is MPICH's, so
//! `lanaifort` compiles against MPICH's `mpi.mod`/`mpif.h` and links
//! MPICH's Fortran layer (`libmpichfort`) over Lanai's library. The rpath
//! is an old-style `DT_RPATH`, which also applies to that layer's own
//! `libmpich.so.12`, so that it too resolves to Lanai.
#![forbid(unsafe_code)]

use lanai_common::knobs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lang {
    C,
    Cxx,
    Fortran,
}

impl Lang {
    /// The language of a wrapper called `name`.
    fn of(name: &str) -> Lang {
        if ["fort", "f90", "f77"].iter().any(|s| name.contains(s)) {
            Lang::Fortran
        } else if ["cxx", "c++", "CC"].iter().any(|s| name.contains(s)) {
            Lang::Cxx
        } else {
            Lang::C
        }
    }

    fn tool(self) -> &'static str {
        match self {
            Lang::C => "lanaicc",
            Lang::Cxx => "lanaicxx",
            Lang::Fortran => "lanaifort",
        }
    }

    fn compiler(self) -> String {
        knobs::get(match self {
            Lang::C => &knobs::CC,
            Lang::Cxx => &knobs::CXX,
            Lang::Fortran => &knobs::FC,
        })
    }

    fn knob(self) -> &'static str {
        match self {
            Lang::C => knobs::CC.name,
            Lang::Cxx => knobs::CXX.name,
            Lang::Fortran => knobs::FC.name,
        }
    }
}

/// The install prefix: the directory above this binary's `bin/`.
fn prefix() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent()?.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// MPICH's Fortran layer: (directory of `mpi.mod`, directory of
/// `libmpichfort.so`).
fn fortran_layer() -> Result<(PathBuf, PathBuf), String> {
    let setting = knobs::get(&knobs::FORTRAN_LAYER);
    if setting != "auto" {
        return match setting.split_once(':') {
            Some((inc, lib)) => Ok((inc.into(), lib.into())),
            None => Err(format!(
                "{}={setting:?}: expected 'auto' or INCDIR:LIBDIR",
                knobs::FORTRAN_LAYER.name
            )),
        };
    }
    let multiarch = [
        "x86_64-linux-gnu",
        "aarch64-linux-gnu",
        "powerpc64le-linux-gnu",
    ];
    let incs = multiarch
        .iter()
        .map(|t| format!("/usr/include/{t}/mpich"))
        .chain(["/usr/include/mpich".to_string()]);
    let libs = multiarch
        .iter()
        .map(|t| format!("/usr/lib/{t}"))
        .chain(["/usr/lib64".to_string(), "/usr/lib".to_string()]);
    let inc = incs.map(PathBuf::from).find(|d| d.join("mpi.mod").exists());
    let lib = libs
        .map(PathBuf::from)
        .find(|d| d.join("libmpichfort.so").exists());
    match (inc, lib) {
        (Some(i), Some(l)) => Ok((i, l)),
        _ => Err(format!(
            "MPICH's Fortran layer (mpi.mod, libmpichfort.so) was not found; install it \
             (Debian: apt install libmpich-dev gfortran) or set {}=INCDIR:LIBDIR",
            knobs::FORTRAN_LAYER.name
        )),
    }
}

fn compile_flags(lang: Lang, pre: &Path) -> Result<Vec<String>, String> {
    Ok(match lang {
        Lang::C | Lang::Cxx => vec![format!("-I{}", pre.join("include").display())],
        Lang::Fortran => {
            let (inc, _) = fortran_layer()?;
            let mut v = vec![format!("-I{}", inc.display())];
            // mpif.h and `use mpi` pass any buffer to one interface, which
            // gfortran 10 and later reject unless told otherwise.
            if lang.compiler().contains("gfortran") {
                v.push("-fallow-argument-mismatch".into());
            }
            v
        }
    })
}

fn link_flags(lang: Lang, pre: &Path) -> Result<Vec<String>, String> {
    let lib = pre.join("lib");
    Ok(match lang {
        Lang::C | Lang::Cxx => vec![
            format!("-L{}", lib.display()),
            format!("-Wl,-rpath,{}", lib.display()),
            "-lmpi".into(),
        ],
        Lang::Fortran => {
            let (_, layer) = fortran_layer()?;
            vec![
                format!("-L{}", lib.display()),
                "-Wl,--disable-new-dtags".into(),
                format!("-Wl,-rpath,{}", lib.display()),
                format!("-L{}", layer.display()),
                "-lmpichfort".into(),
                "-lmpi".into(),
            ]
        }
    })
}

fn fail(lang: Lang, why: &str) -> ExitCode {
    eprintln!("{}: {why}", lang.tool());
    ExitCode::from(1)
}

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let name = argv
        .next()
        .and_then(|a| {
            Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let lang = Lang::of(&name);
    let args: Vec<String> = argv.collect();
    let pre = prefix();
    let cc = lang.compiler();
    let mut show = false;
    let mut user = Vec::new();
    for a in &args {
        match a.as_str() {
            "-show" | "--show" => show = true,
            "-compile_info" | "--compile_info" => {
                return match compile_flags(lang, &pre) {
                    Ok(f) => {
                        println!("{} {}", cc, f.join(" "));
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(lang, &e),
                };
            }
            "-link_info" | "--link_info" => {
                return match link_flags(lang, &pre) {
                    Ok(f) => {
                        println!("{} {}", cc, f.join(" "));
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(lang, &e),
                };
            }
            "-v" | "--version" if args.len() == 1 => {
                println!(
                    "{} (Lanai) {} wrapping {cc}",
                    lang.tool(),
                    lanai_common::VERSION
                );
                return ExitCode::SUCCESS;
            }
            _ => user.push(a.clone()),
        }
    }
    // Only compiling (-c, -E, -S): linker flags would just draw warnings.
    let link = !user
        .iter()
        .any(|a| a == "-c" || a == "-E" || a == "-S" || a == "-M" || a == "-MM");
    let mut full = match compile_flags(lang, &pre) {
        Ok(f) => f,
        Err(e) => return fail(lang, &e),
    };
    full.extend(user);
    if link {
        match link_flags(lang, &pre) {
            Ok(f) => full.extend(f),
            Err(e) => return fail(lang, &e),
        }
    }
    if show {
        println!("{} {}", cc, full.join(" "));
        return ExitCode::SUCCESS;
    }
    if args.is_empty() {
        return fail(lang, &format!("no input files (try {} -show)", lang.tool()));
    }
    match Command::new(&cc).args(&full).status() {
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!(
                "{}: cannot run the compiler {cc:?}: {e} (set {})",
                lang.tool(),
                lang.knob()
            );
            ExitCode::from(127)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_picks_the_language() {
        for n in ["lanaicc", "mpicc", "mpicc.lanai"] {
            assert_eq!(Lang::of(n), Lang::C, "{n}");
        }
        for n in ["lanaicxx", "mpicxx", "mpic++", "mpiCC"] {
            assert_eq!(Lang::of(n), Lang::Cxx, "{n}");
        }
        for n in ["lanaifort", "mpifort", "mpif90", "mpif77"] {
            assert_eq!(Lang::of(n), Lang::Fortran, "{n}");
        }
    }
}
