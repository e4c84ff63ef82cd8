//! The engine protocol under seeded, adversarial schedules: several nodes'
//! `Core`s joined by a network that delivers in any order, ranks posting
//! whenever the scheduler likes, pools small enough to force bounces. Every
//! result must equal, bit for bit, what the ranks' own machines compute
//! (`lanai_coll::sim`, the host-based path).

use super::core::{Completion, Core, Header};
use super::desc::{Desc, Work};
use lanai_coll::sim::{self, RandomOrder, XorShift};
use lanai_coll::{
    AllreduceAlgo, BarrierAlgo, BcastAlgo, Collective, Elem, Op, Predefined, Reduce, ReduceTree,
};

/// One collective call every member makes, with per-rank input.
#[derive(Clone)]
struct Call {
    work: Work,
    inputs: Vec<Vec<u8>>,
    len: usize,
}

/// A communicator: its context, and its members' world ranks.
#[derive(Clone)]
struct Group {
    ctx: u32,
    members: Vec<u32>,
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn machine(w: Work, rank: u32, size: u32, data: Vec<u8>, len: usize) -> Box<dyn Collective> {
    match w {
        Work::Barrier(a) => lanai_coll::barrier(rank, size, a).unwrap(),
        // Any barrier: the reference only says "done, no result".
        Work::DeviceBarrier { .. } => {
            lanai_coll::barrier(rank, size, BarrierAlgo::Dissemination).unwrap()
        }
        Work::Bcast { root, algo } => {
            let d = if rank == root { data } else { vec![0; len] };
            lanai_coll::bcast(rank, size, root, d, algo).unwrap()
        }
        Work::Reduce { root, op, tree } => {
            Box::new(Reduce::with_tree(rank, size, root, data, op, tree).unwrap())
        }
        Work::Allreduce { op, algo } => lanai_coll::allreduce(rank, size, data, op, algo).unwrap(),
        _ => unreachable!(),
    }
}

/// What the ranks compute among themselves (delivery order is irrelevant
/// to the result, which is the point being tested).
fn reference(call: &Call, size: u32) -> Vec<Option<Vec<u8>>> {
    let mut f = |r: u32| -> Result<Box<dyn Collective>, lanai_coll::CollError> {
        Ok(machine(
            call.work,
            r,
            size,
            call.inputs[r as usize].clone(),
            call.len,
        ))
    };
    sim::run(size, &mut f, &mut RandomOrder::new(1))
        .unwrap()
        .results
}

struct Cluster {
    cores: Vec<Core>,
    node_of: Vec<u32>,
    /// (from node, to node, bounce, header, data) in flight.
    net: Vec<(u32, u32, bool, Header, Vec<u8>)>,
    now: u64,
    bounces: u64,
}

impl Cluster {
    fn new(node_of: Vec<u32>, pool: usize) -> Self {
        let nodes = node_of.iter().max().map_or(1, |m| m + 1);
        let cores = (0..nodes)
            .map(|n| {
                let local: Vec<u32> = (0..node_of.len() as u32)
                    .filter(|&w| node_of[w as usize] == n)
                    .collect();
                Core::new(n, node_of.clone(), local, pool)
            })
            .collect();
        Cluster {
            cores,
            node_of,
            net: Vec::new(),
            now: 0,
            bounces: 0,
        }
    }

    fn local_of(&self, w: u32) -> (usize, usize) {
        let n = self.node_of[w as usize];
        let i = (0..w).filter(|&x| self.node_of[x as usize] == n).count();
        (n as usize, i)
    }

    fn collect(&mut self) -> Vec<(u32, Completion)> {
        let mut done = Vec::new();
        for (n, c) in self.cores.iter_mut().enumerate() {
            while let Some(t) = c.poll_transmit() {
                if t.bounce {
                    self.bounces += 1;
                }
                self.net.push((n as u32, t.node, t.bounce, t.hdr, t.data));
            }
            while let Some(x) = c.poll_completion() {
                done.push((n as u32, x));
            }
        }
        done
    }
}

/// Per group, per call, per member: the result.
type Results = Vec<Vec<Vec<Option<Vec<u8>>>>>;

/// Runs `calls` (in order, on `group`) on every member under a seeded
/// schedule and returns each member's results, per call.
fn run_engines(
    node_of: &[u32],
    groups: &[(Group, Vec<Call>)],
    pool: usize,
    seed: u64,
) -> (Results, u64) {
    let mut cl = Cluster::new(node_of.to_vec(), pool);
    let mut rng = XorShift::new(seed);
    // Per (group, member): the next call to post (registration first).
    let mut next: Vec<Vec<usize>> = groups
        .iter()
        .map(|(g, _)| vec![0; g.members.len()])
        .collect();
    let mut results: Results = groups
        .iter()
        .map(|(g, calls)| vec![vec![None; g.members.len()]; calls.len()])
        .collect();
    let mut finished: Vec<Vec<Vec<bool>>> = groups
        .iter()
        .map(|(g, calls)| vec![vec![false; g.members.len()]; calls.len()])
        .collect();
    // Slot -> (group, call) per (node, local rank); slots are never reused.
    let mut slot_of: std::collections::HashMap<(u32, usize, usize), (usize, usize)> =
        Default::default();
    let mut slot_no = 0usize;
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 1_000_000, "no progress");
        let postable: Vec<(usize, usize)> = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, (g, calls))| {
                let next = &next;
                (0..g.members.len())
                    .filter_map(move |m| (next[gi][m] <= calls.len()).then_some((gi, m)))
            })
            .collect();
        let all_done = finished.iter().flatten().flatten().all(|&d| d);
        if all_done && postable.is_empty() && cl.net.is_empty() {
            break;
        }
        let choices = postable.len() + cl.net.len() + 1;
        let pick = rng.below(choices);
        if pick < postable.len() {
            let (gi, m) = postable[pick];
            let (g, calls) = &groups[gi];
            let w = g.members[m];
            let (n, local) = cl.local_of(w);
            let k = next[gi][m];
            next[gi][m] += 1;
            slot_no += 1;
            let base = Desc {
                work: Work::Register,
                post_no: 0,
                ctx: g.ctx,
                lead: g.members[0],
                seq: 0,
                rank: m as u32,
                size: g.members.len() as u32,
                len: 0,
            };
            if k == 0 {
                let data: Vec<u8> = g.members.iter().flat_map(|x| x.to_le_bytes()).collect();
                let d = Desc {
                    len: data.len() as u32,
                    ..base
                };
                cl.cores[n].post(local, slot_no, &d, data);
            } else {
                let c = &calls[k - 1];
                slot_of.insert((n as u32, local, slot_no), (gi, k - 1));
                let d = Desc {
                    work: c.work,
                    seq: (k - 1) as u32,
                    len: c.len as u32,
                    ..base
                };
                cl.cores[n].post(local, slot_no, &d, c.inputs[m].clone());
            }
        } else if pick < postable.len() + cl.net.len() {
            // Any message in flight, in any order.
            let (from, to, bounce, hdr, data) = cl.net.swap_remove(pick - postable.len());
            cl.cores[to as usize].handle_remote(from, bounce, hdr, data, cl.now);
        } else {
            cl.now += 7;
            for c in &mut cl.cores {
                c.handle_timeout(cl.now);
            }
        }
        for (n, x) in cl.collect() {
            let out = x.outcome.expect("engine failed an operation");
            if let Some(&(gi, ci)) = slot_of.get(&(n, x.local, x.slot)) {
                let w = (0..node_of.len() as u32)
                    .filter(|&w| node_of[w as usize] == n)
                    .nth(x.local)
                    .unwrap();
                let m = groups[gi].0.members.iter().position(|&y| y == w).unwrap();
                assert!(!finished[gi][ci][m], "completed twice");
                if matches!(
                    groups[gi].1[ci].work,
                    Work::Barrier(_) | Work::DeviceBarrier { .. }
                ) {
                    // A barrier ends for no one before every member entered.
                    assert!(
                        next[gi].iter().all(|&k| k > ci + 1),
                        "barrier {ci} of group {gi} released member {m} early"
                    );
                }
                finished[gi][ci][m] = true;
                results[gi][ci][m] = out;
            }
        }
    }
    (results, cl.bounces)
}

fn random_f64s(rng: &mut XorShift, n: usize) -> Vec<u8> {
    let v: Vec<f64> = (0..n)
        .map(|_| (rng.next_u64() % 1_000_000) as f64 / 7.0 - 70_000.0)
        .collect();
    f64s(&v)
}

fn calls_for(size: usize, rng: &mut XorShift) -> Vec<Call> {
    let sum = Predefined::new(Op::Sum, Elem::F64).unwrap();
    let max = Predefined::new(Op::Max, Elem::I32).unwrap();
    let mut calls = Vec::new();
    for (i, n) in [1usize, 5, 64].into_iter().enumerate() {
        let inputs: Vec<Vec<u8>> = (0..size).map(|_| random_f64s(rng, n)).collect();
        calls.push(Call {
            work: Work::Allreduce {
                op: sum,
                algo: AllreduceAlgo::Auto.resolve(size as u32, n * 8),
            },
            inputs: inputs.clone(),
            len: n * 8,
        });
        calls.push(Call {
            work: Work::Reduce {
                root: (i % size) as u32,
                op: sum,
                // Binomial, a chain, and a fan-out above the size.
                tree: [
                    ReduceTree::Binomial,
                    ReduceTree::Kary(1),
                    ReduceTree::Kary(9),
                ][i],
            },
            inputs,
            len: n * 8,
        });
    }
    let ints: Vec<Vec<u8>> = (0..size)
        .map(|r| ((r as i32 * 37) % 11 - 5).to_le_bytes().to_vec())
        .collect();
    calls.push(Call {
        work: Work::Allreduce {
            op: max,
            algo: AllreduceAlgo::ReduceBcast,
        },
        inputs: ints,
        len: 4,
    });
    for algo in [
        BarrierAlgo::PairwiseExchange,
        BarrierAlgo::Dissemination,
        BarrierAlgo::Binomial,
    ] {
        calls.push(Call {
            work: Work::Barrier(algo),
            inputs: vec![Vec::new(); size],
            len: 0,
        });
    }
    // The engine as the node's device, in a chain, a binary tree, one
    // central engine, and rounds among the engines (k = 0).
    for k in [1, 2, 16, 0] {
        calls.push(Call {
            work: Work::DeviceBarrier { k },
            inputs: vec![Vec::new(); size],
            len: 0,
        });
    }
    let root = (size - 1) as u32;
    let msg = random_f64s(rng, 100);
    calls.push(Call {
        work: Work::Bcast {
            root,
            algo: BcastAlgo::ScatterAllgather,
        },
        inputs: (0..size)
            .map(|r| {
                if r as u32 == root {
                    msg.clone()
                } else {
                    Vec::new()
                }
            })
            .collect(),
        len: msg.len(),
    });
    calls
}

fn check(node_of: Vec<u32>, pool: usize, seeds: std::ops::Range<u64>) -> u64 {
    let size = node_of.len();
    let mut bounces = 0;
    for seed in seeds {
        let mut rng = XorShift::new(seed ^ 0x5eed);
        let world = Group {
            ctx: 1,
            members: (0..size as u32).collect(),
        };
        let calls = calls_for(size, &mut rng);
        let mut groups = vec![(world, calls)];
        // Two halves of a split: the same context, told apart by their lead.
        if size >= 4 {
            for half in 0..2u32 {
                let members: Vec<u32> = (0..size as u32).filter(|w| w % 2 == half).rev().collect();
                let calls = calls_for(members.len(), &mut rng);
                groups.push((Group { ctx: 9, members }, calls));
            }
        }
        let (got, b) = run_engines(&node_of, &groups, pool, seed);
        bounces += b;
        for (gi, (g, calls)) in groups.iter().enumerate() {
            for (ci, call) in calls.iter().enumerate() {
                let want = reference(call, g.members.len() as u32);
                assert_eq!(got[gi][ci], want, "seed {seed} group {gi} call {ci}");
            }
        }
    }
    bounces
}

#[test]
fn one_node_matches_the_host_path() {
    check(vec![0; 1], 1 << 20, 0..3);
    check(vec![0; 5], 1 << 20, 0..10);
}

#[test]
fn many_nodes_any_order_match_the_host_path() {
    check(vec![0, 1], 1 << 20, 0..10);
    check(vec![0, 0, 1, 1, 2, 2, 2, 3], 1 << 20, 0..10);
    check(vec![2, 0, 1, 0, 2, 1], 1 << 20, 0..10);
}

#[test]
fn a_full_pool_bounces_and_nothing_is_lost() {
    // No room at all: every early remote message goes back and is retried.
    let b = check(vec![0, 1, 2, 0, 1, 2, 3], 0, 0..10);
    assert!(b > 0, "the schedule never produced an early message");
    let b = check(vec![0, 0, 1, 1], 16, 0..10);
    assert!(b > 0);
}

#[test]
fn bad_descriptors_fail_cleanly() {
    let mut c = Core::new(0, vec![0, 0], vec![0, 1], 64);
    let sum = Predefined::new(Op::Sum, Elem::I32).unwrap();
    let d = Desc {
        work: Work::Allreduce {
            op: sum,
            algo: AllreduceAlgo::Auto,
        },
        post_no: 0,
        ctx: 3,
        lead: 0,
        seq: 0,
        rank: 0,
        size: 2,
        len: 4,
    };
    // Not registered.
    c.post(0, 0, &d, vec![0; 4]);
    assert!(c.poll_completion().unwrap().outcome.is_err());
    // A member list that names a rank outside the job, or not this rank.
    let reg = Desc {
        work: Work::Register,
        len: 8,
        ..d
    };
    c.post(
        0,
        1,
        &reg,
        [0u32, 7].iter().flat_map(|x| x.to_le_bytes()).collect(),
    );
    assert!(c.poll_completion().unwrap().outcome.is_err());
    c.post(
        0,
        1,
        &reg,
        [1u32, 0].iter().flat_map(|x| x.to_le_bytes()).collect(),
    );
    assert!(c.poll_completion().unwrap().outcome.is_err());
    c.post(
        0,
        1,
        &reg,
        [0u32, 1].iter().flat_map(|x| x.to_le_bytes()).collect(),
    );
    assert_eq!(c.poll_completion().unwrap().outcome, Ok(None));
    // Input of the wrong length, then the same instance twice.
    c.post(0, 2, &d, vec![0; 3]);
    assert!(c.poll_completion().unwrap().outcome.is_err());
    c.post(0, 2, &d, vec![0; 4]);
    c.post(0, 3, &d, vec![0; 4]);
    assert!(c.poll_completion().unwrap().outcome.is_err());
    assert_eq!(c.in_flight(), 1);
}
