//! `lanai-devbench`: measures the terms of seed 002's cost model of the
//! central barrier, `t_b = o_w + o_p(P) + o_r`, on this machine, with real
//! processes sharing one segment that holds Lanai's barrier device.
//!
//! - `o_w`: one rank writing its input (`Wires::set_input`, a sequentially
//!   consistent store to the rank's own line), mean over many.
//! - `o_r`: observing a changed output, measured as half the round trip of
//!   a ping-pong between two processes through the device's wires (one
//!   raises the output, the other sees it and answers through its input),
//!   so about one one-way cache-line transfer.
//! - `o_p(P)`: the device logic for P inputs. The P - 1 children set their
//!   inputs for a round; once all have (an arrival counter says so), the
//!   parent times its own `DeviceRank::poll` for that round (its arrival,
//!   the scan of all P inputs, and what the last arriver then does: the
//!   device raises the output only when someone sleeps on it, so here it
//!   reads the sleeper count; `poll_raises` in the JSON counts raises),
//!   minus `o_w` and the timer's own cost. Median over many rounds.
//!
//! The parent spawns `slots - 1` copies of itself (`--child i`) that map
//! the segment by name; it unlinks the name as soon as every child has
//! mapped it, and a guard kills the children (and unlinks the name, if that
//! has not happened yet) on every way out, panics included. Children also
//! ask the kernel for `SIGKILL` when the parent dies.
//!
//! Usage: `lanai-devbench [--max-p N] [--rounds R]`; prints one JSON object
//! on stdout.

#![forbid(unsafe_code)]

use lanai_coll::central::{reached, DeviceRank, Role, Step, Wires};
use mpi::shm::barrier_device::{device_len, Channel, Device};
use mpi::shm::Segment;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const LINE: usize = 64;
/// Channels of the device: the barrier whose `o_p` is measured, the
/// doorbell children sleep on between orders, and the ping-pong wires.
const BARRIER: usize = 0;
const DOOR: usize = 1;
const PINGPONG: usize = 2;
const CHANNELS: usize = 3;

/// Orders the parent publishes to the children.
const CMD_ROUND: u64 = 1;
const CMD_PINGPONG: u64 = 2;
const CMD_QUIT: u64 = 3;

/// How long any wait may take before the run is declared stuck.
const STUCK: Duration = Duration::from_secs(20);

/// Where things live in the segment: the device, then a control area of
/// three lines (ready counter, arrival counter, the current order).
#[derive(Debug, Clone, Copy)]
struct Layout {
    slots: usize,
    ctl: usize,
    len: usize,
}

impl Layout {
    fn new(slots: usize) -> Self {
        let ctl = device_len(slots, CHANNELS).div_ceil(LINE) * LINE;
        Self {
            slots,
            ctl,
            len: ctl + 3 * LINE,
        }
    }
}

/// One process's view of the shared segment.
struct Shared<'a> {
    seg: &'a Segment,
    lay: Layout,
}

/// An order: sequence number (also the barrier generation of a round),
/// command, and an argument (P for a round, iterations for a ping-pong),
/// packed in one word so a child always reads a consistent order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Order {
    seq: u32,
    cmd: u64,
    arg: u32,
}

impl Order {
    fn pack(self) -> u64 {
        u64::from(self.seq) | (self.cmd << 32) | (u64::from(self.arg & 0x00ff_ffff) << 40)
    }

    fn unpack(w: u64) -> Self {
        Self {
            seq: w as u32,
            cmd: (w >> 32) & 0xff,
            arg: (w >> 40) as u32,
        }
    }
}

impl<'a> Shared<'a> {
    fn new(seg: &'a Segment, lay: Layout) -> Result<Self, String> {
        if seg.len() < lay.len {
            return Err("segment too small".into());
        }
        Ok(Self { seg, lay })
    }

    fn device(&self) -> Result<Device<'a>, String> {
        Device::new(self.seg, 0, self.lay.slots, CHANNELS)
            .ok_or_else(|| "the device does not fit the segment".to_string())
    }

    fn ready(&self) -> &std::sync::atomic::AtomicU32 {
        self.seg.atomic_u32(self.lay.ctl)
    }

    fn arrived(&self) -> &std::sync::atomic::AtomicU32 {
        self.seg.atomic_u32(self.lay.ctl + LINE)
    }

    fn order(&self) -> Order {
        Order::unpack(
            self.seg
                .atomic_u64(self.lay.ctl + 2 * LINE)
                .load(Ordering::SeqCst),
        )
    }

    fn set_order(&self, o: Order) {
        self.seg
            .atomic_u64(self.lay.ctl + 2 * LINE)
            .store(o.pack(), Ordering::SeqCst);
    }
}

// ------------------------------------------------------------------ options

#[derive(Debug)]
enum Mode {
    Parent {
        max_p: usize,
        rounds: usize,
    },
    Child {
        me: usize,
        name: String,
        slots: usize,
        parent: i32,
    },
}

const USAGE: &str = "usage: lanai-devbench [--max-p N] [--rounds R]\n\
  Measures seed 002's cost model terms o_w, o_r and o_p(P) (P = 1..N, default 16)\n\
  of Lanai's shared-memory barrier device; prints JSON on stdout.\n\
  --rounds R: rounds per P for o_p (default 300); the ping-pong runs 20 R round trips.";

fn parse_args(args: &[String]) -> Result<Mode, String> {
    let mut max_p = 16usize;
    let mut rounds = 300usize;
    let mut child: Option<usize> = None;
    let mut name = None;
    let mut slots = None;
    let mut parent = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |what: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{what} needs a value\n{USAGE}"))
        };
        let num = |s: String, what: &str| {
            s.parse::<usize>()
                .map_err(|_| format!("{what}: not a number: {s}"))
        };
        match a.as_str() {
            "--max-p" => max_p = num(val("--max-p")?, "--max-p")?,
            "--rounds" => rounds = num(val("--rounds")?, "--rounds")?,
            "--child" => child = Some(num(val("--child")?, "--child")?),
            "--name" => name = Some(val("--name")?),
            "--slots" => slots = Some(num(val("--slots")?, "--slots")?),
            "--parent" => parent = Some(num(val("--parent")?, "--parent")?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if let Some(me) = child {
        let (Some(name), Some(slots), Some(parent)) = (name, slots, parent) else {
            return Err("--child needs --name, --slots and --parent".into());
        };
        let parent = i32::try_from(parent).map_err(|_| "bad --parent".to_string())?;
        return Ok(Mode::Child {
            me,
            name,
            slots,
            parent,
        });
    }
    if !(1..=256).contains(&max_p) {
        return Err("--max-p must be between 1 and 256".into());
    }
    if !(1..=1_000_000).contains(&rounds) {
        return Err("--rounds must be between 1 and 1000000".into());
    }
    Ok(Mode::Parent { max_p, rounds })
}

// ------------------------------------------------------------------ waiting

/// Busy-waits until `done`, spinning first and then yielding (on 2 cores
/// the process we wait for may need ours). `check` runs now and then and
/// may abort the wait.
fn wait_until(
    mut done: impl FnMut() -> bool,
    mut check: impl FnMut() -> Result<(), String>,
) -> Result<(), String> {
    let mut n = 0u64;
    while !done() {
        n += 1;
        if n < 4096 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
        if n.is_multiple_of(1024) {
            check()?;
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ child

fn child_main(me: usize, name: &str, slots: usize, parent: i32) -> Result<(), String> {
    // Die with the parent; and if it is already gone, do not start.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    let parent = Pid::from_raw(parent);
    let orphaned = move || nix::unistd::getppid() != parent;
    if orphaned() {
        return Err("parent gone".into());
    }
    let lay = Layout::new(slots);
    let seg = Segment::open(name, lay.len).map_err(|e| format!("open {name}: {e}"))?;
    let sh = Shared::new(&seg, lay)?;
    let dev = sh.device()?;
    let (barrier, door, ping) = (
        dev.channel(BARRIER),
        dev.channel(DOOR),
        dev.channel(PINGPONG),
    );
    sh.ready().fetch_add(1, Ordering::SeqCst);
    let check = || {
        if orphaned() {
            Err("parent gone".to_string())
        } else {
            Ok(())
        }
    };
    let mut last = 0u32;
    loop {
        // Sleep on the doorbell until the parent rings past `last`.
        loop {
            let seen = door.output();
            if reached(seen, last.wrapping_add(1)) {
                break;
            }
            // Announce first, then look once more: either that look sees
            // the new order, or the parent sees us and wakes us.
            door.announce();
            let seen = door.output();
            if !reached(seen, last.wrapping_add(1)) {
                door.wait(seen, Duration::from_millis(50));
            }
            door.retire();
            check()?;
        }
        // The order is written before the bell rings, so it is at least
        // as new as the bell; it may be newer, which is fine.
        let o = sh.order();
        last = o.seq;
        match o.cmd {
            CMD_ROUND if me < o.arg as usize => {
                barrier.set_input(me, o.seq);
                sh.arrived().fetch_add(1, Ordering::SeqCst);
            }
            CMD_PINGPONG if me == 1 => {
                for k in 1..=o.arg {
                    wait_until(|| reached(ping.output(), k), check)?;
                    ping.set_input(1, k);
                }
                sh.arrived().fetch_add(1, Ordering::SeqCst);
            }
            CMD_QUIT => return Ok(()),
            _ => {}
        }
    }
}

// ------------------------------------------------------------------ parent

/// The children and the segment's name: killed and unlinked on drop, so
/// every way out of the parent (errors, panics) cleans up.
struct Fleet {
    kids: Vec<Child>,
    name: Option<String>,
}

impl Fleet {
    fn unlink(&mut self) {
        if let Some(n) = self.name.take() {
            let _ = Segment::unlink(&n);
        }
    }

    /// Fails when a child has exited early.
    fn check(&mut self) -> Result<(), String> {
        for (i, k) in self.kids.iter_mut().enumerate() {
            if let Ok(Some(st)) = k.try_wait() {
                return Err(format!("child {} exited early ({st})", i + 1));
            }
        }
        Ok(())
    }

    /// Waits up to `limit` for every child to exit by itself.
    fn reap(&mut self, limit: Duration) {
        let end = Instant::now() + limit;
        for k in &mut self.kids {
            while matches!(k.try_wait(), Ok(None)) && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for k in &mut self.kids {
            if matches!(k.try_wait(), Ok(None)) {
                let _ = k.kill();
            }
            let _ = k.wait();
        }
        self.unlink();
    }
}

fn median(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The cost of reading the clock twice, in µs (median).
fn timer_overhead() -> f64 {
    let mut xs: Vec<f64> = (0..2001)
        .map(|_| {
            let t = Instant::now();
            us(t.elapsed())
        })
        .collect();
    median(&mut xs)
}

/// `o_w`: mean time of one `set_input` to this rank's own input line,
/// median over batches of many stores.
fn measure_o_w(ch: &Channel<'_>) -> f64 {
    const N: u32 = 200_000;
    let mut batches: Vec<f64> = (0..7)
        .map(|b| {
            let t = Instant::now();
            for g in 0..N {
                ch.set_input(0, std::hint::black_box(g.wrapping_add(b)));
            }
            us(t.elapsed()) / f64::from(N)
        })
        .collect();
    ch.set_input(0, 0);
    median(&mut batches)
}

struct Report {
    raises: u64,
    cores: usize,
    rounds: usize,
    pingpong_iters: u32,
    timer_us: f64,
    o_w: f64,
    o_r: f64,
    /// (P, o_p(P), raw median poll time)
    o_p: Vec<(usize, f64, f64)>,
}

fn parent_main(max_p: usize, rounds: usize) -> Result<Report, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let slots = max_p.max(2);
    let lay = Layout::new(slots);
    let pid = std::process::id();
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("/lanai-devbench-{pid}-{nonce:x}");
    let seg = Segment::create(&name, lay.len).map_err(|e| format!("create {name}: {e}"))?;
    let mut fleet = Fleet {
        kids: Vec::new(),
        name: Some(name.clone()),
    };
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    for i in 1..slots {
        let kid = Command::new(&exe)
            .args(["--child", &i.to_string(), "--name", &name])
            .args(["--slots", &slots.to_string(), "--parent", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn child {i}: {e}"))?;
        fleet.kids.push(kid);
    }
    let sh = Shared::new(&seg, lay)?;
    let dev = sh.device()?;
    let (barrier, door, ping) = (
        dev.channel(BARRIER),
        dev.channel(DOOR),
        dev.channel(PINGPONG),
    );

    // Everyone wraps up waits the same way: a deadline and dead children.
    let deadline = |fleet: &mut Fleet, since: Instant, what: &str| -> Result<(), String> {
        fleet.check()?;
        if since.elapsed() > STUCK {
            return Err(format!("stuck waiting for {what}"));
        }
        Ok(())
    };
    let want = (slots - 1) as u32;
    let t = Instant::now();
    wait_until(
        || sh.ready().load(Ordering::SeqCst) == want,
        || deadline(&mut fleet, t, "the children to map the segment"),
    )?;
    // Every child has mapped the segment: the name is no longer needed.
    fleet.unlink();

    let mut seq = 0u32;
    let mut arrivals = 0u32;
    let ring = |seq: u32, cmd: u64, arg: u32| {
        sh.set_order(Order { seq, cmd, arg });
        door.raise_output(seq);
        door.wake();
    };

    let timer_us = timer_overhead();
    let o_w = measure_o_w(&barrier);

    // o_r: ping-pong with child 1 on the ping-pong channel.
    let iters = u32::try_from(rounds * 20)
        .unwrap_or(u32::MAX)
        .min(0x00ff_ffff);
    let iters = iters.max(200);
    seq += 1;
    ring(seq, CMD_PINGPONG, iters);
    let mut rtt = Vec::with_capacity(iters as usize);
    for k in 1..=iters {
        let t0 = Instant::now();
        ping.raise_output(k);
        wait_until(
            || reached(ping.input(1), k),
            || deadline(&mut fleet, t0, "the ping-pong"),
        )?;
        rtt.push(us(t0.elapsed()));
    }
    arrivals += 1;
    let t = Instant::now();
    wait_until(
        || sh.arrived().load(Ordering::SeqCst) == arrivals,
        || deadline(&mut fleet, t, "the end of the ping-pong"),
    )?;
    // The first round trips include waking child 1 from its sleep.
    let skip = (iters as usize / 10).min(1000);
    let o_r = ((median(&mut rtt[skip..]) - timer_us) / 2.0).max(0.0);

    // o_p(P): children set their inputs, then the parent's poll is timed.
    let warmup = (rounds / 10).clamp(3, 50);
    let members: Vec<usize> = (0..slots).collect();
    let mut o_p = Vec::with_capacity(max_p);
    // Rounds whose poll raised the output: the device raises it only for
    // sleepers, and nobody sleeps on the barrier channel here.
    let mut raises = 0u64;
    for p in 1..=max_p {
        let mut polls = Vec::with_capacity(rounds);
        for r in 0..warmup + rounds {
            seq += 1;
            ring(seq, CMD_ROUND, p as u32);
            arrivals += (p - 1) as u32;
            let t = Instant::now();
            wait_until(
                || sh.arrived().load(Ordering::SeqCst) == arrivals,
                || deadline(&mut fleet, t, "the children's inputs"),
            )?;
            let mut me = DeviceRank::new(0, seq, Role::Peer);
            let t0 = Instant::now();
            let step = me.poll(&barrier, &members[..p]);
            let dt = us(t0.elapsed());
            let Step::Done { raised } = step else {
                return Err(format!("P={p}: the device did not complete: {step:?}"));
            };
            if r >= warmup {
                polls.push(dt);
                raises += u64::from(raised);
            }
        }
        let raw = median(&mut polls);
        o_p.push((p, (raw - o_w - timer_us).max(0.0), raw));
    }

    seq += 1;
    ring(seq, CMD_QUIT, 0);
    fleet.reap(Duration::from_secs(2));
    drop(fleet);
    Ok(Report {
        raises,
        cores,
        rounds,
        pingpong_iters: iters,
        timer_us,
        o_w,
        o_r,
        o_p,
    })
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4}")
    } else {
        "null".into()
    }
}

fn to_json(r: &Report) -> String {
    let map = |f: &dyn Fn(&(usize, f64, f64)) -> f64| {
        r.o_p
            .iter()
            .map(|e| format!("\"{}\": {}", e.0, num(f(e))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{{\"o_w_us\": {}, \"o_r_us\": {}, \"o_p_us\": {{{}}}, \"cores\": {}, \
         \"poll_us\": {{{}}}, \"timer_us\": {}, \"rounds\": {}, \"pingpong_iters\": {}, \
         \"poll_raises\": {}, \"oversubscribed_above_p\": {}, \"note\": \"o_p(P) = median time of the parent's \
         DeviceRank::poll once all P inputs are set, minus o_w and the timer cost \
         (poll_us is before subtracting); P above {} means more processes than cores, \
         which this figure excludes\"}}",
        num(r.o_w),
        num(r.o_r),
        map(&|e| e.1),
        r.cores,
        map(&|e| e.2),
        num(r.timer_us),
        r.rounds,
        r.pingpong_iters,
        r.raises,
        r.cores,
        r.cores,
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match parse_args(&args) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("lanai-devbench: {e}");
            return ExitCode::from(2);
        }
    };
    match mode {
        Mode::Child {
            me,
            name,
            slots,
            parent,
        } => match child_main(me, &name, slots, parent) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("lanai-devbench child {me}: {e}");
                ExitCode::FAILURE
            }
        },
        Mode::Parent { max_p, rounds } => match parent_main(max_p, rounds) {
            Ok(r) => {
                if max_p > r.cores {
                    eprintln!(
                        "lanai-devbench: note: P > {} runs more processes than cores; \
                         o_p(P) times only the parent's poll once every input is set, \
                         so it leaves out the scheduling such P costs a real barrier",
                        r.cores
                    );
                }
                println!("{}", to_json(&r));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("lanai-devbench: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
