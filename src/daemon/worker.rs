//! The model-owner thread: one `std::thread` loads the model, reports whether loading worked,
//! then runs [`SummaryJob`]s one at a time from a bounded queue.
//!
//! Each job carries its own reply sender and cancel flag (TGI's llamacpp backend and mistral.rs
//! use the same shape). A full queue is reported at once ([`ModelWorker::try_submit`] hands the
//! job back) instead of queueing silently. A job whose client went away is skipped; one whose
//! deadline passed while queued gets the preview fallback. The thread runs at
//! [`super::lanes::BACKGROUND_NICE`].

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::oneshot;

use crate::backend::{NarrateRequest, Narration, Narrator, TokenCounter};
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

/// Handle to the model thread: the queue's sending side plus shared counters.
pub struct ModelWorker {
    /// The queue's sending side; `None` once closed.
    tx: Mutex<Option<SyncSender<Job>>>,
    /// The model thread, until joined.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Jobs queued and not yet taken by the thread.
    depth: Arc<AtomicUsize>,
    /// True while the model runs a job.
    busy: Arc<AtomicBool>,
    /// Queue capacity (jobs).
    capacity: usize,
    /// Engine description, speeds refreshed after each job.
    describe: Arc<Mutex<Value>>,
    /// Model name, for `status`.
    model_name: String,
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
        let (tx, rx) = sync_channel::<Job>(capacity);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let depth = Arc::new(AtomicUsize::new(0));
        let busy = Arc::new(AtomicBool::new(false));
        let describe = Arc::new(Mutex::new(Value::Null));
        let (d2, b2, desc2) = (depth.clone(), busy.clone(), describe.clone());
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
                worker_loop(rx, narrator.as_mut(), counter.as_ref(), &d2, &b2, &desc2);
            })?;
        match ready_rx.recv() {
            Ok(Ok((counter, model_name))) => Ok((
                ModelWorker {
                    tx: Mutex::new(Some(tx)),
                    thread: Mutex::new(Some(thread)),
                    depth,
                    busy,
                    capacity,
                    describe,
                    model_name,
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

    /// Queues a job without waiting.
    ///
    /// # Errors
    /// Hands the job back when the queue is full or the thread has stopped, so the caller can
    /// still answer with its fallback (hence the large `Err`, moved not copied).
    #[allow(clippy::result_large_err)]
    pub fn try_submit(&self, job: Job) -> Result<(), Job> {
        let guard = self.tx.lock().expect("queue lock");
        let Some(tx) = guard.as_ref() else {
            return Err(job);
        };
        self.depth.fetch_add(1, Ordering::SeqCst);
        match tx.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(j)) | Err(TrySendError::Disconnected(j)) => {
                self.depth.fetch_sub(1, Ordering::SeqCst);
                Err(j)
            }
        }
    }

    /// Jobs waiting in the queue (not counting the one running).
    pub fn depth(&self) -> usize {
        self.depth.load(Ordering::SeqCst)
    }

    /// True while a job runs on the model.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// The queue's capacity (jobs).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The model's name.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The engine description, with speeds refreshed after each job.
    pub fn describe(&self) -> Value {
        self.describe.lock().expect("describe lock").clone()
    }

    /// Closes the queue (jobs already queued still run, or are skipped when cancelled) and
    /// waits for the model thread to end. Idempotent.
    pub fn shutdown(&self) {
        self.tx.lock().expect("queue lock").take();
        let t = self.thread.lock().expect("thread lock").take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

fn worker_loop(
    rx: std::sync::mpsc::Receiver<Job>,
    narrator: &mut dyn Narrator,
    counter: &dyn TokenCounter,
    depth: &AtomicUsize,
    busy: &AtomicBool,
    describe: &Mutex<Value>,
) {
    while let Ok(Job {
        job,
        cancel,
        reply,
        enqueued,
    }) = rx.recv()
    {
        depth.fetch_sub(1, Ordering::SeqCst);
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
            busy.store(true, Ordering::SeqCst);
            let mut wrapped = CancelNarrator {
                inner: &mut *narrator,
                cancel,
            };
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                job.run(counter, Some(&mut wrapped as &mut dyn Narrator))
            }));
            busy.store(false, Ordering::SeqCst);
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
