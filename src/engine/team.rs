//! A fixed team of compute threads for the CPU forward pass: the caller and `n - 1` workers
//! that spin between parallel loops instead of sleeping.
//!
//! Why: a decode step of SmolLM2-135M is ~150 parallel loops of 10-70 µs each. On rayon's pool
//! the helper thread often went to sleep between two loops and each wake-up cost a futex call
//! and a scheduler hand-over: measured on this 2-core machine, a 1536 x 576 Q4_1 matmul took
//! 48 µs on 2 rayon threads against 33 µs on one, and `perf` put ~10% of decode time in the
//! kernel's scheduler. Here a worker that finished its share spins on one atomic word for
//! [`SPIN`] before it parks, so back-to-back loops start within a cache-line transfer; tasks are
//! claimed one at a time from a shared counter, so a thread that loses its core only delays the
//! task it holds (llama.cpp's CPU backend also spins between ops; the claim-counter design here
//! is ours).
//!
//! The split of work into tasks is the caller's: results never depend on which thread runs a
//! task, so output is identical on any team size.

use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rayon::prelude::*;

/// How long an idle worker waits for new work before it parks (a decode step's gap between
/// loops is microseconds; between two steps, sampling takes well under this).
const SPIN: Duration = Duration::from_millis(2);
/// Of [`SPIN`], how long the worker only spins; after that it yields its core on every 64th
/// check, so when another process holds the other core a waiting worker does not take time
/// slices from the thread doing the step's serial work (with nothing else runnable, a yield
/// returns at once).
const PURE_SPIN: Duration = Duration::from_micros(20);
/// How long the caller spins for the team's last task before it yields its core on every
/// 64th check (so a worker that lost its core to another process can run).
const WAIT_SPIN: Duration = Duration::from_micros(50);
/// Most tasks of one loop (the claim word holds the count in 16 bits).
pub(crate) const MAX_TASKS: usize = 0xffff;

type Task<'a> = dyn Fn(usize) + Sync + 'a;

/// The job a loop publishes: the caller's closure (a fat pointer), in a struct on the caller's
/// stack so that a thin pointer to it fits an `AtomicPtr`.
struct Job<'a> {
    f: &'a Task<'a>,
}

struct Shared {
    /// `epoch << 32 | n << 16 | next`: the loop's number, its task count and the next task to
    /// claim. One word, so a claim (a compare-exchange) succeeds only while that loop still
    /// has unclaimed tasks, and then its job is still alive.
    claim: AtomicU64,
    /// The current loop's `Job` (valid while its tasks are unfinished).
    job: AtomicPtr<Job<'static>>,
    /// Tasks of the current loop finished.
    done: AtomicUsize,
    /// A task panicked in this loop.
    panicked: AtomicBool,
    shutdown: AtomicBool,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Shared {
    /// Claims the next task of loop `epoch`, or `None` when it has none left (or is over).
    fn claim(&self, epoch: u64) -> Option<usize> {
        let mut c = self.claim.load(SeqCst);
        loop {
            let (e, n, next) = (c >> 32, (c >> 16) & 0xffff, c & 0xffff);
            if e != epoch || next >= n {
                return None;
            }
            match self.claim.compare_exchange_weak(c, c + 1, SeqCst, SeqCst) {
                Ok(_) => return Some(next as usize),
                Err(now) => c = now,
            }
        }
    }

    /// Runs every task of loop `epoch` this thread can claim.
    fn work(&self, epoch: u64) {
        while let Some(i) = self.claim(epoch) {
            // Read after the claim: the loop holding `epoch` now has an unfinished task (this
            // one), so its caller cannot publish another job until `done` counts it; the job
            // read here is that loop's.
            let job = self.job.load(SeqCst);
            // SAFETY: as above, the caller is still waiting in `for_each`, keeping the job
            // alive until `done` counts this task.
            let f = unsafe { (*job).f };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| f(i))) {
                // Not dropped here: a payload whose drop panics would unwind past `done`.
                std::mem::forget(payload);
                self.panicked.store(true, SeqCst);
            }
            self.done.fetch_add(1, SeqCst);
        }
    }
}

/// The caller plus `size - 1` spinning workers (see the module doc).
pub(crate) struct Team {
    shared: Arc<Shared>,
    /// Held by the thread running a loop: the claim word serves one loop at a time.
    caller: Mutex<()>,
    workers: Vec<JoinHandle<()>>,
    size: usize,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team").field("size", &self.size).finish()
    }
}

impl Team {
    /// A team of `size` threads (at least 1): the caller of [`Team::for_each`] and `size - 1`
    /// workers named `toolsum-team-N`, spawned now. They inherit the creating thread's
    /// scheduling priority (Linux copies the nice value into a new thread). If a worker
    /// cannot be spawned the team is smaller.
    pub fn new(size: usize) -> Team {
        let shared = Arc::new(Shared {
            claim: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        let workers: Vec<_> = (1..size.max(1))
            .filter_map(|i| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("toolsum-team-{i}"))
                    .spawn(move || worker(&s))
                    .ok()
            })
            .collect();
        let size = workers.len() + 1;
        Team {
            shared,
            caller: Mutex::new(()),
            workers,
            size,
        }
    }

    /// Threads in the team, the caller included.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs `f(0) .. f(n - 1)` on the team (the calling thread takes part) and returns when
    /// all have finished. Tasks run in any order, each exactly once. While another thread
    /// runs a loop on the team (or from inside a task), the loop runs on the calling thread
    /// alone.
    ///
    /// # Panics
    /// If `n > MAX_TASKS`, or (after every task has finished) if a task panicked.
    pub fn for_each(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        assert!(n <= MAX_TASKS, "{n} tasks: at most {MAX_TASKS} per loop");
        if n == 0 {
            return;
        }
        // A poisoned lock (a task panicked under it) is still ours to take.
        let busy = match self.caller.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if self.size == 1 || n == 1 || busy.is_none() {
            (0..n).for_each(f);
            return;
        }
        let s = &*self.shared;
        let job = Job { f };
        s.done.store(0, SeqCst);
        s.panicked.store(false, SeqCst);
        s.job
            .store(&job as *const Job<'_> as *mut Job<'static>, SeqCst);
        let epoch = ((s.claim.load(SeqCst) >> 32) + 1) & 0xffff_ffff;
        s.claim.store(epoch << 32 | (n as u64) << 16, SeqCst);
        if s.sleepers.load(SeqCst) > 0 {
            let _g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        s.work(epoch);
        let t0 = Instant::now();
        let mut spins = 0u32;
        while s.done.load(SeqCst) < n {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) && t0.elapsed() > WAIT_SPIN {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        // Every task has finished: no worker will read `job` again (a later claim of this
        // epoch fails), so it may go out of scope.
        if s.panicked.load(SeqCst) {
            resume_unwind(Box::new("a task of a parallel loop panicked"));
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, SeqCst);
        {
            let _g = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// A worker: wait for a new loop (spinning for [`SPIN`], then parked), take part, repeat.
/// A parallel loop started inside one of its tasks runs on this thread alone, as it does on
/// the caller's.
fn worker(s: &Shared) {
    CURRENT.with(|c| c.set(Current::Serial));
    let mut seen = 0u64;
    loop {
        let t0 = Instant::now();
        let mut spins = 0u32;
        let epoch = loop {
            let e = s.claim.load(SeqCst) >> 32;
            if e != seen {
                break e;
            }
            if s.shutdown.load(SeqCst) {
                return;
            }
            spins = spins.wrapping_add(1);
            let waited = if spins.is_multiple_of(64) {
                t0.elapsed()
            } else {
                Duration::ZERO
            };
            if waited > PURE_SPIN && waited <= SPIN {
                std::thread::yield_now();
            } else if waited > SPIN {
                let mut g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
                s.sleepers.fetch_add(1, SeqCst);
                while s.claim.load(SeqCst) >> 32 == seen && !s.shutdown.load(SeqCst) {
                    g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                s.sleepers.fetch_sub(1, SeqCst);
                drop(g);
                spins = 0;
            } else {
                std::hint::spin_loop();
            }
        };
        seen = epoch;
        s.work(epoch);
    }
}

/// An output pointer shared by the tasks of one parallel loop, each writing a disjoint part
/// of the buffer (`CpuModel::attention`'s partials, `matmul_many`'s columns).
#[derive(Clone, Copy)]
pub(crate) struct SharedMut(pub *mut f32);
// SAFETY: the loops that share it write disjoint elements only, and the buffer outlives them.
unsafe impl Send for SharedMut {}
// SAFETY: as above.
unsafe impl Sync for SharedMut {}
impl SharedMut {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper).
    pub fn get(self) -> *mut f32 {
        self.0
    }
}

/// Which executor parallel loops on this thread use (see [`with_team`]).
#[derive(Clone, Copy)]
enum Current {
    /// rayon's current pool (outside the CPU forward pass: tests, candle's path, benches).
    Rayon,
    /// The calling thread alone.
    Serial,
    Team(*const Team),
}

thread_local! {
    static CURRENT: Cell<Current> = const { Cell::new(Current::Rayon) };
}

/// Runs `f` with parallel loops ([`par_for`]) on this thread going to `team`, or to this
/// thread alone when `team` is `None`; restores the previous executor after.
pub(crate) fn with_team<R>(team: Option<&Team>, f: impl FnOnce() -> R) -> R {
    struct Restore(Current);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let next = team.map_or(Current::Serial, |t| Current::Team(t as *const Team));
    let _restore = Restore(CURRENT.with(|c| c.replace(next)));
    f()
}

/// Threads a parallel loop started here would use.
pub(crate) fn parallelism() -> usize {
    match CURRENT.with(Cell::get) {
        Current::Rayon => rayon::current_num_threads().max(1),
        Current::Serial => 1,
        // SAFETY: set by `with_team` from a reference that outlives its closure, and reset
        // before it returns.
        Current::Team(t) => unsafe { (*t).size() },
    }
}

/// Runs `f(0) .. f(n - 1)` in parallel on this thread's executor (see [`with_team`]; rayon's
/// pool by default) and returns when all have finished.
///
/// # Panics
/// If a task panics; on a team, if `n > MAX_TASKS`.
pub(crate) fn par_for(n: usize, f: impl Fn(usize) + Sync) {
    match CURRENT.with(Cell::get) {
        Current::Rayon if n > 1 && rayon::current_num_threads() > 1 => {
            let f = &f;
            (0..n).into_par_iter().for_each(f)
        }
        Current::Rayon | Current::Serial => (0..n).for_each(f),
        // SAFETY: as in `parallelism`.
        Current::Team(t) => unsafe { (*t).for_each(n, &f) },
    }
}

/// Runs `f(p, part)` for the parts of `v` of `chunk` elements (the last may be shorter),
/// in parallel on this thread's executor as [`par_for`] does; `p` is the part's index, so
/// `part` starts at element `p * chunk`.
///
/// # Panics
/// If `chunk` is 0, or as [`par_for`].
pub(crate) fn par_chunks_mut<T: Send>(
    v: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    // One lock per part, each taken once by the task that owns it: disjoint mutable slices
    // for a `Sync` closure without raw pointers.
    let parts: Vec<std::sync::Mutex<&mut [T]>> =
        v.chunks_mut(chunk).map(std::sync::Mutex::new).collect();
    par_for(parts.len(), |p| {
        let mut part = parts[p].lock().unwrap_or_else(|e| e.into_inner());
        f(p, &mut part);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn par_chunks_mut_hands_each_part_once_with_its_index() {
        let team = Team::new(2);
        let mut v = vec![0usize; 103];
        with_team(Some(&team), || {
            par_chunks_mut(&mut v, 10, |p, part| {
                for (i, x) in part.iter_mut().enumerate() {
                    *x += p * 10 + i + 1;
                }
            })
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i + 1));
    }

    #[test]
    fn every_task_runs_once_across_many_loops() {
        let team = Team::new(3);
        for round in 0..2000usize {
            let n = 1 + round % 37;
            let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
            team.for_each(n, &|i| {
                hits[i].fetch_add(1, SeqCst);
            });
            assert!(hits.iter().all(|h| h.load(SeqCst) == 1), "round {round}");
        }
    }

    #[test]
    fn parked_workers_wake_for_new_work() {
        let team = Team::new(2);
        std::thread::sleep(SPIN * 3);
        let seen = Mutex::new(std::collections::HashSet::new());
        let sum = AtomicUsize::new(0);
        team.for_each(64, &|i| {
            sum.fetch_add(i, SeqCst);
            seen.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_micros(200));
        });
        assert_eq!(sum.load(SeqCst), 63 * 64 / 2);
        assert_eq!(
            seen.lock().unwrap().len(),
            2,
            "the parked worker took tasks"
        );
    }

    #[test]
    fn a_panicking_task_fails_the_loop_after_the_others_finish() {
        let team = Team::new(2);
        let ran = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            team.for_each(16, &|i| {
                ran.fetch_add(1, SeqCst);
                assert!(i != 5, "task 5");
            })
        }));
        assert!(r.is_err());
        assert_eq!(ran.load(SeqCst), 16);
        // The team still works.
        let sum = AtomicUsize::new(0);
        team.for_each(8, &|i| {
            sum.fetch_add(i, SeqCst);
        });
        assert_eq!(sum.load(SeqCst), 28);
    }

    #[test]
    fn the_team_stays_parallel_after_a_task_panics() {
        let team = Team::new(2);
        let r = catch_unwind(AssertUnwindSafe(|| team.for_each(4, &|_| panic!("boom"))));
        assert!(r.is_err());
        let seen = Mutex::new(std::collections::HashSet::new());
        team.for_each(64, &|_| {
            seen.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_micros(200));
        });
        assert_eq!(seen.lock().unwrap().len(), 2, "the worker took tasks");
    }

    #[test]
    fn concurrent_and_nested_loops_run_every_task_once() {
        let team = Team::new(2);
        let total = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for _ in 0..3 {
                sc.spawn(|| {
                    for _ in 0..200 {
                        team.for_each(8, &|_| {
                            // Nested: runs on this thread alone.
                            team.for_each(4, &|_| {
                                total.fetch_add(1, SeqCst);
                            });
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(SeqCst), 3 * 200 * 8 * 4);
    }

    #[test]
    fn par_for_follows_the_current_executor() {
        let team = Team::new(2);
        assert_eq!(with_team(Some(&team), parallelism), 2);
        assert_eq!(with_team(None, parallelism), 1);
        let sum = AtomicUsize::new(0);
        with_team(Some(&team), || {
            par_for(100, |i| {
                sum.fetch_add(i, SeqCst);
            })
        });
        assert_eq!(sum.load(SeqCst), 4950);
        assert!(matches!(CURRENT.with(Cell::get), Current::Rayon));
    }
}
