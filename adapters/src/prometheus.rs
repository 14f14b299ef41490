//! A Prometheus exporter for the `metrics` facade (feature `prometheus`, no further
//! dependencies): a recorder that keeps every counter and gauge and renders them in the
//! Prometheus text format, and a small HTTP endpoint that serves them on `GET /metrics`.
//!
//! ```no_run
//! use punctual_adapters::prometheus::PrometheusRecorder;
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let recorder = PrometheusRecorder::new();
//! let (addr, _server) = recorder.serve("127.0.0.1:9898").await?;
//! recorder.install()?; // the process-wide recorder: queries started from now on report to it
//! println!("metrics at http://{addr}/metrics");
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Counter,
    Gauge,
}

struct Series {
    kind: Kind,
    value: Arc<AtomicU64>,
}

/// Keeps counters and gauges and renders them; clones share the values.
#[derive(Clone, Default)]
pub struct PrometheusRecorder {
    series: Arc<Mutex<BTreeMap<(String, String), Series>>>,
}

impl std::fmt::Debug for PrometheusRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrometheusRecorder")
    }
}

struct CounterCell(Arc<AtomicU64>);
struct GaugeCell(Arc<AtomicU64>);

impl CounterFn for CounterCell {
    fn increment(&self, v: u64) {
        self.0.fetch_add(v, Ordering::Relaxed);
    }
    fn absolute(&self, v: u64) {
        self.0.fetch_max(v, Ordering::Relaxed);
    }
}

impl GaugeFn for GaugeCell {
    fn increment(&self, v: f64) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some((f64::from_bits(b) + v).to_bits())
            });
    }
    fn decrement(&self, v: f64) {
        self.increment(-v);
    }
    fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }
}

/// A label value in the text format: backslash, double quote and line feed escaped.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// How long the exporter waits for a request, and for a response to be taken.
pub const SCRAPE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How many scrapes the exporter serves at once; one more is closed at once.
pub const MAX_SCRAPES: usize = 16;

impl PrometheusRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    fn cell(&self, key: &Key, kind: Kind) -> Arc<AtomicU64> {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}=\"{}\"", l.key(), escape_label(l.value())))
            .collect();
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = series
            .entry((key.name().to_owned(), labels.join(",")))
            .or_insert_with(|| Series {
                kind,
                value: Arc::new(AtomicU64::new(if kind == Kind::Gauge {
                    0f64.to_bits()
                } else {
                    0
                })),
            });
        Arc::clone(&entry.value)
    }

    /// Everything recorded, in the Prometheus text format.
    pub fn render(&self) -> String {
        let series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        let mut last_name = "";
        for ((name, labels), s) in series.iter() {
            if name != last_name {
                let kind = if s.kind == Kind::Counter {
                    "counter"
                } else {
                    "gauge"
                };
                out.push_str(&format!("# TYPE {name} {kind}\n"));
                last_name = name;
            }
            let v = s.value.load(Ordering::Relaxed);
            let value = match s.kind {
                Kind::Counter => v.to_string(),
                Kind::Gauge => f64::from_bits(v).to_string(),
            };
            if labels.is_empty() {
                out.push_str(&format!("{name} {value}\n"));
            } else {
                out.push_str(&format!("{name}{{{labels}}} {value}\n"));
            }
        }
        out
    }

    /// Makes this the process-wide `metrics` recorder (once per process).
    pub fn install(&self) -> Result<(), metrics::SetRecorderError<PrometheusRecorder>> {
        metrics::set_global_recorder(self.clone())
    }

    /// Serves `GET /metrics` (any path) on `addr`; returns the bound address and the server task.
    pub async fn serve(
        &self,
        addr: &str,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        let listener = TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let this = self.clone();
        let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_SCRAPES));
        let task = tokio::spawn(async move {
            loop {
                // (Out of file descriptors, say: wait, then serve again.)
                let (mut conn, _) =
                    crate::tcp::accept_with_backoff("metrics exporter", || listener.accept()).await;
                let Ok(slot) = std::sync::Arc::clone(&slots).try_acquire_owned() else {
                    continue; // over the limit: closed
                };
                let this = this.clone();
                tokio::spawn(async move {
                    let mut request = [0u8; 1024];
                    let read = tokio::time::timeout(SCRAPE_TIMEOUT, conn.read(&mut request)).await;
                    if !matches!(read, Ok(Ok(n)) if n > 0) {
                        return; // no request in time (or none at all): closed
                    }
                    let body = this.render();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tokio::time::timeout(SCRAPE_TIMEOUT, async {
                        let _ = conn.write_all(response.as_bytes()).await;
                        let _ = conn.shutdown().await;
                    })
                    .await;
                    drop(slot);
                });
            }
        });
        Ok((bound, task))
    }
}

impl Recorder for PrometheusRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(CounterCell(self.cell(key, Kind::Counter))))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(GaugeCell(self.cell(key, Kind::Gauge))))
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}
