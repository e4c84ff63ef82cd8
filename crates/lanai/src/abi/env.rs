//! Environment management: init, finalize and queries. Error handlers are
//! in `errhandler.rs`, attributes in `attr.rs`.

use super::consts as c;
use super::consts::MPI_Comm;
use super::{call, comm_idx, errors, state};
use crate::engine::error::MpiError;
use crate::engine::Engine;
use crate::mpi_fn;
use std::ffi::c_char;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

static THREAD_LEVEL: AtomicI32 = AtomicI32::new(c::MPI_THREAD_SINGLE);

/// The PMI socket the launcher passed, if any.
fn pmi_stream() -> Result<Option<std::fs::File>, MpiError> {
    let Ok(v) = std::env::var("PMI_FD") else {
        return Ok(None);
    };
    let fd: i32 = v
        .trim()
        .parse()
        .map_err(|_| MpiError::other(format!("PMI_FD={v:?} is not a file descriptor")))?;
    if nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).is_err() {
        return Err(MpiError::other(format!("PMI_FD={fd} is not open")));
    }
    // Children (the offload engine, user-spawned tools) must not inherit it.
    let _ = nix::fcntl::fcntl(
        fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    );
    // SAFETY: the launcher handed this descriptor to us alone, it is open
    // (checked above), and nothing else in the process owns it.
    Ok(Some(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd)
    }))
}

/// Lanai's allocator (`lib.rs`) commits memory as it is touched, as
/// glibc does, rather than a whole arena up front: a rank's resident size
/// stays near what it uses. An explicit `MIMALLOC_ARENA_EAGER_COMMIT` wins.
fn quiet_allocator() {
    // `mi_option_arena_eager_commit` in mimalloc 2's `mimalloc.h`, which the
    // bindings leave out.
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    // SAFETY: sets a default in mimalloc's option table; any value is
    // valid for this option, and it only steers how later arenas commit.
    unsafe { libmimalloc_sys::mi_option_set_default(ARENA_EAGER_COMMIT, 0) };
}

fn init(name: &str, required: c_int, provided: *mut c_int) -> c_int {
    match state::phase() {
        state::NOT_STARTED => {}
        state::RUNNING => errors::fatal(&format!("{name}: MPI is already initialized")),
        _ => errors::fatal(&format!(
            "{name}: MPI cannot be initialized again after MPI_Finalize"
        )),
    }
    quiet_allocator();
    let _ = epoch();
    let level = required.clamp(c::MPI_THREAD_SINGLE, c::MPI_THREAD_SERIALIZED);
    THREAD_LEVEL.store(level, Ordering::Relaxed);
    if !provided.is_null() {
        // SAFETY: MPI_Init_thread's `provided` points to an int.
        unsafe { *provided = level };
    }
    match pmi_stream().and_then(Engine::init) {
        Ok(e) => {
            state::install(e);
            c::MPI_SUCCESS
        }
        Err(e) => errors::fatal(&format!("{name}: {}", e.msg)),
    }
}

mpi_fn! { MPI_Init / PMPI_Init (_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    init("MPI_Init", c::MPI_THREAD_SINGLE, std::ptr::null_mut())
}}

mpi_fn! { MPI_Init_thread / PMPI_Init_thread (_argc: *mut c_int, _argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int {
    init("MPI_Init_thread", required, provided)
}}

mpi_fn! { MPI_Initialized / PMPI_Initialized (flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return errors::raise("MPI_Initialized", None, MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
    }
    // SAFETY: checked non-null; points to an int per the standard.
    unsafe { *flag = c_int::from(state::phase() != state::NOT_STARTED) };
    c::MPI_SUCCESS
}}

mpi_fn! { MPI_Finalized / PMPI_Finalized (flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return errors::raise("MPI_Finalized", None, MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
    }
    // SAFETY: checked non-null; points to an int per the standard.
    unsafe { *flag = c_int::from(state::phase() == state::FINALIZED) };
    c::MPI_SUCCESS
}}

mpi_fn! { MPI_Finalize / PMPI_Finalize () -> c_int {
    // Attribute delete callbacks on MPI_COMM_SELF run first, while MPI is whole.
    let rc = super::attr::at_finalize();
    if rc != c::MPI_SUCCESS {
        return rc;
    }
    let rc = call("MPI_Finalize", None, |e| e.finalize());
    if rc == c::MPI_SUCCESS {
        state::set_finalized();
    }
    rc
}}

mpi_fn! { MPI_Query_thread / PMPI_Query_thread (provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return errors::raise("MPI_Query_thread", None, MpiError::new(c::MPI_ERR_ARG, "provided is NULL"));
    }
    // SAFETY: checked non-null.
    unsafe { *provided = THREAD_LEVEL.load(Ordering::Relaxed) };
    c::MPI_SUCCESS
}}

mpi_fn! { MPI_Is_thread_main / PMPI_Is_thread_main (flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return errors::raise("MPI_Is_thread_main", None, MpiError::new(c::MPI_ERR_ARG, "flag is NULL"));
    }
    // SAFETY: checked non-null.
    unsafe { *flag = c_int::from(state::is_main_thread()) };
    c::MPI_SUCCESS
}}

mpi_fn! { MPI_Abort / PMPI_Abort (comm: MPI_Comm, errorcode: c_int) -> c_int {
    let _ = comm;
    let rank = state::with_engine(|e| Ok(e.job.rank)).unwrap_or(0);
    let msg = format!("MPI_Abort called by rank {rank} with error code {errorcode}");
    let _ = state::with_engine(|e| -> Result<(), MpiError> { e.abort(errorcode, &msg) });
    std::process::exit(errorcode)
}}

mpi_fn! { MPI_Get_version / PMPI_Get_version (version: *mut c_int, subversion: *mut c_int) -> c_int {
    if version.is_null() || subversion.is_null() {
        return errors::raise("MPI_Get_version", None, MpiError::new(c::MPI_ERR_ARG, "NULL argument"));
    }
    // SAFETY: both checked non-null.
    unsafe {
        *version = c::MPI_VERSION;
        *subversion = c::MPI_SUBVERSION;
    }
    c::MPI_SUCCESS
}}

/// Copies `s` into a C string buffer of `cap` bytes, NUL-terminated.
///
/// # Safety
/// `out` points to at least `cap` writable bytes.
unsafe fn write_cstr(out: *mut c_char, cap: usize, s: &str) -> c_int {
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: `n + 1 <= cap` bytes, within the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), out as *mut u8, n);
        *out.add(n) = 0;
    }
    n as c_int
}

pub fn library_version() -> String {
    format!(
        "Lanai {} (MPI {}.{}, MPICH-compatible ABI, libmpi.so.12)",
        lanai_common::VERSION,
        c::MPI_VERSION,
        c::MPI_SUBVERSION
    )
}

mpi_fn! { MPI_Get_library_version / PMPI_Get_library_version (version: *mut c_char, resultlen: *mut c_int) -> c_int {
    if version.is_null() || resultlen.is_null() {
        return errors::raise("MPI_Get_library_version", None, MpiError::new(c::MPI_ERR_ARG, "NULL argument"));
    }
    // SAFETY: the standard sizes `version` at MPI_MAX_LIBRARY_VERSION_STRING.
    unsafe { *resultlen = write_cstr(version, c::MPI_MAX_LIBRARY_VERSION_STRING as usize, &library_version()) };
    c::MPI_SUCCESS
}}

/// The name of this processor; emulated nodes get distinct names so
/// programs that group ranks by processor name see the emulated layout.
fn processor_name() -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into());
    let node =
        state::with_engine(|e| Ok((e.job.node_count(), e.job.my_node(), e.job.single_host))).ok();
    match node {
        Some((n, k, true)) if n > 1 => format!("{host}-node{k}"),
        _ => host,
    }
}

mpi_fn! { MPI_Get_processor_name / PMPI_Get_processor_name (name: *mut c_char, resultlen: *mut c_int) -> c_int {
    if name.is_null() || resultlen.is_null() {
        return errors::raise("MPI_Get_processor_name", None, MpiError::new(c::MPI_ERR_ARG, "NULL argument"));
    }
    // SAFETY: the standard sizes `name` at MPI_MAX_PROCESSOR_NAME.
    unsafe { *resultlen = write_cstr(name, c::MPI_MAX_PROCESSOR_NAME as usize, &processor_name()) };
    c::MPI_SUCCESS
}}

fn epoch() -> std::time::Instant {
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

mpi_fn! { MPI_Wtime / PMPI_Wtime () -> f64 {
    epoch().elapsed().as_secs_f64()
}}

mpi_fn! { MPI_Wtick / PMPI_Wtick () -> f64 {
    1e-9
}}

mpi_fn! { MPI_Comm_rank / PMPI_Comm_rank (comm: MPI_Comm, rank: *mut c_int) -> c_int {
    call("MPI_Comm_rank", Some(comm), |e| {
        let r = e.comms.get(comm_idx(comm)?)?.rank;
        if rank.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "rank is NULL"));
        }
        // SAFETY: checked non-null.
        unsafe { *rank = r as c_int };
        Ok(())
    })
}}

mpi_fn! { MPI_Comm_size / PMPI_Comm_size (comm: MPI_Comm, size: *mut c_int) -> c_int {
    call("MPI_Comm_size", Some(comm), |e| {
        let s = e.comms.get(comm_idx(comm)?)?.size;
        if size.is_null() {
            return Err(MpiError::new(c::MPI_ERR_ARG, "size is NULL"));
        }
        // SAFETY: checked non-null.
        unsafe { *size = s as c_int };
        Ok(())
    })
}}
