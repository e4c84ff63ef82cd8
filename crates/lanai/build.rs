//! Sets the SONAME so the library is a drop-in `libmpi.so.12`, and generates
//! stubs for every MPI function in `abi-functions.txt` that `src/abi/` does
//! not implement yet, so that every symbol an MPICH-built program may import
//! exists. A stub reports `MPI_ERR_UNSUPPORTED_OPERATION` through
//! `crate::abi::unsupported`.
//!
//! Stubs take no parameters: on the SysV x86-64 ABI a C caller may pass
//! arguments to such a function, and they are simply ignored. Only functions
//! returning `int` can be stubbed this way; any other unimplemented function
//! fails the build, because it must be written by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

const FUNCTION_LIST: &str = "abi-functions.txt";
const ABI_DIR: &str = "src/abi";

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={FUNCTION_LIST}");
    println!("cargo:rerun-if-changed={ABI_DIR}");

    let manifest_dir = PathBuf::from(env_var("CARGO_MANIFEST_DIR"));
    let listed = read_function_list(&manifest_dir.join(FUNCTION_LIST));

    let mut sources = Vec::new();
    collect_rs_files(&manifest_dir.join(ABI_DIR), &mut sources);
    sources.sort();
    let mut implemented: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut duplicates = Vec::new();
    for path in &sources {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        for name in implemented_names(&strip_comments(&text)) {
            if let Some(first) = implemented.insert(name.clone(), path.clone()) {
                duplicates.push(format!(
                    "{name} (in {} and {})",
                    first.display(),
                    path.display()
                ));
            }
        }
    }
    if !duplicates.is_empty() {
        panic!(
            "MPI functions implemented more than once: {}",
            duplicates.join(", ")
        );
    }
    for name in implemented.keys() {
        if !listed.contains_key(name) {
            println!("cargo:warning={name} is implemented but not listed in {FUNCTION_LIST}");
        }
    }

    let missing: Vec<(&String, &String)> = listed
        .iter()
        .filter(|(name, _)| !implemented.contains_key(*name))
        .collect();
    let not_int: Vec<String> = missing
        .iter()
        .filter(|(_, ret)| ret.as_str() != "int")
        .map(|(name, ret)| format!("{ret} {name}"))
        .collect();
    if !not_int.is_empty() {
        panic!(
            "these MPI functions do not return int, so no stub can be generated; \
             implement them with mpi_fn! under {ABI_DIR}: {}",
            not_int.join(", ")
        );
    }

    let out_dir = PathBuf::from(env_var("OUT_DIR"));
    let stubs = render_stubs(missing.iter().map(|(name, _)| name.as_str()));
    let out = out_dir.join("stubs.rs");
    fs::write(&out, stubs).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

fn env_var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo did not set {name}"))
}

/// Parses `<return-type> <MPI_name>` lines; blank lines and `#` comments are skipped.
fn read_function_list(path: &Path) -> BTreeMap<String, String> {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut list = BTreeMap::new();
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (ret, name) = match line.rsplit_once(char::is_whitespace) {
            Some((ret, name)) if name.starts_with("MPI_") && is_ident(name) => (ret.trim(), name),
            _ => panic!(
                "{}:{}: expected `<return-type> MPI_<name>`, got `{line}`",
                path.display(),
                lineno + 1
            ),
        };
        if list.insert(name.to_string(), ret.to_string()).is_some() {
            panic!("{}:{}: {name} listed twice", path.display(), lineno + 1);
        }
    }
    list
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            collect_rs_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Removes `//` and `/* */` comments, so that examples in docs do not count
/// as implementations. String literals are not parsed; a `//` inside one only
/// hides the rest of that line, which cannot hold an `mpi_fn!` header anyway.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
            out.push(' ');
        } else {
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
    }
    out
}

/// Names defined as `mpi_fn! { MPI_Name / PMPI_Name ... }` (or with `(`).
fn implemented_names(text: &str) -> Vec<String> {
    const MACRO: &str = "mpi_fn!";
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find(MACRO) {
        rest = &rest[pos + MACRO.len()..];
        let body = rest.trim_start();
        let Some(body) = body.strip_prefix(['{', '(']) else {
            continue;
        };
        let body = body.trim_start();
        let end = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body.len());
        let (name, after) = body.split_at(end);
        if name.starts_with("MPI_") && after.trim_start().starts_with('/') {
            names.push(name.to_string());
        }
    }
    names.extend(helper_macro_names(text));
    names
}

/// Names defined through a local macro that forwards to `mpi_fn!`, written
/// `some_macro!(MPI_Name, PMPI_Name, ...)`; a macro that defines several
/// functions lists their pairs one after another.
fn helper_macro_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find("!(") {
        rest = &rest[pos + 2..];
        let mut args = rest;
        while let Some((name, after)) = name_pair(args) {
            names.push(name.to_string());
            match after.trim_start().strip_prefix(',') {
                Some(more) => args = more,
                None => break,
            }
        }
    }
    names
}

/// `MPI_Name, PMPI_Name` at the start of `s` (rustfmt may break lines
/// anywhere between them): the name and the text after the pair.
fn name_pair(s: &str) -> Option<(&str, &str)> {
    let ident_end = |t: &str| {
        t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len())
    };
    let body = s.trim_start();
    if !body.starts_with("MPI_") {
        return None;
    }
    let (name, after) = body.split_at(ident_end(body));
    let next = after.trim_start().strip_prefix(',')?.trim_start();
    let (pname, after) = next.split_at(ident_end(next));
    (pname.strip_prefix('P') == Some(name)).then_some((name, after))
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn render_stubs<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from(
        "// Generated by build.rs: MPI functions not implemented yet.\n\
         // Each reports MPI_ERR_UNSUPPORTED_OPERATION through the error handler.\n",
    );
    let mut seen = BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            continue;
        }
        let suffix = &name["MPI_".len()..];
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "\n#[no_mangle]\n\
             pub extern \"C\" fn PMPI_{suffix}() -> ::std::os::raw::c_int {{\n    \
             crate::abi::unsupported(\"{name}\")\n}}\n\
             \n#[no_mangle]\n\
             pub extern \"C\" fn {name}() -> ::std::os::raw::c_int {{\n    \
             PMPI_{suffix}()\n}}\n"
        );
    }
    out
}
