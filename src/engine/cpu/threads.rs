//! The compute threads of a forward pass: a team, or the calling thread alone for a decode
//! step, whichever is measured faster now.

use super::*;

/// Runs forward passes on a [`Team`] of compute threads, and decode steps on the team or on the
/// calling thread alone, whichever is measured faster now.
///
/// Why: beside a process that holds a core, a parallel loop can wait a scheduler time slice
/// for the thread that lost its core, and a decode step has ~150 loops; one thread then beats
/// two (measured here: 62 vs 50 tok/s on SmolLM2 with one core busy, 64 vs 100 idle). So the
/// chooser keeps a moving average of ms per step for each mode, uses the faster, and every
/// [`PROBE_EVERY`] steps re-measures the other for [`PROBE_LEN`] steps (the first of which is
/// not counted: it pays the hand-over), less often while the other stays clearly slower (up to
/// every [`MAX_PROBE_EVERY`] steps). Prefill (many rows per call) always uses the team.
#[derive(Debug)]
pub(crate) struct Threads {
    /// Team size: the global rayon pool's (set by `init_threads` / the daemon).
    size: usize,
    /// Spawned on the first pass, from the thread that runs it, so the workers inherit that
    /// thread's priority (the daemon's model thread runs at a lower one).
    team: std::sync::OnceLock<Team>,
    state: std::sync::Mutex<Chooser>,
}

/// Steps between probes of the mode not in use, at first and after the mode changes.
const PROBE_EVERY: usize = 48;
/// Most steps between probes: each probe that finds the other mode slower by
/// [`BACKOFF_MARGIN`] doubles the interval up to this. Why: beside a busy process, a team
/// step is ~3x a one-thread step, so 3 probe steps in 51 cost ~10% (measured: 2 threads
/// beside a busy process reached 0.93 of one thread alone); at 384 they cost ~1.5%, and a
/// change of load is still noticed within a few seconds of decoding.
const MAX_PROBE_EVERY: usize = 384;
/// How much slower the probed mode must be for the next probe to wait twice as long.
const BACKOFF_MARGIN: f64 = 1.25;
/// Steps per probe.
const PROBE_LEN: usize = 3;

#[derive(Debug, Default)]
struct Chooser {
    /// Moving average of ms per step: `[team, one thread]`; 0 = not measured yet.
    ema_ms: [f64; 2],
    since_probe: usize,
    probe_left: usize,
    probe_mode: usize,
    /// A probe ran since the last step in the chosen mode (judged on the next pick).
    probed: bool,
    /// The mode in use (outside probes).
    current: usize,
    /// Steps between probes now (0 = [`PROBE_EVERY`]).
    interval: usize,
    /// Per mode: the next counted step starts its average afresh (set when a probe starts).
    fresh: [bool; 2],
}

impl Threads {
    /// A chooser for a team as large as rayon's global pool; both modes unmeasured.
    pub fn new() -> Self {
        Threads {
            size: rayon::current_num_threads().max(1),
            team: Default::default(),
            state: Default::default(),
        }
    }

    /// Runs `f` on the calling thread with its parallel loops on the team, or on this thread
    /// alone when that is faster for decode steps (`decode`), measured as described on
    /// [`Threads`].
    pub fn run<R>(&self, decode: bool, f: impl FnOnce() -> R) -> R {
        let team = self.team.get_or_init(|| Team::new(self.size));
        if !decode || team.size() == 1 {
            return with_team(Some(team), f);
        }
        let (mode, counted) = self.pick();
        let t0 = std::time::Instant::now();
        let r = with_team((mode == 0).then_some(team), f);
        if counted {
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            // A probe's first counted step replaces the stale average of its mode, so a mode
            // that became faster wins at once instead of after the back-off's longer waits.
            let fresh = std::mem::take(&mut s.fresh[mode]);
            let e = &mut s.ema_ms[mode];
            *e = if *e == 0.0 || fresh {
                ms
            } else {
                0.5 * *e + 0.5 * ms
            };
        }
        r
    }

    /// The mode for the next step and whether its time counts.
    fn pick(&self) -> (usize, bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.probe_left > 0 {
            s.probe_left -= 1;
            return (s.probe_mode, s.probe_left < PROBE_LEN - 1);
        }
        let [pool, one] = s.ema_ms;
        let best = usize::from(one > 0.0 && (pool == 0.0 || one < pool));
        if best != s.current {
            // A new mode (after a probe, or the one in use got slower): probe soon.
            s.current = best;
            s.interval = PROBE_EVERY;
            s.probed = false;
        } else if std::mem::take(&mut s.probed) {
            let clearly_slower = s.ema_ms[1 - best] > BACKOFF_MARGIN * s.ema_ms[best];
            s.interval = if clearly_slower {
                (s.interval.max(PROBE_EVERY) * 2).min(MAX_PROBE_EVERY)
            } else {
                PROBE_EVERY
            };
        }
        s.since_probe += 1;
        if s.since_probe >= s.interval.max(PROBE_EVERY) {
            s.probed = true;
            s.fresh[1 - best] = true;
            s.since_probe = 0;
            s.probe_mode = 1 - best;
            s.probe_left = PROBE_LEN - 1;
            return (1 - best, false);
        }
        (best, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_chooser_probes_and_switches_to_the_faster_mode() {
        let th = Threads::new();
        // Unmeasured: the pool; after PROBE_EVERY steps, a probe of one thread whose first
        // step is not counted.
        for _ in 0..PROBE_EVERY - 1 {
            assert_eq!(th.pick(), (0, true));
        }
        assert_eq!(th.pick(), (1, false));
        for _ in 1..PROBE_LEN {
            assert_eq!(th.pick(), (1, true));
        }
        // One thread measured faster: it becomes the mode, and the pool gets probed.
        th.state.lock().unwrap().ema_ms = [20.0, 12.0];
        assert_eq!(th.pick(), (1, true));
        for _ in 1..PROBE_EVERY - 1 {
            th.pick();
        }
        assert_eq!(th.pick(), (0, false));
        // The pool stays clearly slower: each probe waits twice as long as the last, up to
        // MAX_PROBE_EVERY.
        let mut gaps = Vec::new();
        let mut since = 0;
        for _ in 0..4000 {
            let (mode, _) = th.pick();
            if mode == 0 {
                if since > 0 {
                    gaps.push(since);
                }
                since = 0;
            } else {
                since += 1;
            }
        }
        // (A gap counts the steps in the chosen mode: the interval less the probe's first.)
        assert_eq!(gaps[..4], [95, 191, 383, 383]);
        // The pool measured faster: it takes over and probes come every PROBE_EVERY again.
        th.state.lock().unwrap().ema_ms = [10.0, 12.0];
        let modes: Vec<usize> = (0..3 * PROBE_EVERY + PROBE_LEN)
            .map(|_| th.pick().0)
            .collect();
        let probes = modes.iter().filter(|&&m| m == 1).count();
        assert!(
            (2 * PROBE_LEN..=3 * PROBE_LEN).contains(&probes),
            "{probes} one-thread probe steps"
        );
        // The other mode only slightly slower (under BACKOFF_MARGIN): probes stay every
        // PROBE_EVERY steps.
        th.state.lock().unwrap().ema_ms = [10.0, 11.0];
        let modes: Vec<usize> = (0..6 * PROBE_EVERY).map(|_| th.pick().0).collect();
        let probes = modes.iter().filter(|&&m| m == 1).count();
        assert!(probes >= 5 * PROBE_LEN, "{probes} one-thread probe steps");
    }
}
