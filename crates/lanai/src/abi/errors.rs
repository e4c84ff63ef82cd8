//! Error classes, their strings, and what happens when a call fails.

use super::consts as c;
use super::state;
use crate::engine::error::MpiError;
use lanai_common::say;
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

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

/// Whether `v` is a predefined error class (each is also its own code).
pub fn is_class(v: c_int) -> bool {
    (0..=CLASS_MASK).contains(&v)
}

/// Whether `code` is a predefined class or a code [`code_for`] made.
pub fn is_valid(code: c_int) -> bool {
    predefined_class_of(code).is_some()
}

// ---- Codes that carry their failure's text ----
//
// A failed call hands back a code rather than its class, as MPICH does, so
// that `MPI_Error_string` says what failed and where; programs take the
// class with `MPI_Error_class`. A code is a serial number above the class's
// 7 bits, at most MPI_ERR_LASTCODE, and the texts of the last KEPT codes
// are kept. Older codes still give their class and its text.

const CLASS_BITS: u32 = 7;
const CLASS_MASK: c_int = (1 << CLASS_BITS) - 1;
const LAST_SERIAL: u32 = (c::MPI_ERR_LASTCODE >> CLASS_BITS) as u32;
const KEPT: usize = 256;

struct Texts {
    /// The last serial handed out.
    last: u32,
    /// (serial, text), at `serial % KEPT`.
    kept: Vec<(u32, String)>,
}

static TEXTS: Mutex<Texts> = Mutex::new(Texts {
    last: 0,
    kept: Vec::new(),
});

/// The table; a panic elsewhere cannot leave it half-written.
fn texts() -> MutexGuard<'static, Texts> {
    TEXTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The code a failure of `class` hands back, with `text` kept for
/// `MPI_Error_string`. `MPI_ERR_IN_STATUS` and classes that are not
/// predefined (added ones, or codes a generalized request's function
/// returned) stay as they are: programs compare the first with `==`.
pub fn code_for(class: c_int, text: String) -> c_int {
    if class == c::MPI_SUCCESS || class == c::MPI_ERR_IN_STATUS || !is_class(class) {
        return class;
    }
    let mut t = texts();
    t.last = if t.last >= LAST_SERIAL { 1 } else { t.last + 1 };
    let serial = t.last;
    if t.kept.is_empty() {
        t.kept = vec![(0, String::new()); KEPT];
    }
    t.kept[serial as usize % KEPT] = (serial, text);
    ((serial as c_int) << CLASS_BITS) | class
}

/// The predefined class of `code`: itself for a class, the low bits for a
/// code [`code_for`] made; `None` for anything else.
pub fn predefined_class_of(code: c_int) -> Option<c_int> {
    match code {
        _ if is_class(code) => Some(code),
        _ if !(0..=c::MPI_ERR_LASTCODE).contains(&code) || code & CLASS_MASK == 0 => None,
        _ => Some(code & CLASS_MASK),
    }
}

/// What `MPI_Error_string` says of a predefined class or code.
pub fn code_string(code: c_int) -> String {
    let Some(class) = predefined_class_of(code) else {
        return class_string(-1).to_string();
    };
    if code != class {
        let serial = (code >> CLASS_BITS) as u32;
        let t = texts();
        if let Some((s, text)) = t.kept.get(serial as usize % KEPT) {
            if *s == serial {
                return text.clone();
            }
        }
    }
    class_string(class).to_string()
}

/// Reports a failed call through the error handler of `comm_idx`: returns
/// its code ([`code_for`]) under `MPI_ERRORS_RETURN` or after a user
/// handler ran, or prints one line and ends the job.
pub fn raise(func: &str, comm_idx: Option<usize>, err: MpiError) -> c_int {
    let (handle, errh) = super::errhandler::handler_for(comm_idx);
    raise_to(func, handle, errh, err)
}

/// Reports a failed call through error handler `errh` of the object
/// `handle` (a communicator or a window), as [`raise`] does.
pub fn raise_to(func: &str, handle: c_int, errh: c_int, err: MpiError) -> c_int {
    if errh == c::MPI_ERRORS_RETURN {
        return code_for(err.class, format!("{func}: {}", err.msg));
    }
    if let Some(f) = super::errhandler::user_function(errh) {
        let code = code_for(err.class, format!("{func}: {}", err.msg));
        // Runs with no engine borrow held: the handler may call MPI.
        return super::errhandler::invoke(f, handle, code);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_carry_their_class_and_text() {
        let code = code_for(c::MPI_ERR_RANK, "MPI_Send: invalid rank 7".into());
        assert_ne!(code, c::MPI_ERR_RANK);
        assert!(code > 0 && code <= c::MPI_ERR_LASTCODE);
        assert_eq!(predefined_class_of(code), Some(c::MPI_ERR_RANK));
        assert_eq!(code_string(code), "MPI_Send: invalid rank 7");
        // Classes are their own codes and keep their own text.
        assert_eq!(predefined_class_of(c::MPI_ERR_RANK), Some(c::MPI_ERR_RANK));
        assert_eq!(code_string(c::MPI_ERR_RANK), "invalid rank");
    }

    #[test]
    fn some_classes_stay_as_they_are() {
        for class in [
            c::MPI_SUCCESS,
            c::MPI_ERR_IN_STATUS,
            c::MPI_ERR_LASTCODE + 5,
        ] {
            assert_eq!(code_for(class, "x".into()), class);
        }
        assert_eq!(predefined_class_of(c::MPI_ERR_LASTCODE + 5), None);
        assert_eq!(predefined_class_of(-3), None);
        // A serial with no class bits is no code this library made.
        assert_eq!(predefined_class_of(1 << CLASS_BITS), None);
    }

    #[test]
    fn old_codes_fall_back_to_their_class_text() {
        let first = code_for(c::MPI_ERR_TAG, "MPI_Recv: tag -5".into());
        for i in 0..KEPT {
            code_for(c::MPI_ERR_COUNT, format!("MPI_Send: count -{i}"));
        }
        assert_eq!(predefined_class_of(first), Some(c::MPI_ERR_TAG));
        assert_eq!(code_string(first), "invalid tag");
    }
}
