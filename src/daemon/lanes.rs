//! Two lanes of CPU work, so a short request never waits behind a long one.
//!
//! - **Short lane**: tokio's blocking pool at normal priority. It takes only work whose size
//!   bounds its cost: a guard request whose byte length already proves it passes through (with
//!   byte-level BPE every token covers at least one byte, so `bytes <= token_limit` means
//!   `tokens <= token_limit`), and a `count` of at most [`SHORT_BYTES`].
//! - **Long lane** ([`LongLane`]): a few dedicated threads at a lower OS priority
//!   ([`BACKGROUND_NICE`]) for everything else: counting, cleaning, saving and reducing long
//!   outputs, the fallback digest, `count` of long inputs. The model thread and the compute pool
//!   it drives run at the same lower priority ([`init_background_compute`]).
//!
//! On a machine with few cores the long work keeps every core busy; at nice 10 the kernel gives
//! a waking short request the CPU at once (a nice-0 thread weighs about 9x a nice-10 one), so
//! pass-through and `count` latency stays near its unloaded value while the model is busy.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// The nice value of the long lane, the model thread and its compute pool (Linux; 0..=19, higher
/// is lower priority). Raising one's own nice value needs no privilege.
pub const BACKGROUND_NICE: i32 = 10;

/// Largest input (bytes) the short lane takes for a `count`, and the cap on a pass-through
/// proven by its length: scanning this much for binary content costs well under a millisecond.
pub const SHORT_BYTES: usize = 256 * 1024;

/// True when a guard request of `bytes` bytes is sure to pass through (or be a small binary
/// answer) without counting: `bytes <= token_limit`, and at most [`SHORT_BYTES`].
pub fn guard_is_short(bytes: usize, token_limit: usize) -> bool {
    bytes <= token_limit.min(SHORT_BYTES)
}

/// True when a `count` of `bytes` bytes belongs to the short lane.
pub fn count_is_short(bytes: usize) -> bool {
    bytes <= SHORT_BYTES
}

/// Lowers the calling thread's CPU priority to `nice` (Linux: `setpriority(PRIO_PROCESS, tid)`
/// acts on one thread); a thread already at `nice` or lower priority is left as it is, so this
/// never raises a priority. Returns whether the thread now runs at `nice` or lower priority;
/// always false on other systems. A thread cannot raise its priority back without
/// `CAP_SYS_NICE`, so call it only on dedicated threads.
pub fn lower_thread_priority(nice: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        if thread_nice().is_some_and(|n| n >= nice) {
            return true;
        }
        // SAFETY: gettid and setpriority have no memory-safety preconditions.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nice;
        false
    }
}

/// The calling thread's nice value (Linux), for tests and `status`; `None` elsewhere.
pub fn thread_nice() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as above; errno is reset first because -1 is also a valid nice value.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            *libc::__errno_location() = 0;
            let n = libc::getpriority(libc::PRIO_PROCESS, tid);
            (*libc::__errno_location() == 0).then_some(n)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Builds rayon's global pool (the model's compute threads) with `threads` threads (default:
/// the cores available) at [`BACKGROUND_NICE`], before the engine would build it at normal
/// priority; a later `build_global` (the engine's) then keeps this one. Returns the pool's size.
/// Call it before the model's first operation; once a global pool exists it changes nothing.
pub fn init_background_compute(threads: Option<usize>) -> usize {
    let n = threads
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("toolsum-compute-{i}"))
        .start_handler(|_| {
            lower_thread_priority(BACKGROUND_NICE);
        })
        .build_global();
    rayon::current_num_threads()
}

type Task = Box<dyn FnOnce() + Send + 'static>;

/// Least time between two [`release_free_memory`] calls that trim (ms).
const TRIM_EVERY_MS: u64 = 250;

/// Hands freed heap pages back to the OS (glibc's `malloc_trim(0)`, which also releases free
/// pages inside each thread's arena): always when `idle`, else at most once per
/// `TRIM_EVERY_MS`; a no-op on other C libraries. Called after each long-lane task: those
/// hold a request's megabytes (input, reduced view, saved copy), and without it glibc kept
/// them, so the daemon's RSS grew from 365 MB after 10 requests to 545 MB after 1,000 in the
/// load bench. Also called (idle) when the server's last connection closes, for what the I/O
/// threads, the short lane and the model thread freed after the long lane's last trim (RSS at
/// rest after 1,110 requests / after 10: 1.07-1.13 over three runs without it, 1.02 with).
pub fn release_free_memory(idle: bool) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::sync::atomic::AtomicU64;
        use std::time::{SystemTime, UNIX_EPOCH};
        static LAST: AtomicU64 = AtomicU64::new(0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let last = LAST.load(Ordering::Relaxed);
        if !idle && now.saturating_sub(last) < TRIM_EVERY_MS
            || LAST
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        // SAFETY: malloc_trim only returns free memory to the OS; no pointer is invalidated.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// Error of [`LongLane::run`].
#[derive(Debug, thiserror::Error)]
pub enum LaneError {
    /// The task panicked (the lane's thread survives it).
    #[error("the task panicked")]
    Panicked,
    /// The lane was shut down before the task ran.
    #[error("the long lane has stopped")]
    Stopped,
}

/// A fixed set of threads at [`BACKGROUND_NICE`] running tasks in arrival order. Its queue is
/// unbounded; the server bounds it by connections (one request answered at a time each).
pub struct LongLane {
    tx: Mutex<Option<mpsc::Sender<Task>>>,
    /// Tasks queued or running.
    pending: Arc<AtomicUsize>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    size: usize,
}

impl LongLane {
    /// Starts `threads` threads (at least 1) named `toolsum-long-<i>`.
    ///
    /// # Errors
    /// The OS refuses a thread.
    pub fn new(threads: usize) -> std::io::Result<Self> {
        let size = threads.max(1);
        let (tx, rx) = mpsc::channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        let pending = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::with_capacity(size);
        for i in 0..size {
            let rx = rx.clone();
            let pending = pending.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("toolsum-long-{i}"))
                    .spawn(move || {
                        lower_thread_priority(BACKGROUND_NICE);
                        loop {
                            let task = rx.lock().expect("lane queue lock").recv();
                            match task {
                                Ok(t) => {
                                    t();
                                    // The last task of a burst trims at once; under
                                    // steady load, at most every TRIM_EVERY_MS.
                                    let left = pending.fetch_sub(1, Ordering::SeqCst) - 1;
                                    release_free_memory(left == 0);
                                }
                                Err(_) => break,
                            }
                        }
                    })?,
            );
        }
        Ok(Self {
            tx: Mutex::new(Some(tx)),
            pending,
            threads: Mutex::new(handles),
            size,
        })
    }

    /// Number of threads.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs `f` on the lane and waits for its result without blocking the async runtime.
    ///
    /// # Errors
    /// [`LaneError::Panicked`] when `f` panics, [`LaneError::Stopped`] after [`Self::shutdown`].
    pub async fn run<T, F>(&self, f: F) -> Result<T, LaneError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let task: Task = Box::new(move || {
            let r = std::panic::catch_unwind(AssertUnwindSafe(f));
            let _ = reply.send(r.map_err(|_| LaneError::Panicked));
        });
        {
            let guard = self.tx.lock().expect("lane sender lock");
            let tx = guard.as_ref().ok_or(LaneError::Stopped)?;
            self.pending.fetch_add(1, Ordering::SeqCst);
            if tx.send(task).is_err() {
                self.pending.fetch_sub(1, Ordering::SeqCst);
                return Err(LaneError::Stopped);
            }
        }
        rx.await.map_err(|_| LaneError::Stopped)?
    }

    /// Stops taking tasks, lets the queued ones finish and joins the threads. Idempotent.
    pub fn shutdown(&self) {
        self.tx.lock().expect("lane sender lock").take();
        let handles = std::mem::take(&mut *self.threads.lock().expect("lane threads lock"));
        for h in handles {
            let _ = h.join();
        }
    }
}

impl Drop for LongLane {
    fn drop(&mut self) {
        // Closing the queue ends the threads once they finish; they are not joined here, so a
        // drop on an async thread never blocks.
        self.tx.lock().map(|mut t| t.take()).ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_sizes() {
        assert!(guard_is_short(100, 15_000));
        assert!(guard_is_short(15_000, 15_000));
        assert!(!guard_is_short(15_001, 15_000));
        assert!(!guard_is_short(SHORT_BYTES + 1, usize::MAX));
        assert!(count_is_short(SHORT_BYTES));
        assert!(!count_is_short(SHORT_BYTES + 1));
    }

    #[test]
    fn long_lane_runs_at_lower_priority_and_survives_panics() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let lane = LongLane::new(2).unwrap();
        assert_eq!(lane.size(), 2);
        let here = thread_nice();
        let there = rt.block_on(lane.run(thread_nice)).unwrap();
        if cfg!(target_os = "linux") {
            let here = here.unwrap();
            assert_eq!(there, Some(BACKGROUND_NICE.max(here)), "here {here}");
        }
        let r = rt.block_on(lane.run(|| -> u32 { panic!("boom") }));
        assert!(matches!(r, Err(LaneError::Panicked)));
        assert_eq!(rt.block_on(lane.run(|| 2 + 2)).unwrap(), 4);
        lane.shutdown();
        assert!(matches!(
            rt.block_on(lane.run(|| 1)),
            Err(LaneError::Stopped)
        ));
    }
}
