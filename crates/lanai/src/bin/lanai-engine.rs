//! `lanai-engine`: a node's offload engine. Started by the node's first
//! rank at `MPI_Init` when `LANAI_OFFLOAD` asks for it; not run by hand.
#![forbid(unsafe_code)]

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(mpi::offload::server::run(&argv));
}
