//! Info objects: ordered (key, value) string pairs, `MPI_INFO_ENV`, and the
//! info hints of communicators (Lanai acts on none, so it keeps none).
//!
//! Info calls are local and may come before `MPI_Init`, so the table lives
//! here rather than on the engine. Keys and values are kept as the bytes
//! the program gave.

use super::consts as c;
use super::consts::{MPI_Comm, MPI_Info};
use super::errhandler::report;
use super::{comm_idx, state};
use crate::engine::error::{MpiError, MpiResult};
use crate::mpi_fn;
use std::ffi::{c_char, CStr};
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

/// User infos: MPICH's "direct" kind for info objects, plus an index.
const USER_INFO_BASE: MPI_Info = 0x9c00_0000_u32 as MPI_Info;
const INDEX_MASK: c_int = 0x03ff_ffff;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

struct Infos {
    /// `MPI_INFO_ENV`, filled on first use.
    env: Option<Pairs>,
    /// User infos by index; `None` once freed (indices are not reused, so a
    /// stale handle is caught).
    user: Vec<Option<Pairs>>,
}

static INFOS: Mutex<Infos> = Mutex::new(Infos {
    env: None,
    user: Vec::new(),
});

/// The table; each update is a single step, so a poisoned lock (a panic
/// elsewhere) still holds consistent data.
fn infos() -> MutexGuard<'static, Infos> {
    INFOS.lock().unwrap_or_else(|p| p.into_inner())
}

/// What `MPI_INFO_ENV` holds: the keys the standard suggests that Lanai
/// can know in every process.
fn env_pairs() -> Pairs {
    let mut out: Pairs = Vec::new();
    if let Ok(cmdline) = std::fs::read("/proc/self/cmdline") {
        let mut args = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty());
        if let Some(cmd) = args.next() {
            out.push((b"command".to_vec(), cmd.to_vec()));
        }
        let rest: Vec<&[u8]> = args.collect();
        if !rest.is_empty() {
            out.push((b"argv".to_vec(), rest.join(&b' ')));
        }
    }
    if let Ok(n) = state::with_engine(|e| Ok(e.job.size)) {
        out.push((b"maxprocs".to_vec(), n.to_string().into_bytes()));
    }
    if let Ok(d) = std::env::current_dir() {
        out.push((
            b"wdir".to_vec(),
            d.to_string_lossy().into_owned().into_bytes(),
        ));
    }
    if let Ok(h) = nix::unistd::gethostname() {
        out.push((
            b"host".to_vec(),
            h.to_string_lossy().into_owned().into_bytes(),
        ));
    }
    out.retain(|(_, v)| v.len() <= c::MPI_MAX_INFO_VAL as usize);
    out
}

fn bad_info(h: MPI_Info) -> MpiError {
    if h == c::MPI_INFO_NULL {
        MpiError::new(c::MPI_ERR_INFO, "invalid info object MPI_INFO_NULL")
    } else {
        MpiError::new(
            c::MPI_ERR_INFO,
            format!("invalid or freed info object 0x{:08x}", h as u32),
        )
    }
}

/// Runs `f` on the pairs of info `h`.
fn with_info<R>(h: MPI_Info, f: impl FnOnce(&mut Pairs) -> MpiResult<R>) -> MpiResult<R> {
    let mut t = infos();
    if h == c::MPI_INFO_ENV {
        let env = t.env.get_or_insert_with(env_pairs);
        return f(env);
    }
    if h & !INDEX_MASK != USER_INFO_BASE {
        return Err(bad_info(h));
    }
    match t.user.get_mut((h & INDEX_MASK) as usize) {
        Some(Some(p)) => f(p),
        _ => Err(bad_info(h)),
    }
}

/// Checks an info argument that may also be `MPI_INFO_NULL` (communicator
/// constructors and `MPI_Comm_set_info` take hints but need none).
pub fn check_arg(h: MPI_Info) -> MpiResult<()> {
    if h == c::MPI_INFO_NULL {
        return Ok(());
    }
    with_info(h, |_| Ok(()))
}

pub(super) fn new_info(pairs: Pairs, out: *mut MPI_Info) -> MpiResult<()> {
    if out.is_null() {
        return Err(MpiError::new(c::MPI_ERR_ARG, "info is NULL"));
    }
    let mut t = infos();
    let i = t.user.len();
    if i > INDEX_MASK as usize {
        return Err(MpiError::new(c::MPI_ERR_NO_MEM, "too many info objects"));
    }
    t.user.push(Some(pairs));
    // SAFETY: checked non-null; the caller's output argument.
    unsafe { *out = USER_INFO_BASE | i as c_int };
    Ok(())
}

/// Reads a key argument and checks its length.
///
/// # Safety
/// `key` is null (rejected) or a NUL-terminated C string.
unsafe fn key_arg<'a>(key: *const c_char) -> MpiResult<&'a [u8]> {
    if key.is_null() {
        return Err(MpiError::new(c::MPI_ERR_INFO_KEY, "key is NULL"));
    }
    // SAFETY: non-null and NUL-terminated per the contract.
    let k = unsafe { CStr::from_ptr(key) }.to_bytes();
    if k.is_empty() {
        return Err(MpiError::new(c::MPI_ERR_INFO_KEY, "key is empty"));
    }
    if k.len() > c::MPI_MAX_INFO_KEY as usize {
        return Err(MpiError::new(
            c::MPI_ERR_INFO_KEY,
            format!(
                "key is {} characters long (at most MPI_MAX_INFO_KEY = {})",
                k.len(),
                c::MPI_MAX_INFO_KEY
            ),
        ));
    }
    Ok(k)
}

/// The value of `key` in info `h`, if set.
fn lookup(h: MPI_Info, key: &[u8]) -> MpiResult<Option<Vec<u8>>> {
    with_info(h, |p| {
        Ok(p.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
    })
}

/// Copies `s` and a NUL into `out`, truncated to `room` bytes before the NUL.
///
/// # Safety
/// `out` points to at least `room + 1` writable bytes.
unsafe fn write_bytes(out: *mut c_char, room: usize, s: &[u8]) {
    let n = s.len().min(room);
    // SAFETY: `n + 1 <= room + 1` bytes, within the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), out as *mut u8, n);
        *out.add(n) = 0;
    }
}

fn check_out<T>(p: *mut T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        Err(MpiError::new(c::MPI_ERR_ARG, format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

mpi_fn! { MPI_Info_create / PMPI_Info_create (info: *mut MPI_Info) -> c_int {
    report("MPI_Info_create", None, new_info(Vec::new(), info))
}}

mpi_fn! { MPI_Info_create_env / PMPI_Info_create_env (_argc: c_int, _argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int {
    let r = with_info(c::MPI_INFO_ENV, |p| Ok(p.clone())).and_then(|p| new_info(p, info));
    report("MPI_Info_create_env", None, r)
}}

mpi_fn! { MPI_Info_dup / PMPI_Info_dup (info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    let r = with_info(info, |p| Ok(p.clone())).and_then(|p| new_info(p, newinfo));
    report("MPI_Info_dup", None, r)
}}

mpi_fn! { MPI_Info_free / PMPI_Info_free (info: *mut MPI_Info) -> c_int {
    let r = (|| {
        check_out(info, "info")?;
        // SAFETY: checked non-null; the caller's handle.
        let h = unsafe { *info };
        if h == c::MPI_INFO_ENV {
            return Err(MpiError::new(c::MPI_ERR_INFO, "cannot free MPI_INFO_ENV"));
        }
        with_info(h, |_| Ok(()))?;
        if let Some(slot) = infos().user.get_mut((h & INDEX_MASK) as usize) {
            *slot = None;
        }
        // SAFETY: checked non-null above.
        unsafe { *info = c::MPI_INFO_NULL };
        Ok(())
    })();
    report("MPI_Info_free", None, r)
}}

mpi_fn! { MPI_Info_set / PMPI_Info_set (info: MPI_Info, key: *const c_char, value: *const c_char) -> c_int {
    let r = (|| {
        // SAFETY: C strings per the standard; null is rejected inside.
        let k = unsafe { key_arg(key) }?;
        if value.is_null() {
            return Err(MpiError::new(c::MPI_ERR_INFO_VALUE, "value is NULL"));
        }
        // SAFETY: non-null, NUL-terminated per the standard.
        let v = unsafe { CStr::from_ptr(value) }.to_bytes();
        if v.len() > c::MPI_MAX_INFO_VAL as usize {
            return Err(MpiError::new(
                c::MPI_ERR_INFO_VALUE,
                format!("value is {} characters long (at most MPI_MAX_INFO_VAL = {})", v.len(), c::MPI_MAX_INFO_VAL),
            ));
        }
        with_info(info, |p| {
            match p.iter_mut().find(|(pk, _)| pk == k) {
                Some(slot) => slot.1 = v.to_vec(),
                None => p.push((k.to_vec(), v.to_vec())),
            }
            Ok(())
        })
    })();
    report("MPI_Info_set", None, r)
}}

mpi_fn! { MPI_Info_delete / PMPI_Info_delete (info: MPI_Info, key: *const c_char) -> c_int {
    let r = (|| {
        // SAFETY: a C string per the standard; null is rejected inside.
        let k = unsafe { key_arg(key) }?;
        with_info(info, |p| {
            let before = p.len();
            p.retain(|(pk, _)| pk != k);
            if p.len() == before {
                return Err(MpiError::new(
                    c::MPI_ERR_INFO_NOKEY,
                    format!("key \"{}\" is not set", String::from_utf8_lossy(k)),
                ));
            }
            Ok(())
        })
    })();
    report("MPI_Info_delete", None, r)
}}

mpi_fn! { MPI_Info_get / PMPI_Info_get (info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    let r = (|| {
        // SAFETY: a C string per the standard; null is rejected inside.
        let k = unsafe { key_arg(key) }?;
        if valuelen < 0 {
            return Err(MpiError::new(c::MPI_ERR_ARG, format!("invalid valuelen {valuelen}")));
        }
        check_out(flag, "flag")?;
        let v = lookup(info, k)?;
        if v.is_some() {
            check_out(value, "value")?;
        }
        // SAFETY: `flag` checked non-null; `value` holds valuelen + 1
        // chars, as the standard requires of the caller.
        unsafe {
            *flag = c_int::from(v.is_some());
            if let Some(v) = v {
                write_bytes(value, valuelen as usize, &v);
            }
        }
        Ok(())
    })();
    report("MPI_Info_get", None, r)
}}

mpi_fn! { MPI_Info_get_valuelen / PMPI_Info_get_valuelen (info: MPI_Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) -> c_int {
    let r = (|| {
        // SAFETY: a C string per the standard; null is rejected inside.
        let k = unsafe { key_arg(key) }?;
        check_out(valuelen, "valuelen")?;
        check_out(flag, "flag")?;
        let v = lookup(info, k)?;
        // SAFETY: both checked non-null.
        unsafe {
            *flag = c_int::from(v.is_some());
            if let Some(v) = v {
                *valuelen = v.len() as c_int;
            }
        }
        Ok(())
    })();
    report("MPI_Info_get_valuelen", None, r)
}}

mpi_fn! { MPI_Info_get_string / PMPI_Info_get_string (info: MPI_Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    let r = (|| {
        // SAFETY: a C string per the standard; null is rejected inside.
        let k = unsafe { key_arg(key) }?;
        check_out(buflen, "buflen")?;
        check_out(flag, "flag")?;
        // SAFETY: checked non-null.
        let room = unsafe { *buflen };
        if room < 0 {
            return Err(MpiError::new(c::MPI_ERR_ARG, format!("invalid buflen {room}")));
        }
        let v = lookup(info, k)?;
        if v.is_some() && room > 0 {
            check_out(value, "value")?;
        }
        // SAFETY: `flag` and `buflen` checked non-null; `value` holds
        // `room` chars, as the standard requires of the caller.
        unsafe {
            *flag = c_int::from(v.is_some());
            if let Some(v) = v {
                if room > 0 {
                    write_bytes(value, room as usize - 1, &v);
                }
                *buflen = v.len() as c_int + 1;
            }
        }
        Ok(())
    })();
    report("MPI_Info_get_string", None, r)
}}

mpi_fn! { MPI_Info_get_nkeys / PMPI_Info_get_nkeys (info: MPI_Info, nkeys: *mut c_int) -> c_int {
    let r = (|| {
        check_out(nkeys, "nkeys")?;
        let n = with_info(info, |p| Ok(p.len()))?;
        // SAFETY: checked non-null.
        unsafe { *nkeys = n as c_int };
        Ok(())
    })();
    report("MPI_Info_get_nkeys", None, r)
}}

mpi_fn! { MPI_Info_get_nthkey / PMPI_Info_get_nthkey (info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    let r = (|| {
        check_out(key, "key")?;
        let k = with_info(info, |p| {
            usize::try_from(n)
                .ok()
                .and_then(|i| p.get(i))
                .map(|(k, _)| k.clone())
                .ok_or_else(|| {
                    MpiError::new(
                        c::MPI_ERR_ARG,
                        format!("key number {n} does not exist (the info has {} keys)", p.len()),
                    )
                })
        })?;
        // SAFETY: the caller's buffer holds MPI_MAX_INFO_KEY + 1 chars, and
        // stored keys are at most MPI_MAX_INFO_KEY long.
        unsafe { write_bytes(key, c::MPI_MAX_INFO_KEY as usize, &k) };
        Ok(())
    })();
    report("MPI_Info_get_nthkey", None, r)
}}

// ---- Communicator hints ----

fn check_comm(comm: MPI_Comm) -> MpiResult<()> {
    state::with_engine(|e| {
        e.comms.get(comm_idx(comm)?)?;
        Ok(())
    })
}

mpi_fn! { MPI_Comm_set_info / PMPI_Comm_set_info (comm: MPI_Comm, info: MPI_Info) -> c_int {
    // Lanai acts on no communicator hint, and the standard lets it drop
    // those it ignores; the arguments are still checked.
    let r = check_comm(comm).and_then(|()| check_arg(info));
    report("MPI_Comm_set_info", Some(comm), r)
}}

mpi_fn! { MPI_Comm_get_info / PMPI_Comm_get_info (comm: MPI_Comm, info_used: *mut MPI_Info) -> c_int {
    // A new, empty info: no hint is in effect (see MPI_Comm_set_info).
    let r = check_comm(comm).and_then(|()| new_info(Vec::new(), info_used));
    report("MPI_Comm_get_info", Some(comm), r)
}}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_handles_and_lookup() {
        let mut h = 0;
        new_info(vec![(b"a".to_vec(), b"1".to_vec())], &mut h).unwrap();
        assert_eq!(h & !INDEX_MASK, USER_INFO_BASE);
        assert_eq!(lookup(h, b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(lookup(h, b"b").unwrap(), None);
        assert_eq!(
            lookup(c::MPI_INFO_NULL, b"a").unwrap_err().class,
            c::MPI_ERR_INFO
        );
        assert!(check_arg(c::MPI_INFO_NULL).is_ok());
        assert!(check_arg(c::MPI_INFO_ENV).is_ok());
        assert!(check_arg(USER_INFO_BASE | 0x3ff_fff0).is_err());
    }

    #[test]
    fn key_limits() {
        let long = std::ffi::CString::new(vec![b'k'; c::MPI_MAX_INFO_KEY as usize + 1]).unwrap();
        let max = std::ffi::CString::new(vec![b'k'; c::MPI_MAX_INFO_KEY as usize]).unwrap();
        let empty = std::ffi::CString::new("").unwrap();
        // SAFETY: NUL-terminated strings owned here.
        unsafe {
            assert_eq!(
                key_arg(long.as_ptr()).unwrap_err().class,
                c::MPI_ERR_INFO_KEY
            );
            assert_eq!(
                key_arg(empty.as_ptr()).unwrap_err().class,
                c::MPI_ERR_INFO_KEY
            );
            assert!(key_arg(max.as_ptr()).is_ok());
        }
    }
}
