//! The model-owner thread: one `std::thread` loads the model, reports whether loading worked,
//! then runs [`SummaryJob`]s one at a time from a bounded queue. A remote backend gets a pool
//! instead ([`ModelWorker::spawn_pool`]): `N` threads, each with its own narrator, take jobs
//! from one bounded queue, so `N` summaries are in flight at once; the queue and `overloaded`
//! logic are the same, per backend. The local engine with `local_parallel` above 1 gets a pool
//! too ([`ModelWorker::spawn_batched`]): its job threads narrate through
//! [`EngineHandle`]s to the one model thread, which decodes their summaries together
//! ([`Engine::serve`]). The local worker also takes bare narrations ([`ModelWorker::narrate`])
//! for a remote backend's local fallback.
//!
//! Each job carries its own reply sender and cancel flag (TGI's llamacpp backend and mistral.rs
//! use the same shape). A full queue is reported at once ([`ModelWorker::try_submit`] hands the
//! job back) instead of queueing silently. A job whose client went away is skipped; one whose
//! deadline passed while queued gets the preview fallback. The thread runs at
//! [`super::lanes::BACKGROUND_NICE`].

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::backend::{NarrateRequest, Narration, Narrator, TokenCounter};
use crate::engine::batch::{BatchRequest, EngineHandle, EngineSpeeds};
use crate::engine::Engine;
use crate::guard::{GuardResponse, SummaryJob};

/// What the loader closure returns, inside the model thread.
pub struct Loaded {
    /// The model (stays on the model thread).
    pub narrator: Box<dyn Narrator>,
    /// The model's tokenizer, shared with the connection tasks for counting.
    pub counter: Arc<dyn TokenCounter>,
    /// A JSON description of the engine for `status` (model, arch, device, kernels, threads).
    pub describe: Value,
}

/// One queued model job.
pub struct Job {
    /// The prepared summary step.
    pub job: SummaryJob,
    /// Set when the client disconnects; checked before the job starts and per token.
    pub cancel: Arc<AtomicBool>,
    /// Where the result goes; a dropped receiver also means "cancel".
    pub reply: oneshot::Sender<GuardResponse>,
    /// When the job was queued, for `timings_ms.queue`.
    pub enqueued: Instant,
}

/// A bare narration for the local model (a remote backend's fallback), answered on `reply`.
pub struct NarrateJob {
    /// The request, as the remote backend got it.
    pub req: NarrateRequest,
    /// Where the outcome goes; a dropped receiver means nobody waits any more.
    pub reply: std::sync::mpsc::SyncSender<anyhow::Result<Narration>>,
}

/// What the queue carries.
enum Work {
    Summary(Box<Job>),
    Narrate(NarrateJob),
}

/// A dynamic `status` fragment of a backend (its fields are merged into `status`).
pub type StatusFn = Arc<dyn Fn() -> Value + Send + Sync>;

/// Handle to the model thread (or a remote backend's pool of threads): the queue's sending side
/// plus shared counters.
pub struct ModelWorker {
    /// The queue's sending side; `None` once closed.
    tx: Mutex<Option<SyncSender<Work>>>,
    /// The worker threads, until joined.
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Jobs queued and not yet taken by a thread.
    depth: Arc<AtomicUsize>,
    /// Jobs running now.
    in_flight: Arc<AtomicUsize>,
    /// Queue capacity (jobs).
    capacity: usize,
    /// Threads (jobs that run at once).
    parallel: usize,
    /// Engine description, speeds refreshed after each job.
    describe: Arc<Mutex<Value>>,
    /// Model name, for `status`; `name_fn` overrides it when set.
    model_name: String,
    /// `status`'s `backend` object.
    backend: Value,
    /// A dynamic model name (a remote backend learns its model from the server).
    name_fn: Option<Arc<dyn Fn() -> String + Send + Sync>>,
    /// Extra `status` fields (a remote backend's counters).
    report: Option<StatusFn>,
    /// A worker this one depends on (the local fallback of a remote pool), shut down after it.
    companion: Option<Arc<ModelWorker>>,
}

/// What [`ModelWorker::spawn_pool`] needs.
pub struct PoolSpec {
    /// Jobs that may wait for a free thread (at least 1).
    pub capacity: usize,
    /// One narrator per thread; their number is the pool's parallelism.
    pub narrators: Vec<Box<dyn Narrator>>,
    /// The local tokenizer (counting and packing stay local).
    pub counter: Arc<dyn TokenCounter>,
    /// `status`'s `backend` object.
    pub backend: Value,
    /// `status`'s `engine` object (the local engine's, when one is loaded for a fallback).
    pub describe: Value,
    /// The model name for `status`, read at each call.
    pub name: Arc<dyn Fn() -> String + Send + Sync>,
    /// Extra `status` fields, read at each call.
    pub report: Option<StatusFn>,
    /// A worker to shut down after this one (the local fallback).
    pub companion: Option<Arc<ModelWorker>>,
    /// Thread name prefix (`toolsum-remote` gives `toolsum-remote-0`, ...).
    pub thread_name: String,
}

/// Wraps the model so the daemon's per-job cancel flag reaches [`NarrateRequest::cancel`]:
/// the guard pipeline builds the request with a flag of its own, so the wrapper substitutes the
/// job's flag (carrying over a flag already set by the pipeline).
struct CancelNarrator<'a> {
    inner: &'a mut dyn Narrator,
    cancel: Arc<AtomicBool>,
}

impl Narrator for CancelNarrator<'_> {
    fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        if req.cancel.load(Ordering::Relaxed) {
            self.cancel.store(true, Ordering::Relaxed);
        }
        let mut r = req.clone();
        r.cancel = self.cancel.clone();
        self.inner.narrate(&r)
    }
    fn prefill_tok_per_s(&self) -> f64 {
        self.inner.prefill_tok_per_s()
    }
    fn decode_tok_per_s(&self) -> f64 {
        self.inner.decode_tok_per_s()
    }
    fn model_name(&self) -> String {
        self.inner.model_name()
    }
}

impl ModelWorker {
    /// Starts the model thread, runs `loader` on it and waits for the outcome. Returns the
    /// handle and the shared token counter.
    ///
    /// `capacity` is the queue size (jobs waiting, not counting the one running); at least 1.
    ///
    /// # Errors
    /// The loader's error (model not found, bad file, ...), or a panic in it.
    pub fn spawn<F>(capacity: usize, loader: F) -> anyhow::Result<(Self, Arc<dyn TokenCounter>)>
    where
        F: FnOnce() -> anyhow::Result<Loaded> + Send + 'static,
    {
        let capacity = capacity.max(1);
        let (tx, rx) = sync_channel::<Work>(capacity);
        let rx = Arc::new(Mutex::new(rx));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let depth = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let describe = Arc::new(Mutex::new(Value::Null));
        let (d2, b2, desc2) = (depth.clone(), in_flight.clone(), describe.clone());
        let thread = std::thread::Builder::new()
            .name("toolsum-model".into())
            .spawn(move || {
                // Long work: a short request on another thread gets the CPU first.
                super::lanes::lower_thread_priority(super::lanes::BACKGROUND_NICE);
                let loaded = match loader() {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let Loaded {
                    mut narrator,
                    counter,
                    describe,
                } = loaded;
                *desc2.lock().expect("describe lock") = describe;
                let name = narrator.model_name();
                if ready_tx.send(Ok((counter.clone(), name))).is_err() {
                    return;
                }
                worker_loop(&rx, narrator.as_mut(), counter.as_ref(), &d2, &b2, &desc2);
            })?;
        match ready_rx.recv() {
            Ok(Ok((counter, model_name))) => Ok((
                ModelWorker {
                    tx: Mutex::new(Some(tx)),
                    threads: Mutex::new(vec![thread]),
                    depth,
                    in_flight,
                    capacity,
                    parallel: 1,
                    describe,
                    backend: serde_json::json!({"kind": "local", "model": model_name}),
                    model_name,
                    name_fn: None,
                    report: None,
                    companion: None,
                },
                counter,
            )),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e.context("loading the model"))
            }
            Err(_) => {
                let _ = thread.join();
                anyhow::bail!("the model thread panicked while loading")
            }
        }
    }

    /// Starts the local engine for `parallel` summaries at once (`local_parallel`): the model
    /// thread runs `loader`, reports the outcome, then runs the engine's continuous-batching
    /// loop ([`Engine::serve`], one KV slot per summary in flight); `parallel` job threads
    /// take jobs from one bounded queue of `capacity` (at least 1), each narrating through an
    /// [`EngineHandle`] to that loop, so the summaries of concurrent jobs decode together in
    /// one pass per step. The queue, `overloaded` and `status` work as for the remote pool.
    /// The model thread ends once the job threads (and their handles) have.
    ///
    /// # Errors
    /// The loader's error (model not found, bad file, ...), a panic in it, or the OS refuses
    /// a thread.
    pub fn spawn_batched<F>(
        capacity: usize,
        parallel: usize,
        loader: F,
    ) -> anyhow::Result<(Self, Arc<dyn TokenCounter>)>
    where
        F: FnOnce() -> anyhow::Result<Engine> + Send + 'static,
    {
        let parallel = parallel.max(1);
        let (btx, brx) = std::sync::mpsc::channel::<BatchRequest>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("toolsum-model".into())
            .spawn(move || {
                // Long work: a short request on another thread gets the CPU first.
                super::lanes::lower_thread_priority(super::lanes::BACKGROUND_NICE);
                let mut engine = match loader() {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let speeds = Arc::new(EngineSpeeds::new(
                    engine.prefill_tok_per_s(),
                    engine.decode_tok_per_s(),
                ));
                let counter: Arc<dyn TokenCounter> = engine.tokenizer();
                let ready = (
                    counter,
                    engine.describe(),
                    engine.model_name(),
                    speeds.clone(),
                );
                if ready_tx.send(Ok(ready)).is_err() {
                    return;
                }
                engine.serve(&brx, parallel, &speeds);
            })?;
        let (counter, describe, name, speeds) = match ready_rx.recv() {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e.context("loading the model"));
            }
            Err(_) => {
                let _ = thread.join();
                anyhow::bail!("the model thread panicked while loading")
            }
        };
        let narrators: Vec<Box<dyn Narrator>> = (0..parallel)
            .map(|_| {
                Box::new(EngineHandle::new(btx.clone(), speeds.clone(), name.clone()))
                    as Box<dyn Narrator>
            })
            .collect();
        // Only the job threads' handles keep the model thread's loop open.
        drop(btx);
        let name_fn = name.clone();
        let worker = Self::spawn_pool(PoolSpec {
            capacity,
            narrators,
            counter: counter.clone(),
            backend: serde_json::json!({"kind": "local", "model": name}),
            describe,
            name: Arc::new(move || name_fn.clone()),
            report: None,
            companion: None,
            thread_name: "toolsum-local".into(),
        })
        .context("starting the local backend's job threads")?;
        // Joined after the job threads, whose handles end its loop.
        worker.threads.lock().expect("threads lock").push(thread);
        Ok((worker, counter))
    }

    /// Starts a pool of threads, one per narrator of `spec`, behind one bounded queue (a
    /// remote backend: each thread waits on its own HTTP request). Loads nothing.
    ///
    /// # Errors
    /// The OS refuses a thread.
    pub fn spawn_pool(spec: PoolSpec) -> std::io::Result<Self> {
        let capacity = spec.capacity.max(1);
        let parallel = spec.narrators.len();
        let (tx, rx) = sync_channel::<Work>(capacity);
        let rx = Arc::new(Mutex::new(rx));
        let depth = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let describe = Arc::new(Mutex::new(spec.describe));
        let mut threads = Vec::with_capacity(parallel);
        for (i, mut narrator) in spec.narrators.into_iter().enumerate() {
            let (rx, counter) = (rx.clone(), spec.counter.clone());
            let (d2, b2, desc2) = (depth.clone(), in_flight.clone(), describe.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("{}-{i}", spec.thread_name))
                    .spawn(move || {
                        // The summary step around the HTTP call (packing, grounding) is long
                        // work too.
                        super::lanes::lower_thread_priority(super::lanes::BACKGROUND_NICE);
                        worker_loop(&rx, narrator.as_mut(), counter.as_ref(), &d2, &b2, &desc2);
                    })?,
            );
        }
        Ok(ModelWorker {
            tx: Mutex::new(Some(tx)),
            threads: Mutex::new(threads),
            depth,
            in_flight,
            capacity,
            parallel,
            describe,
            model_name: (spec.name)(),
            backend: spec.backend,
            name_fn: Some(spec.name),
            report: spec.report,
            companion: spec.companion,
        })
    }

    /// Queues `work` without waiting; hands it back when the queue is full or closed (moved, not
    /// copied, hence the large `Err`).
    #[allow(clippy::result_large_err)]
    fn try_send(&self, work: Work) -> Result<(), Work> {
        let guard = self.tx.lock().expect("queue lock");
        let Some(tx) = guard.as_ref() else {
            return Err(work);
        };
        self.depth.fetch_add(1, Ordering::SeqCst);
        match tx.try_send(work) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(w)) | Err(TrySendError::Disconnected(w)) => {
                self.depth.fetch_sub(1, Ordering::SeqCst);
                Err(w)
            }
        }
    }

    /// Queues a job without waiting.
    ///
    /// # Errors
    /// Hands the job back when the queue is full or the thread has stopped, so the caller can
    /// still answer with its fallback (hence the large `Err`, moved not copied).
    #[allow(clippy::result_large_err)]
    pub fn try_submit(&self, job: Job) -> Result<(), Job> {
        self.try_send(Work::Summary(Box::new(job)))
            .map_err(|w| match w {
                Work::Summary(j) => *j,
                Work::Narrate(_) => unreachable!("a summary job comes back as one"),
            })
    }

    /// Runs a bare narration on this worker's model (queued like a job, so a full queue refuses
    /// it at once) and waits for it until its deadline plus
    /// [`super::server::DEADLINE_SLACK_MS`].
    ///
    /// # Errors
    /// The queue is full or closed, the deadline passed while it waited, no answer came in
    /// time, or the model failed.
    pub fn narrate(&self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        let (reply, rx) = std::sync::mpsc::sync_channel(1);
        let job = NarrateJob {
            req: req.clone(),
            reply,
        };
        if self.try_send(Work::Narrate(job)).is_err() {
            anyhow::bail!(
                "the {} queue is full ({} jobs)",
                self.model_name(),
                self.capacity
            );
        }
        let wait = req
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(crate::remote::openai::NO_DEADLINE_MS))
            + Duration::from_millis(super::server::DEADLINE_SLACK_MS);
        match rx.recv_timeout(wait) {
            Ok(r) => r,
            Err(_) => {
                req.cancel.store(true, Ordering::SeqCst);
                anyhow::bail!("{} gave no answer in time", self.model_name())
            }
        }
    }

    /// Jobs waiting in the queue (not counting the ones running).
    pub fn depth(&self) -> usize {
        self.depth.load(Ordering::SeqCst)
    }

    /// True while a job runs.
    pub fn busy(&self) -> bool {
        self.in_flight() > 0
    }

    /// Jobs running now (at most [`Self::parallel`]).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Threads, i.e. jobs that run at once (`local_parallel` for the local model, 1 on the
    /// single model thread; `backend_parallel` for a remote backend).
    pub fn parallel(&self) -> usize {
        self.parallel
    }

    /// The queue's capacity (jobs).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The model's name (a remote backend's `openai:<model>`).
    pub fn model_name(&self) -> String {
        match &self.name_fn {
            Some(f) => f(),
            None => self.model_name.clone(),
        }
    }

    /// `status`'s `backend` object: `{"kind":"local","model"}` or the remote backend's.
    pub fn backend(&self) -> Value {
        self.backend.clone()
    }

    /// Extra `status` fields of the backend (empty object for the local model), with the
    /// fallback's queue when there is one (`fallback`).
    pub fn report(&self) -> Value {
        let mut v = self
            .report
            .as_ref()
            .map_or_else(|| serde_json::json!({}), |f| f());
        if let (Some(c), Value::Object(m)) = (&self.companion, &mut v) {
            m.insert(
                "fallback".into(),
                serde_json::json!({
                    "kind": "local",
                    "model": c.model_name(),
                    "queue": {"depth": c.depth(), "capacity": c.capacity(), "busy": c.busy()},
                }),
            );
        }
        v
    }

    /// The engine description, with speeds refreshed after each job.
    pub fn describe(&self) -> Value {
        self.describe.lock().expect("describe lock").clone()
    }

    /// Closes the queue (jobs already queued still run, or are skipped when cancelled) and
    /// waits for the model thread to end. Idempotent.
    pub fn shutdown(&self) {
        self.tx.lock().expect("queue lock").take();
        let threads = std::mem::take(&mut *self.threads.lock().expect("threads lock"));
        for t in threads {
            let _ = t.join();
        }
        if let Some(c) = &self.companion {
            c.shutdown();
        }
    }
}

fn worker_loop(
    rx: &Mutex<Receiver<Work>>,
    narrator: &mut dyn Narrator,
    counter: &dyn TokenCounter,
    depth: &AtomicUsize,
    in_flight: &AtomicUsize,
    describe: &Mutex<Value>,
) {
    loop {
        // The lock is held only while waiting; the job runs without it.
        let work = rx.lock().expect("queue lock").recv();
        let Ok(work) = work else { break };
        depth.fetch_sub(1, Ordering::SeqCst);
        let Job {
            job,
            cancel,
            reply,
            enqueued,
        } = match work {
            Work::Summary(j) => *j,
            Work::Narrate(n) => {
                run_narrate(n, narrator, in_flight);
                continue;
            }
        };
        if cancel.load(Ordering::SeqCst) || reply.is_closed() {
            tracing::debug!("skipping a job whose client went away");
            continue;
        }
        let queue_ms = enqueued.elapsed().as_secs_f64() * 1e3;
        let resp = if job.deadline().is_some_and(|d| Instant::now() >= d) {
            Some(job.fallback(
                Some(counter),
                &format!("deadline_passed: waited {queue_ms:.0} ms in the model queue"),
            ))
        } else {
            in_flight.fetch_add(1, Ordering::SeqCst);
            let mut wrapped = CancelNarrator {
                inner: &mut *narrator,
                cancel,
            };
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                job.run(counter, Some(&mut wrapped as &mut dyn Narrator))
            }));
            in_flight.fetch_sub(1, Ordering::SeqCst);
            let speeds = (narrator.prefill_tok_per_s(), narrator.decode_tok_per_s());
            if let Value::Object(m) = &mut *describe.lock().expect("describe lock") {
                m.insert("prefill_tok_per_s".into(), speeds.0.into());
                m.insert("decode_tok_per_s".into(), speeds.1.into());
            }
            match r {
                Ok(r) => Some(r),
                Err(_) => {
                    tracing::error!("the model panicked on a job; its client gets an error");
                    None
                }
            }
        };
        if let Some(mut resp) = resp {
            resp.timings_ms.queue = queue_ms;
            let _ = reply.send(resp);
        }
    }
}

/// Runs a bare narration (a remote backend's fallback) unless nobody waits for it any more or
/// its deadline passed while it was queued.
fn run_narrate(n: NarrateJob, narrator: &mut dyn Narrator, in_flight: &AtomicUsize) {
    let NarrateJob { req, reply } = n;
    let r = if req.cancel.load(Ordering::SeqCst) {
        return;
    } else if req.deadline.is_some_and(|d| Instant::now() >= d) {
        Err(anyhow::anyhow!(
            "the deadline passed in the local model's queue"
        ))
    } else {
        in_flight.fetch_add(1, Ordering::SeqCst);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| narrator.narrate(&req)));
        in_flight.fetch_sub(1, Ordering::SeqCst);
        r.unwrap_or_else(|_| Err(anyhow::anyhow!("the local model panicked")))
    };
    let _ = reply.try_send(r);
}
