//! One-line messages to stderr, written with a single `write` so lines from
//! many ranks sharing a terminal never interleave mid-line.

use std::io::Write;

/// Writes `args` plus a newline to stderr in one system call.
pub fn stderr_line(args: std::fmt::Arguments<'_>) {
    let mut s = args.to_string();
    s.push('\n');
    let _ = std::io::stderr().lock().write_all(s.as_bytes());
}

/// `eprintln!` for messages that must stay whole: `say!("lanai: {x}")`.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => { $crate::log::stderr_line(format_args!($($t)*)) };
}
