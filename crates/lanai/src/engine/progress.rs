//! Progress and the wait policy: poll every transport, spin, then sleep
//! where a sender's wake-up (or TCP traffic) will find us.

use super::coll_ref;
use super::error::{MpiError, MpiResult};
use super::net::{self, Net};
use super::Engine;
use super::Spin;
use lanai_wire::envelope::Kind;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a waiting rank, or an idle engine with a core of its own,
/// spins without yielding: a `sched_yield` per poll is a system call that
/// delays seeing what it waits for.
pub(crate) const PURE_SPIN: Duration = Duration::from_micros(50);

/// Time between idle polls of a rank whose only transport is TCP: a read
/// of an empty socket takes the socket lock that the sender's delivery
/// needs, and polling back to back slowed the 0-byte ping-pong by about
/// 0.1 us. It was 64 pauses, 1.46 us on the AMD cores here; a pause takes
/// several times as long on recent Intel cores, so it is timed instead.
const TCP_POLL_GAP: Duration = Duration::from_nanos(1460);

/// Pause instructions that take about [`TCP_POLL_GAP`] on this CPU,
/// timed once per process when first needed.
fn tcp_only_pauses() -> u32 {
    static PAUSES: OnceLock<u32> = OnceLock::new();
    *PAUSES.get_or_init(|| pauses_for(TCP_POLL_GAP))
}

/// How many pause instructions take `gap`: the fastest of three timed runs
/// (a run the scheduler interrupts only looks slower), at least one.
fn pauses_for(gap: Duration) -> u32 {
    const RUN: u32 = 256;
    let fastest = (0..3)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..RUN {
                std::hint::spin_loop();
            }
            t.elapsed()
        })
        .min()
        .unwrap_or_default();
    let n = gap.as_nanos() * u128::from(RUN) / fastest.as_nanos().max(1);
    n.clamp(1, 4096) as u32
}

impl Engine {
    /// One pass over every transport. True if anything happened.
    pub fn progress(&mut self, may_block: bool) -> MpiResult<bool> {
        if !self.signing {
            return self.progress_pass(may_block);
        }
        // Instances started here belong to other operations than the call
        // being started (deferred broadcasts, persistent ones): they carry
        // no call.
        self.signing = false;
        let r = self.progress_pass(may_block);
        self.signing = true;
        r
    }

    fn progress_pass(&mut self, may_block: bool) -> MpiResult<bool> {
        let mut did = false;
        self.tick = self.tick.wrapping_add(1);
        // Posting a descriptor or `drive_offload` (below) changes it; one
        // posted during this pass is seen on the next.
        let engine_busy = self.offload.as_ref().is_some_and(|o| o.busy());
        let Net {
            shm,
            partial,
            local_world,
            ..
        } = &mut self.net;
        if let Some(shm) = shm.as_mut() {
            let n = shm.local_size();
            let me = shm.me();
            for i in 0..n {
                if i == me {
                    continue;
                }
                let from = local_world[i];
                let st = &mut self.st;
                let part = &mut partial[i];
                let may_read = self.settings.single_copy;
                while let Some(r) = shm.poll(i, |env, p| {
                    if env.kind == Kind::Coll && env.flags & coll_ref::BY_REF != 0 {
                        // Read now, so the message keeps its place in order.
                        st.deliver_ref(env, from, p, may_read);
                    } else if env.flags & net::FRAG_MORE != 0 {
                        part.extend_from_slice(p);
                    } else if !part.is_empty() {
                        part.extend_from_slice(p);
                        let whole = std::mem::take(part);
                        st.deliver(env, from, &whole);
                    } else {
                        st.deliver(env, from, p);
                    }
                }) {
                    r.map_err(MpiError::internal)?;
                    did = true;
                }
            }
            did |= self.net.flush_backlog();
            if let Some(e) = self.st.colls.refs.refused.take() {
                self.single_copy_failed(e);
            }
        }
        if let Some(tcp) = self.net.tcp.as_mut() {
            // A system call per pass would slow shared memory down; TCP is
            // polled every few passes unless we are about to block anyway.
            // With no shared-memory peer there is nothing else to poll, and
            // an oversubscribed rank yields after each idle pass, which
            // costs far more than the system call.
            // A rank waiting for its engine watches the completion words: a
            // system call per pass would only delay seeing them.
            let every_pass =
                (self.net.shm.is_none() && !engine_busy) || self.settings.oversubscribed;
            if may_block || every_pass || self.tick.is_multiple_of(8) || tcp.has_pending_output() {
                let p = tcp
                    .progress_into(Some(Duration::ZERO), &mut self.st)
                    .map_err(|e| self.lost_peer(e))?;
                did |= p.delivered > 0;
            }
        }
        if !self.st.followups.is_empty() {
            self.run_followups()?;
            did = true;
        }
        if !self.st.persistent_children.is_empty() {
            self.settle_persistent();
        }
        if self.st.colls.has_work() {
            did |= self.drive_colls()?;
        }
        if !self.st.colls.central.is_empty() {
            did |= self.drive_central()?;
        }
        if !self.st.colls.mail.is_empty() {
            did |= self.drive_mail()?;
        }
        if !self.st.idups.is_empty() {
            did |= self.drive_idups()?;
        }
        if !self.st.inter_ops.is_empty() {
            did |= self.drive_inter_ops()?;
        }
        if !self.st.transfers.is_empty() {
            did |= self.drive_transfers()?;
        }
        if engine_busy {
            did |= self.drive_offload()?;
        }
        // Last, so that parts completed in this pass count.
        if !self.st.composites.is_empty() {
            did |= self.start_deferred_bcasts()?;
            self.settle_composites();
        }
        Ok(did)
    }

    fn lost_peer(&self, e: lanai_tcp::TcpError) -> MpiError {
        MpiError::peer_lost(format!("rank {}: {e}", self.job.rank))
    }

    /// Sleeps until a peer wakes us or `timeout` passes.
    fn block(&mut self, timeout: Duration) -> MpiResult<()> {
        if self.net.has_backlog() {
            // Our own messages wait for ring space, which the receiver frees
            // without waking anyone: stay runnable and keep pushing.
            std::thread::yield_now();
            return Ok(());
        }
        if let Some((ch, gen)) = self.central_sleeper() {
            // Only a barrier on the device is left to wait for: sleep on its
            // output, where one wake-up releases every local rank.
            self.central_sleep(ch, gen, timeout)?;
            return self.check_liveness();
        }
        self.net.counters.sleeps += 1;
        // Device barriers in flight raise their output (and ring us) only
        // for announced sleepers; the heavy fence of `set_sleeping` below
        // then orders the announcement before our last look.
        let announced = self.central_announce();
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_sleeping(true);
        }
        if let Some(o) = self.offload.as_ref() {
            o.set_sleeping(true);
        }
        // A message may have arrived between the last poll and the flag.
        // A slot too: mailbox posts pace their looks, and this one must look.
        self.mail_look_now();
        let ready = self.progress(false)?;
        if !ready {
            if let Some(tcp) = self.net.tcp.as_mut() {
                let r = tcp.progress_into(Some(timeout), &mut self.st);
                if let Err(e) = r {
                    if let Some(shm) = self.net.shm.as_ref() {
                        shm.set_sleeping(false);
                    }
                    if let Some(o) = self.offload.as_ref() {
                        o.set_sleeping(false);
                    }
                    self.central_retire(&announced);
                    return Err(self.lost_peer(e));
                }
            } else if let Some(d) = self.net.doorbell.as_ref() {
                let mut fds = [nix::poll::PollFd::new(d.fd(), nix::poll::PollFlags::POLLIN)];
                let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
                let n = nix::poll::poll(
                    &mut fds,
                    nix::poll::PollTimeout::try_from(ms).unwrap_or(nix::poll::PollTimeout::MAX),
                );
                if n == Ok(0) {
                    self.net.counters.sleep_timeouts += 1;
                }
            } else {
                std::thread::yield_now();
            }
        }
        if let Some(d) = self.net.doorbell.as_ref() {
            d.drain();
        }
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_sleeping(false);
        }
        if let Some(o) = self.offload.as_ref() {
            o.set_sleeping(false);
        }
        self.central_retire(&announced);
        self.check_liveness()
    }

    /// Under a launcher that does not kill the job, notice dead local peers.
    fn check_liveness(&mut self) -> MpiResult<()> {
        if self.last_liveness.elapsed() < Duration::from_secs(1) {
            return Ok(());
        }
        self.last_liveness = Instant::now();
        if let Some(why) = self.offload.as_mut().and_then(|o| o.engine_died()) {
            return Err(MpiError::peer_lost(why));
        }
        if let Some(shm) = self.net.shm.as_ref() {
            for i in 0..shm.local_size() {
                let pid = shm.peer_pid(i);
                if pid > 0
                    && !shm.peer_finished(i)
                    && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
                        == Err(nix::Error::ESRCH)
                {
                    return Err(MpiError::peer_lost(format!(
                        "rank {} (pid {pid}) died",
                        self.net.local_world[i]
                    )));
                }
            }
        }
        // Waiting this long in a blocking collective: did a member call it
        // differently (the messages said so, or on this node, the calls
        // published)?
        self.fail_faulted()?;
        self.fail_crossed_instances()?;
        self.fail_crossed_transfers()?;
        self.show_calls()?;
        self.check_call()
    }

    /// Progresses until `done()` holds: spin, then (yielding when the node
    /// is oversubscribed) block.
    pub fn wait_until_mut(
        &mut self,
        done: impl FnMut(&mut Self) -> MpiResult<bool>,
    ) -> MpiResult<()> {
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_waiting(true);
        }
        let r = self.wait_loop(done);
        if let Some(shm) = self.net.shm.as_ref() {
            shm.set_waiting(false);
        }
        r
    }

    fn wait_loop(&mut self, mut done: impl FnMut(&mut Self) -> MpiResult<bool>) -> MpiResult<()> {
        let mut idle = 0u32;
        let mut idle_since: Option<Instant> = None;
        let mut yielding = false;
        let tcp_only = self.net.shm.is_none() && self.net.tcp.is_some();
        while !done(self)? {
            // Pauses keep an idle TCP poll off the socket lock; a completion
            // word from the engine wants looking at far more often.
            let pause = if tcp_only && !self.offload.as_ref().is_some_and(|o| o.busy()) {
                tcp_only_pauses()
            } else {
                1
            };
            // With only a device operation left, its wires are all there is
            // to watch (as when it sleeps on them): a full pass over every
            // transport would only delay seeing the last arrival.
            let moved = if self.central_sleeper().is_some() {
                self.drive_central()?
            } else if self.st.colls.mail.len() == 1
                && self.st.colls.central.is_empty()
                && self.owes_nothing_but_one()
            {
                self.drive_mail()?
            } else {
                self.progress(false)?
            };
            if moved {
                idle = 0;
                idle_since = None;
                yielding = false;
                continue;
            }
            idle += 1;
            // Pure spinning at first; then yielding between polls, which is
            // nearly free when the rank has its core alone and hands the core
            // over at once when the rank it waits for shares it; then sleep.
            let spun_enough = match self.settings.spin {
                Spin::Time(limit) => {
                    if idle.is_multiple_of(256) {
                        let waited = idle_since.get_or_insert_with(Instant::now).elapsed();
                        yielding |= waited >= PURE_SPIN;
                        waited >= limit
                    } else {
                        false
                    }
                }
                Spin::Polls(n) => idle >= n,
            };
            if !spun_enough {
                if yielding || self.settings.oversubscribed {
                    std::thread::yield_now();
                } else {
                    for _ in 0..pause {
                        std::hint::spin_loop();
                    }
                }
                continue;
            }
            if !done(self)? {
                self.block(Duration::from_millis(100))?;
            }
            idle = 0;
            idle_since = None;
            yielding = false;
        }
        Ok(())
    }

    pub fn wait_until(&mut self, mut done: impl FnMut(&Self) -> bool) -> MpiResult<()> {
        self.wait_until_mut(|e| Ok(done(e)))
    }

    pub fn is_done(&self, req: usize) -> bool {
        self.st.reqs.get(req).is_none_or(|r| r.done)
    }

    pub fn wait(&mut self, req: usize) -> MpiResult<()> {
        self.wait_until(|e| e.is_done(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_are_counted_for_a_time() {
        let n = pauses_for(TCP_POLL_GAP);
        assert!((1..=4096).contains(&n), "{n}");
        assert!(pauses_for(Duration::ZERO) == 1);
        assert!(pauses_for(Duration::from_secs(1)) == 4096);
        assert_eq!(tcp_only_pauses(), tcp_only_pauses(), "timed once");
    }
}
