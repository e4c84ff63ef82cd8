//! `lanai-info`: the version, the build, and every knob with its value.
#![forbid(unsafe_code)]

use lanai_common::knobs;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--markdown") {
        // The README's knob table, generated so docs and code cannot drift.
        for k in knobs::ALL {
            println!("| `{}` | `{}` | {} |", k.name, k.default, k.help);
        }
        return;
    }
    let exe = std::env::current_exe().ok();
    let prefix = exe
        .as_ref()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| Some(p.parent()?.parent()?.to_path_buf()));
    println!("Lanai {}", lanai_common::VERSION);
    println!("  MPI standard:   4.0, MPICH-compatible ABI (libmpi.so.12)");
    println!(
        "  build:          {} {}",
        std::env::consts::ARCH,
        std::env::consts::OS
    );
    if let Some(p) = prefix {
        println!("  library:        {}", p.join("lib/libmpi.so.12").display());
        println!("  header:         {}", p.join("include/mpi.h").display());
    }
    println!(
        "  cores:          {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!();
    println!("Knobs (environment variables; * = set in this environment):");
    let w = knobs::ALL.iter().map(|k| k.name.len()).max().unwrap_or(0);
    let vw = knobs::ALL
        .iter()
        .map(|k| knobs::get(k).len())
        .max()
        .unwrap_or(0)
        .max(8);
    for k in knobs::ALL {
        let mark = if knobs::is_set(k) { '*' } else { ' ' };
        println!(
            "  {:w$} {mark}{:vw$}  {}",
            k.name,
            knobs::get(k),
            k.help,
            w = w,
            vw = vw
        );
    }
}
