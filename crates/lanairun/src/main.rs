//! `lanairun`: starts the ranks of an MPI job on this machine, serves PMI-1
//! to them, forwards their output, and ends the whole job when one fails.
#![deny(unsafe_code)]

mod cli;
mod job;
mod mapping;
mod output;
mod placement;
mod pmi_server;
#[allow(unsafe_code)]
mod spawn;

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = match cli::parse(std::env::args_os().skip(1)) {
        Ok(cli::Command::Help) => {
            println!("{}", cli::USAGE);
            0
        }
        Ok(cli::Command::Version) => {
            println!("lanairun (Lanai) {}", lanai_common::VERSION);
            0
        }
        Err(e) => {
            eprintln!("lanairun: {e}");
            eprintln!("{}", cli::USAGE);
            2
        }
        // `--bind-to` overrides LANAI_BIND, which is checked otherwise.
        Ok(cli::Command::Run(opts)) => {
            match opts.bind.map_or_else(job::bind_choice, |b| Ok(b.into())) {
                // A knob with a value lanairun does not know is a usage error.
                Err(e) => {
                    eprintln!("lanairun: {e}");
                    2
                }
                Ok(_) => match job::run(&opts) {
                    Ok(code) => code,
                    Err(e) => {
                        eprintln!("lanairun: {e}");
                        e.exit_code()
                    }
                },
            }
        }
    };
    ExitCode::from(code)
}
