//! The registry of every `LANAI_*` environment knob.
//!
//! Every knob the code reads is declared here, once, with its default and a
//! one-line description; `lanai-info` prints this table and the README
//! documents it. Reading a knob that is not in the table is a bug, so
//! [`get`] panics in debug builds on an unknown name.

/// One environment knob.
#[derive(Debug, Clone, Copy)]
pub struct Knob {
    /// Full variable name, e.g. `LANAI_EAGER_LIMIT`.
    pub name: &'static str,
    /// Value used when the variable is unset.
    pub default: &'static str,
    /// One line for `lanai-info` and the docs.
    pub help: &'static str,
}

macro_rules! knobs {
    ($($ident:ident = ($name:literal, $default:literal, $help:literal);)*) => {
        $(
            #[doc = $help]
            pub const $ident: Knob = Knob { name: $name, default: $default, help: $help };
        )*
        /// Every knob, in documentation order.
        pub const ALL: &[Knob] = &[$($ident),*];
    };
}

knobs! {
    CONNECT = ("LANAI_CONNECT", "ondemand", "TCP connection setup: 'ondemand' (connect on first message) or 'static' (connect every pair at MPI_Init)");
    EAGER_LIMIT = ("LANAI_EAGER_LIMIT", "16384", "Largest shared-memory message sent eagerly through the ring; larger ones use rendezvous");
    TCP_EAGER_LIMIT = ("LANAI_TCP_EAGER_LIMIT", "65536", "Largest point-to-point message sent eagerly over TCP; larger ones wait for the receive (rendezvous), so a receiver never buffers them unasked");
    SHM_RING_BYTES = ("LANAI_SHM_RING_BYTES", "65536", "Bytes in each per-pair shared-memory ring (a power of two, at least 4096)");
    SINGLE_COPY = ("LANAI_SINGLE_COPY", "auto", "Large intra-node messages: 'auto' (one copy with process_vm_readv when the kernel allows it, else through the ring) or 'off' (always through the ring)");
    TCP_ADDR = ("LANAI_TCP_ADDR", "auto", "Address the TCP listener binds to: 'auto' (loopback when the job is on one host, else the host's address) or an IP");
    CORES = ("LANAI_CORES", "auto", "Cores this host gives the job: 'auto' (the affinity mask) or a count; decides whether ranks may spin and whether LANAI_OFFLOAD=auto starts engines");
    SPIN = ("LANAI_SPIN", "auto", "How long a waiting rank polls before it sleeps: 'auto' (20 ms with a core of its own; 50 polls, yielding, when ranks outnumber cores) or a number of polls");
    STATS = ("LANAI_STATS", "0", "1: each rank prints connections, messages and bytes per transport at MPI_Finalize");
    DEBUG = ("LANAI_DEBUG", "0", "1: log connection and bootstrap events to stderr");
    BARRIER = ("LANAI_BARRIER", "auto", "Barrier algorithm: auto (central when the communicator gets a channel, except across nodes whose ranks each have a core: pairwise exchange on a power of two, else dissemination), central (the shared-memory barrier device, a k-ary tree of node leaders across nodes; software when no channel is free), dissemination, pairwise, binomial");
    BARRIER_CHANNELS = ("LANAI_BARRIER_CHANNELS", "64", "Central barrier channels per node; a communicator takes one at its first barrier and frees it with MPI_Comm_free; 0 disables the device");
    BARRIER_TREE_K = ("LANAI_BARRIER_TREE_K", "16", "Fan-out of the tree of node leaders the central barrier uses across nodes; k >= nodes - 1 is one central device (16: measured fastest at 2-8 emulated nodes here, where every hop costs a wake-up); 0: no tree, the leaders run dissemination rounds, as LANAI_OFFLOAD=auto's engines do");
    BCAST = ("LANAI_BCAST", "auto", "Broadcast algorithm: auto (binomial; scatter_allgather for large messages; from 64 KiB a binomial tree of point-to-point transfers between the callers' buffers; MPI_Bcast and MPI_Ibcast on one node: up to 1064 bytes (280 where ranks share cores) through the root's mailbox slots, where the root posts and goes on, and from 1 KiB, or 16 KiB where ranks share cores, through the root's staging slots in chunks), binomial, scatter_allgather");
    REDUCE = ("LANAI_REDUCE", "auto", "Reduce tree: auto (binomial; on a communicator within one node, reduces of up to 55 bytes go through the barrier device's mailboxes (up to 112 bytes in pieces, 168 where ranks share cores) and larger ones up to 64 KiB through its staging slots, where non-roots do not wait and the root folds every contribution in place (where every rank has a core, only while the other members' contributions total at most 512 KiB), and from 16 KiB those that do not, and all above 64 KiB, through the same slots in chunks, every rank folding a share and the root gathering; elsewhere, reduces of up to 1 KiB on up to 16 ranks are flat: every rank sends to the root, which folds with the binomial grouping), binomial (messages only), kary (fan-out LANAI_REDUCE_FANOUT; each subtree a contiguous rank range, so non-commutative operations stay in rank order); floating-point results are fixed for a given tree but differ in the last bits between trees");
    REDUCE_FANOUT = ("LANAI_REDUCE_FANOUT", "2", "Fan-out of LANAI_REDUCE=kary: 1 is a chain, ranks - 1 or more a flat tree");
    ALLREDUCE = ("LANAI_ALLREDUCE", "auto", "Allreduce algorithm: auto (recursive_doubling up to 64 KiB on powers of two, up to 32 KiB from 8 ranks; above, rabenseifner, or ring on other sizes; on one node, one of up to 256 B, or up to 4 KiB while all ranks' contributions together are at most 32 KiB, rides the barrier device, one of 16 KiB or more goes through the staging slots in chunks, and where ranks share cores one between the two from 8 ranks is a staged reduce to rank 0 and a broadcast), recursive_doubling, reduce_bcast, rabenseifner, ring; all give bitwise-identical results");
    SCAN = ("LANAI_SCAN", "auto", "Scan and exscan algorithm: auto (a chain, whose members pass the prefix on and go, so successive scans overlap; on one node, up to 168 bytes through the barrier device's mailboxes, in pieces past 56), chain, recursive_doubling (ceil(log2 ranks) exchange rounds, fewer steps in sequence, but slower in loops on the 2-core development VM); floating-point prefixes differ in the last bits between the two");
    NODE_COLL = ("LANAI_NODE_COLL", "auto", "Gather(v), scatter(v), allgather(v), all-to-all, reduce-scatter(_block), scan and exscan on a communicator within one node: auto (scans and exscans of up to 168 bytes, gatherv and scatterv blocks of up to 168 bytes (a scatterv only where every rank has a core), gathers of blocks below 1 KiB (up to 280 bytes where ranks share cores), and scatters whose whole vector is up to 1064 bytes (280 where ranks share cores), go through the barrier device's mailboxes, where senders post and go on; allgathers, all-to-alls and reduce-scatters of up to 4 KiB per rank ride on a barrier of the device, each rank reading the others' parts where they lie; gathers, allgathers, scatters and all-to-alls of 1 KiB blocks and more go through the staging slots in chunks, scatters from 16 KiB where ranks share cores and below 64 KiB, from where each member reads its block from the root's buffer), messages (message-passing algorithms only)");
    OFFLOAD = ("LANAI_OFFLOAD", "auto", "Collectives the per-node offload engine (lanai-engine) runs: auto (nonblocking collectives and the blocking reduces the host would run as a tree, on communicators that span nodes, when every node has a core per rank and per engine; measured slower when engines share cores with ranks, so off on small hosts), none, all, or a comma list of barrier, reduce, allreduce, bcast (blocking and nonblocking alike; predefined operations, any size: above 64 KiB in pipelined chunks)");
    OFFLOAD_POOL = ("LANAI_OFFLOAD_POOL", "1048576", "Bytes of early messages from other nodes an offload engine keeps; beyond that it sends them back and the sender retries later");
    ENGINE_TRACE = ("LANAI_ENGINE_TRACE", "", "A directory: each offload engine writes there, at exit, engine-<node>.trace, a timestamped record of its first million events (descriptors taken, messages to and from other engines, completions), which eval/engine-trace summarises");
    ENGINE_PATH = ("LANAI_ENGINE_PATH", "auto", "The lanai-engine program: 'auto' (bin/lanai-engine beside the library's lib/ directory, else on PATH) or a path");
    BIND = ("LANAI_BIND", "auto", "lanairun: 'auto' pins ranks round-robin to the available cores when they outnumber the cores, and leaves them to the kernel otherwise; 'core' always pins rank i to the i-th core mod cores, one thread of every physical core before a second; 'none' leaves placement to the kernel");
    CC = ("LANAI_CC", "cc", "C compiler that lanaicc (mpicc) runs");
    CXX = ("LANAI_CXX", "c++", "C++ compiler that lanaicxx (mpicxx, mpic++) runs");
    FC = ("LANAI_FC", "gfortran", "Fortran compiler that lanaifort (mpifort, mpif90, mpif77) runs");
    FORTRAN_LAYER = ("LANAI_FORTRAN_LAYER", "auto", "Where lanaifort finds MPICH's Fortran layer, which Lanai's ABI lets it use: 'auto' (the directories holding MPICH's mpi.mod and libmpichfort.so, as Debian's libmpich-dev installs them) or INCDIR:LIBDIR");
}

/// The knob's current value: the environment's, or its default.
pub fn get(knob: &Knob) -> String {
    debug_assert!(
        ALL.iter().any(|k| k.name == knob.name),
        "knob {} is not registered",
        knob.name
    );
    std::env::var(knob.name).unwrap_or_else(|_| knob.default.to_string())
}

/// Whether the variable is set in the environment (as opposed to defaulted).
pub fn is_set(knob: &Knob) -> bool {
    std::env::var_os(knob.name).is_some()
}

/// A numeric knob; an unparsable value falls back to the default and is reported.
pub fn get_usize(knob: &Knob) -> Result<usize, String> {
    let v = get(knob);
    v.trim()
        .parse::<usize>()
        .map_err(|_| format!("{}={:?} is not a non-negative integer", knob.name, v))
}

/// A boolean knob: `1`, `true`, `yes`, `on` are true.
pub fn get_bool(knob: &Knob) -> bool {
    matches!(
        get(knob).trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prefixed() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(a.name.starts_with("LANAI_"), "{}", a.name);
            assert!(!a.help.is_empty());
            for b in &ALL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }

    #[test]
    fn numeric_defaults_parse() {
        for k in [EAGER_LIMIT, TCP_EAGER_LIMIT, SHM_RING_BYTES] {
            assert!(k.default.parse::<usize>().is_ok(), "{}", k.name);
        }
    }
}
