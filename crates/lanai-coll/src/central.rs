//! The logic of seed 002's central barrier device, written against abstract
//! "wires" so the same code drives shared memory in ranks and a model in
//! tests.
//!
//! The device has one input per rank and one output. A barrier is
//! *toggle, write, read*: a rank sets its input, and the output changes once
//! every input has. Wires carry generation counters rather than single bits:
//! the low bit is the paper's two-state toggle, and the counter lets a rank
//! that races ahead into the next barrier never be mistaken for one still in
//! this one. Comparisons wrap, so the counters may run forever.
//!
//! Roles: on a single node every rank is a [`Role::Peer`] and whoever sees
//! every input set runs the device logic (raises the output). Across nodes,
//! one [`Role::Leader`] per node gathers its node's inputs, reports to the
//! tree of nodes and raises the output when the tree releases it;
//! [`Role::Follower`]s only set their input and read the output.
//!
//! Each [`DeviceRank::step`] makes exactly one access to the wires, so a
//! model checker can interleave ranks at the finest grain.

/// The device's shared words. An input store publishes with release
/// ordering and loads acquire. One order matters beyond that: a rank's
/// input store must come before its later [`Wires::has_sleepers`] look,
/// and a sleeper's announcement before its last look at the inputs, so
/// that an arriver and a sleeper cannot both miss the other (the shared-
/// memory wires pair a light fence there with a heavy one in sleepers).
pub trait Wires {
    /// Input of member `i` (an index into the device's inputs).
    fn input(&self, i: usize) -> u32;
    fn set_input(&self, i: usize, gen: u32);
    fn output(&self) -> u32;
    /// Moves the output forward to `gen` unless it is there already; true
    /// when this call moved it (the caller then wakes sleepers).
    fn raise_output(&self, gen: u32) -> bool;
    /// Whether some rank may be asleep on the output. A sleeper announces
    /// itself here before its last look at the inputs.
    fn has_sleepers(&self) -> bool;
}

/// Whether a counter `v` has reached generation `gen`, modulo wrap-around.
pub fn reached(v: u32, gen: u32) -> bool {
    (v.wrapping_sub(gen) as i32) >= 0
}

/// Who runs the device logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Single node: anyone who sees all inputs raises the output.
    Peer,
    /// This node's representative in the tree of nodes.
    Leader,
    /// Another rank on a node with a leader.
    Follower,
}

/// What one step (or a poll) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More work right away.
    Continue,
    /// Waiting for other ranks; poll again later.
    Pending,
    /// Leader only: every local input is in. Report up the tree, then call
    /// [`DeviceRank::release`].
    Gathered,
    /// Follower only: this rank completed the node's inputs, so the leader
    /// may need waking. Returned once.
    LocalComplete,
    /// The barrier is over for this rank; `raised` when this rank moved the
    /// output (and so must wake sleepers).
    Done { raised: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Phase {
    Arrive,
    /// Last arriver (peer): raise only if someone sleeps.
    AskSleepers,
    /// Read the output.
    Check,
    /// Read inputs from the cursor on; `once` for a follower's single pass.
    Scan {
        once: bool,
    },
    Raise,
    Gathered,
    Done,
}

/// One rank's progress through one barrier on the device.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeviceRank {
    me: usize,
    gen: u32,
    role: Role,
    phase: Phase,
    /// Members before this index have been seen arrived (inputs never go
    /// back within a barrier, so a scan resumes where it stopped).
    cursor: usize,
}

impl DeviceRank {
    /// Rank with input `me` entering barrier generation `gen` (one more than
    /// its previous barrier on this device).
    pub fn new(me: usize, gen: u32, role: Role) -> Self {
        Self {
            me,
            gen,
            role,
            phase: Phase::Arrive,
            cursor: 0,
        }
    }

    pub fn generation(&self) -> u32 {
        self.gen
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Whether this rank has set its input yet.
    pub fn has_arrived(&self) -> bool {
        self.phase != Phase::Arrive
    }

    /// One access to the wires. `members` lists the inputs of this
    /// barrier's ranks on this device. Inlined into [`DeviceRank::poll`],
    /// whose loop then runs without a call per access (a 2-rank barrier
    /// makes four).
    #[inline(always)]
    pub fn step(&mut self, w: &impl Wires, members: &[usize]) -> Step {
        match self.phase {
            Phase::Arrive => {
                w.set_input(self.me, self.gen);
                self.phase = match self.role {
                    Role::Peer | Role::Leader => Phase::Scan { once: false },
                    Role::Follower => Phase::Scan { once: true },
                };
                Step::Continue
            }
            Phase::Check => {
                if reached(w.output(), self.gen) {
                    self.phase = Phase::Done;
                    Step::Done { raised: false }
                } else if self.role == Role::Peer {
                    self.phase = Phase::Scan { once: false };
                    Step::Continue
                } else {
                    Step::Pending
                }
            }
            Phase::Scan { once } => {
                let Some(&i) = members.get(self.cursor) else {
                    return self.all_in(once);
                };
                if !reached(w.input(i), self.gen) {
                    return match (self.role, once) {
                        (Role::Leader, _) => Step::Pending,
                        (_, true) => {
                            self.phase = Phase::Check;
                            Step::Continue
                        }
                        _ => {
                            self.phase = Phase::Check;
                            Step::Pending
                        }
                    };
                }
                self.cursor += 1;
                if self.cursor == members.len() {
                    return self.all_in(once);
                }
                Step::Continue
            }
            Phase::AskSleepers => {
                if w.has_sleepers() {
                    self.phase = Phase::Raise;
                    Step::Continue
                } else {
                    self.phase = Phase::Done;
                    Step::Done { raised: false }
                }
            }
            Phase::Raise => {
                let raised = w.raise_output(self.gen);
                self.phase = Phase::Done;
                Step::Done { raised }
            }
            Phase::Gathered => Step::Gathered,
            Phase::Done => Step::Done { raised: false },
        }
    }

    fn all_in(&mut self, once: bool) -> Step {
        match self.role {
            // Every peer that sees the last input raises the output, but
            // only when someone sleeps on it: awake peers watch the inputs
            // themselves, which keeps the output line out of the common
            // path. Not only the one whose first scan after arriving saw
            // everyone: inputs are stored without a fence, so the last two
            // arrivers can each miss the other's store in that scan, and
            // then neither raised, and sleepers waited out their timeout
            // (`threads_through_many_barriers_with_futex_sleep`, 13 % of
            // runs beside the other tests).
            Role::Peer => {
                self.phase = Phase::AskSleepers;
                Step::Continue
            }
            Role::Leader => {
                self.phase = Phase::Gathered;
                Step::Gathered
            }
            Role::Follower => {
                self.phase = Phase::Check;
                if once {
                    Step::LocalComplete
                } else {
                    Step::Continue
                }
            }
        }
    }

    /// Steps until something other than `Continue` happens.
    pub fn poll(&mut self, w: &impl Wires, members: &[usize]) -> Step {
        loop {
            match self.step(w, members) {
                Step::Continue => continue,
                s => return s,
            }
        }
    }

    /// Leader: the tree has released this node; raise the output.
    pub fn release(&mut self, w: &impl Wires) -> Step {
        debug_assert_eq!(self.phase, Phase::Gathered);
        self.phase = Phase::Raise;
        self.step(w, &[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::collections::HashSet;

    /// Sequentially consistent wires: the model.
    #[derive(Debug, Clone)]
    struct Model {
        inputs: Vec<Cell<u32>>,
        output: Cell<u32>,
        /// What `has_sleepers` answers (the model has no real sleepers).
        sleepers: bool,
    }

    impl Model {
        fn new(n: usize, start: u32, sleepers: bool) -> Self {
            Self {
                inputs: (0..n).map(|_| Cell::new(start)).collect(),
                output: Cell::new(start),
                sleepers,
            }
        }
        fn key(&self) -> (Vec<u32>, u32) {
            (
                self.inputs.iter().map(Cell::get).collect(),
                self.output.get(),
            )
        }
    }

    impl Wires for Model {
        fn input(&self, i: usize) -> u32 {
            self.inputs[i].get()
        }
        fn set_input(&self, i: usize, gen: u32) {
            self.inputs[i].set(gen);
        }
        fn output(&self) -> u32 {
            self.output.get()
        }
        fn raise_output(&self, gen: u32) -> bool {
            if reached(self.output.get(), gen) {
                false
            } else {
                self.output.set(gen);
                true
            }
        }
        fn has_sleepers(&self) -> bool {
            self.sleepers
        }
    }

    /// One rank of the model: its device state and how many barriers it
    /// has left.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Proc {
        dev: DeviceRank,
        left: u32,
    }

    fn roles(n: usize, leader: bool) -> Vec<Role> {
        (0..n)
            .map(|i| match (leader, i) {
                (false, _) => Role::Peer,
                (true, 0) => Role::Leader,
                (true, _) => Role::Follower,
            })
            .collect()
    }

    /// Explores every interleaving of single wire accesses for `n` ranks
    /// doing `rounds` barriers in a row, from counters at `start`. Checks
    /// that nobody leaves a barrier before everyone entered it, and that no
    /// reachable state is stuck. Returns the number of states seen.
    fn explore(n: usize, rounds: u32, start: u32, leader: bool, sleepers: bool) -> usize {
        let members: Vec<usize> = (0..n).collect();
        let roles = roles(n, leader);
        let procs: Vec<Proc> = roles
            .iter()
            .enumerate()
            .map(|(i, &r)| Proc {
                dev: DeviceRank::new(i, start.wrapping_add(1), r),
                left: rounds,
            })
            .collect();
        let mut seen = HashSet::new();
        let mut stack = vec![(Model::new(n, start, sleepers), procs)];
        while let Some((w, procs)) = stack.pop() {
            if !seen.insert((w.key(), procs.clone())) {
                continue;
            }
            let mut moved = false;
            for r in 0..n {
                if procs[r].left == 0 {
                    continue;
                }
                let (w2, mut p2) = (w.clone(), procs.clone());
                let gen = p2[r].dev.generation();
                let s = p2[r].dev.step(&w2, &members);
                match s {
                    Step::Done { .. } => {
                        // Everyone must have entered this generation.
                        for (q, p) in procs.iter().enumerate() {
                            assert!(
                                reached(w.input(q), gen),
                                "rank {r} left barrier {gen} before rank {q} entered ({p:?})"
                            );
                        }
                        p2[r].left -= 1;
                        p2[r].dev = DeviceRank::new(r, gen.wrapping_add(1), roles[r]);
                    }
                    Step::Gathered => {
                        // One node: the tree above releases at once.
                        p2[r].dev.release(&w2);
                    }
                    _ => {}
                }
                if (w2.key(), &p2) != (w.key(), &procs) {
                    moved = true;
                }
                stack.push((w2, p2));
            }
            let all_done = procs.iter().all(|p| p.left == 0);
            assert!(moved || all_done, "stuck: {procs:?} {:?}", w.key());
        }
        seen.len()
    }

    #[test]
    fn every_interleaving_small() {
        for n in 1..=4 {
            for (leader, sleepers) in [(false, false), (false, true), (true, false)] {
                let rounds = if n <= 3 { 3 } else { 2 };
                let states = explore(n, rounds, 0, leader, sleepers);
                assert!(states > n, "n={n}");
            }
        }
    }

    #[test]
    fn every_interleaving_across_wrap() {
        explore(3, 3, u32::MAX - 1, false, true);
        explore(3, 3, u32::MAX - 1, true, false);
    }

    /// Wires as one rank sees them: its own input store waits in its store
    /// buffer until `flush`, as x86 lets a later load pass it.
    struct Buffered<'a> {
        model: &'a Model,
        me: usize,
        pending: Cell<Option<u32>>,
    }

    impl Buffered<'_> {
        fn flush(&self) {
            if let Some(gen) = self.pending.take() {
                self.model.set_input(self.me, gen);
            }
        }
    }

    impl Wires for Buffered<'_> {
        fn input(&self, i: usize) -> u32 {
            match self.pending.get() {
                Some(gen) if i == self.me => gen,
                _ => self.model.input(i),
            }
        }
        fn set_input(&self, i: usize, gen: u32) {
            assert_eq!(i, self.me);
            self.pending.set(Some(gen));
        }
        fn output(&self) -> u32 {
            self.model.output()
        }
        fn raise_output(&self, gen: u32) -> bool {
            self.model.raise_output(gen)
        }
        fn has_sleepers(&self) -> bool {
            self.model.has_sleepers()
        }
    }

    /// The last two peers arrive together and each misses the other's
    /// input; one of them must still raise the output for a rank asleep
    /// on it when it sees everyone later.
    #[test]
    fn the_last_two_arrivers_missing_each_other_still_wake_sleepers() {
        let members = [0, 1, 2];
        // Rank 2 arrived first and sleeps on the output.
        let model = Model::new(3, 0, true);
        model.set_input(2, 1);
        let view = |me| Buffered {
            model: &model,
            me,
            pending: Cell::new(None),
        };
        let (v0, v1) = (view(0), view(1));
        let (mut r0, mut r1) = (
            DeviceRank::new(0, 1, Role::Peer),
            DeviceRank::new(1, 1, Role::Peer),
        );
        assert_eq!(r0.poll(&v0, &members), Step::Pending);
        assert_eq!(r1.poll(&v1, &members), Step::Pending);
        v0.flush();
        v1.flush();
        let a = r0.poll(&v0, &members);
        let b = r1.poll(&v1, &members);
        assert_eq!(
            model.output(),
            1,
            "nobody raised: the sleeper waits out its timeout"
        );
        let raised = [a, b]
            .iter()
            .filter(|s| **s == Step::Done { raised: true })
            .count();
        assert_eq!(
            raised, 1,
            "{a:?} {b:?}: one raises, and so wakes the sleeper"
        );
    }

    #[test]
    fn reached_wraps() {
        assert!(reached(5, 5));
        assert!(reached(6, 5));
        assert!(!reached(4, 5));
        assert!(reached(0, u32::MAX));
        assert!(!reached(u32::MAX, 0));
    }

    /// Thousands of consecutive barriers under a seeded random schedule.
    #[test]
    fn thousands_of_barriers_random_order() {
        let n = 6;
        let members: Vec<usize> = (0..n).collect();
        for leader in [false, true] {
            let roles = roles(n, leader);
            // With sleepers announced, the output tracks every barrier.
            let w = Model::new(n, 0, true);
            let mut devs: Vec<DeviceRank> =
                (0..n).map(|i| DeviceRank::new(i, 1, roles[i])).collect();
            let mut done = vec![0u32; n];
            let mut rng = crate::sim::XorShift::new(7 + u64::from(leader));
            let target = 5000;
            let mut steps = 0u64;
            while done.iter().any(|&d| d < target) {
                steps += 1;
                assert!(steps < 50_000_000, "no progress");
                let r = rng.below(n);
                if done[r] == target {
                    continue;
                }
                match devs[r].step(&w, &members) {
                    Step::Done { .. } => {
                        let g = devs[r].generation();
                        // Everyone finished the previous barrier and entered this one.
                        assert!(done.iter().all(|&d| d >= done[r]));
                        assert!((0..n).all(|q| reached(w.input(q), g)));
                        done[r] += 1;
                        assert_eq!(g, done[r]);
                        devs[r] = DeviceRank::new(r, g + 1, roles[r]);
                    }
                    Step::Gathered => {
                        devs[r].release(&w);
                    }
                    _ => {}
                }
            }
            assert_eq!(w.output(), target);
        }
    }
}
