//! Single-copy reads from another process (cross-memory attach).

use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;
use std::io::IoSliceMut;

/// Copies `dst.len()` bytes from `addr` in process `pid` into `dst`.
/// Fails with EPERM where the kernel forbids it (then rendezvous falls back).
pub fn read_from(pid: i32, addr: usize, dst: &mut [u8]) -> nix::Result<()> {
    let mut done = 0;
    while done < dst.len() {
        let remote = [RemoteIoVec {
            base: addr + done,
            len: dst.len() - done,
        }];
        let mut local = [IoSliceMut::new(&mut dst[done..])];
        let n = process_vm_readv(Pid::from_raw(pid), &mut local, &remote)?;
        if n == 0 {
            return Err(nix::Error::EFAULT);
        }
        done += n;
    }
    Ok(())
}
