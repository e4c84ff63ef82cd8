//! The buffers of buffered-mode sends: the process buffer
//! (`MPI_Buffer_attach`) and one per communicator (`MPI_Comm_attach_buffer`,
//! MPI 4.1). Lanai copies buffered data itself, so a buffer is accounting
//! only: a buffered send reserves its bytes (plus `MPI_BSEND_OVERHEAD`)
//! from its communicator's buffer, else the process buffer, and gives them
//! back when the transfer completes.
//!
//! Every pool has an id of its own, so a send's share goes back to the pool
//! it came from even after that pool's communicator was freed and its index
//! reused.

use super::error::{MpiError, MpiResult};
use crate::abi::consts as c;

/// Whose buffer a pool is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Process,
    /// A communicator, by index.
    Comm(usize),
    /// The communicator was freed while sends still held bytes; the pool
    /// lives until they complete.
    Freed,
}

#[derive(Debug)]
struct Pool {
    id: u64,
    owner: Owner,
    addr: usize,
    size: usize,
    used: usize,
}

/// A buffered send's reservation, given back when the send completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pool: u64,
    bytes: usize,
}

#[derive(Debug, Default)]
pub struct Pools {
    pools: Vec<Pool>,
    next_id: u64,
}

impl Pools {
    fn find(&self, owner: Owner) -> Option<&Pool> {
        self.pools.iter().find(|p| p.owner == owner)
    }

    /// Attaches `addr`/`size` as `owner`'s buffer (one at a time).
    pub fn attach(&mut self, owner: Owner, addr: usize, size: usize) -> MpiResult<()> {
        if self.find(owner).is_some() {
            let whose = match owner {
                Owner::Comm(_) => "this communicator",
                _ => "the process",
            };
            return Err(MpiError::new(
                c::MPI_ERR_BUFFER,
                format!("a buffer is already attached to {whose}; detach it first"),
            ));
        }
        self.next_id += 1;
        self.pools.push(Pool {
            id: self.next_id,
            owner,
            addr,
            size,
            used: 0,
        });
        Ok(())
    }

    /// The size of `owner`'s buffer, if one is attached.
    pub fn size_of(&self, owner: Owner) -> Option<usize> {
        self.find(owner).map(|p| p.size)
    }

    /// The id of `owner`'s pool, if it has one attached.
    pub fn id_of(&self, owner: Owner) -> Option<u64> {
        self.find(owner).map(|p| p.id)
    }

    /// True once no send holds bytes of pool `id` (or it is gone).
    pub fn drained(&self, id: u64) -> bool {
        self.pools.iter().all(|p| p.id != id || p.used == 0)
    }

    /// True once no send holds bytes of `owner`'s buffer (or it has none).
    pub fn owner_drained(&self, owner: Owner) -> bool {
        self.find(owner).is_none_or(|p| p.used == 0)
    }

    /// Removes `owner`'s buffer, returning (address, size); (0, 0) when
    /// none was attached. The caller waits for the drain first.
    pub fn detach(&mut self, owner: Owner) -> (usize, usize) {
        match self.pools.iter().position(|p| p.owner == owner) {
            Some(i) => {
                let p = self.pools.swap_remove(i);
                (p.addr, p.size)
            }
            None => (0, 0),
        }
    }

    /// Reserves room for a `len`-byte buffered send on communicator `comm`:
    /// from its own buffer if it has one, else from the process buffer.
    pub fn reserve(&mut self, comm: usize, len: usize) -> MpiResult<Share> {
        let need = len + c::MPI_BSEND_OVERHEAD as usize;
        let own = self.pools.iter().position(|p| p.owner == Owner::Comm(comm));
        let i = own
            .or_else(|| self.pools.iter().position(|p| p.owner == Owner::Process))
            .ok_or_else(|| {
                MpiError::new(
                    c::MPI_ERR_BUFFER,
                    "no buffer attached to the communicator (MPI_Comm_attach_buffer) \
                     or the process (MPI_Buffer_attach)",
                )
            })?;
        let p = &mut self.pools[i];
        if p.used + need > p.size {
            let whose = if own.is_some() {
                "communicator's"
            } else {
                "process's"
            };
            return Err(MpiError::new(
                c::MPI_ERR_BUFFER,
                format!(
                    "the {whose} attached buffer is too small: {need} bytes needed, {} of {} free",
                    p.size - p.used,
                    p.size
                ),
            ));
        }
        p.used += need;
        Ok(Share {
            pool: p.id,
            bytes: need,
        })
    }

    /// Gives a completed send's bytes back to the pool they came from.
    pub fn release(&mut self, share: Share) {
        let Some(i) = self.pools.iter().position(|p| p.id == share.pool) else {
            return;
        };
        let p = &mut self.pools[i];
        p.used = p.used.saturating_sub(share.bytes);
        if p.owner == Owner::Freed && p.used == 0 {
            self.pools.swap_remove(i);
        }
    }

    /// `MPI_Comm_free`: the communicator's buffer is detached implicitly.
    /// Lanai never writes into it, so the program may reuse it at once;
    /// sends still holding bytes keep the accounting until they complete.
    pub fn comm_freed(&mut self, comm: usize) {
        if let Some(i) = self.pools.iter().position(|p| p.owner == Owner::Comm(comm)) {
            if self.pools[i].used == 0 {
                self.pools.swap_remove(i);
            } else {
                self.pools[i].owner = Owner::Freed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OVH: usize = c::MPI_BSEND_OVERHEAD as usize;

    #[test]
    fn comm_buffer_first_then_process() {
        let mut p = Pools::default();
        assert!(p.reserve(3, 10).is_err());
        p.attach(Owner::Process, 100, 1000).unwrap();
        p.attach(Owner::Comm(3), 200, 10 + OVH).unwrap();
        let a = p.reserve(3, 10).unwrap();
        // The communicator's buffer is full now; it does not fall back.
        assert!(p.reserve(3, 1).is_err());
        let b = p.reserve(4, 10).unwrap();
        assert!(!p.owner_drained(Owner::Comm(3)));
        assert!(!p.owner_drained(Owner::Process));
        p.release(a);
        assert!(p.owner_drained(Owner::Comm(3)));
        assert!(!p.owner_drained(Owner::Process));
        p.release(b);
        assert_eq!(p.detach(Owner::Comm(3)), (200, 10 + OVH));
        assert_eq!(p.detach(Owner::Comm(3)), (0, 0));
    }

    #[test]
    fn one_buffer_per_owner() {
        let mut p = Pools::default();
        p.attach(Owner::Comm(5), 1, 10).unwrap();
        assert!(p.attach(Owner::Comm(5), 2, 10).is_err());
        p.attach(Owner::Comm(6), 2, 10).unwrap();
        p.attach(Owner::Process, 3, 10).unwrap();
        assert!(p.attach(Owner::Process, 3, 10).is_err());
    }

    #[test]
    fn freed_comm_keeps_accounting_until_drained() {
        let mut p = Pools::default();
        p.attach(Owner::Comm(5), 1, 100 + OVH).unwrap();
        let s = p.reserve(5, 100).unwrap();
        let id = p.id_of(Owner::Comm(5)).unwrap();
        p.comm_freed(5);
        // The index may be reused with a new buffer at once.
        p.attach(Owner::Comm(5), 2, 10 + OVH).unwrap();
        let t = p.reserve(5, 10).unwrap();
        assert!(!p.drained(id));
        p.release(s);
        assert!(p.drained(id));
        assert!(!p.owner_drained(Owner::Comm(5)));
        p.release(t);
        assert!(p.owner_drained(Owner::Comm(5)));
    }
}
