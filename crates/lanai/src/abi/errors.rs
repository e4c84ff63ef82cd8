//! Error classes, their strings, and what happens when a call fails.

use super::consts as c;
use super::state;
use crate::engine::error::MpiError;
use lanai_common::say;
use std::os::raw::c_int;

/// The text for an error class.
pub fn class_string(class: c_int) -> &'static str {
    match class {
        c::MPI_SUCCESS => "no error",
        c::MPI_ERR_BUFFER => "invalid buffer pointer",
        c::MPI_ERR_COUNT => "invalid count argument",
        c::MPI_ERR_TYPE => "invalid datatype",
        c::MPI_ERR_TAG => "invalid tag",
        c::MPI_ERR_COMM => "invalid communicator",
        c::MPI_ERR_RANK => "invalid rank",
        c::MPI_ERR_ROOT => "invalid root",
        c::MPI_ERR_GROUP => "invalid group",
        c::MPI_ERR_OP => "invalid reduction operation",
        c::MPI_ERR_TOPOLOGY => "invalid topology",
        c::MPI_ERR_DIMS => "invalid dimension argument",
        c::MPI_ERR_ARG => "invalid argument",
        c::MPI_ERR_UNKNOWN => "unknown error",
        c::MPI_ERR_TRUNCATE => "message truncated",
        c::MPI_ERR_OTHER => "other error",
        c::MPI_ERR_INTERN => "internal error",
        c::MPI_ERR_IN_STATUS => "error code is in status",
        c::MPI_ERR_PENDING => "pending request",
        c::MPI_ERR_REQUEST => "invalid request",
        c::MPI_ERR_KEYVAL => "invalid keyval",
        c::MPI_ERR_INFO => "invalid info object",
        c::MPI_ERR_NO_MEM => "out of memory",
        c::MPI_ERR_UNSUPPORTED_OPERATION => "operation not supported by Lanai yet",
        c::MPI_ERR_NOT_SAME => "collective arguments not identical across processes",
        c::MPI_ERR_WIN => "invalid window",
        c::MPI_ERR_BASE => "invalid base address",
        c::MPI_ERR_SIZE => "invalid size",
        c::MPI_ERR_DISP => "invalid displacement unit",
        c::MPI_ERR_RMA_ATTACH => "memory cannot be attached to the window",
        c::MPI_ERR_RMA_SHARED => "memory cannot be shared",
        c::MPI_ERR_RMA_FLAVOR => "wrong window flavor",
        _ => "unknown error class",
    }
}

/// Whether `code` is a valid error code (classes are their own codes here).
pub fn is_valid(code: c_int) -> bool {
    (0..=c::MPI_ERR_LASTCODE).contains(&code)
}

/// Reports a failed call through the error handler of `comm_idx`: returns
/// the class under `MPI_ERRORS_RETURN` or after a user handler ran, or
/// prints one line and ends the job.
pub fn raise(func: &str, comm_idx: Option<usize>, err: MpiError) -> c_int {
    let (handle, errh) = super::errhandler::handler_for(comm_idx);
    raise_to(func, handle, errh, err)
}

/// Reports a failed call through error handler `errh` of the object
/// `handle` (a communicator or a window), as [`raise`] does.
pub fn raise_to(func: &str, handle: c_int, errh: c_int, err: MpiError) -> c_int {
    if errh == c::MPI_ERRORS_RETURN {
        return err.class;
    }
    if let Some(f) = super::errhandler::user_function(errh) {
        // Runs with no engine borrow held: the handler may call MPI.
        return super::errhandler::invoke(f, handle, err.class);
    }
    if err.peer_failure {
        // This is an echo of another rank's failure; the launcher is about to
        // end the job and name that rank. A dying process can take a second
        // or so to be reaped, so wait a little before aborting ourselves.
        say!("lanai: {func}: {}", err.msg);
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    fatal(&format!("{func}: {}", err.msg))
}

/// Prints `lanai: <msg>` and ends the job with exit code 1.
pub fn fatal(msg: &str) -> ! {
    lanai_common::say!("lanai: {msg}");
    let _ = state::with_engine(|e| -> Result<(), MpiError> { e.abort(1, msg) });
    std::process::exit(1)
}

/// What every function Lanai does not implement yet returns.
pub fn unsupported(name: &'static str) -> c_int {
    raise(
        name,
        None,
        MpiError::new(
            c::MPI_ERR_UNSUPPORTED_OPERATION,
            "not supported by Lanai yet (see the README's list)",
        ),
    )
}
