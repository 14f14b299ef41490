//! The TCP line protocol: JSON lines over TCP, items of the form of [`crate::line`] or flat
//! records timed by one of their fields (each input's [`LineFormat`]).
//!
//! - [`TcpServerInput`]: listens, accepts clients (up to [`TcpServerInput::max_connections`]
//!   at once, [`DEFAULT_MAX_CONNECTIONS`] by default; one more is closed at once, unread, with
//!   a warning, and counted as one `malformed` record whose dead letter names the peer), and
//!   enqueues every line they send. Each connection has a reader task feeding a
//!   bounded channel, so when the query is behind the readers stop reading and TCP's own flow
//!   control holds the senders back. The readers and their sockets end with the input; an
//!   error accepting a connection (no file descriptor left, say) is logged and retried after
//!   [`ACCEPT_BACKOFF`], never a busy loop.
//! - [`TcpListenInput`]: the same server, listening on the address of its configuration
//!   when its adapter starts, on the worker that reads it: several addresses are several
//!   partitions of one source (`Partitioned(TcpListenInput)` with a list of configurations),
//!   each read on its own worker of a cluster.
//! - [`TcpClientInput`]: connects to a server and enqueues the lines it sends (several
//!   servers: `Partitioned(TcpClientInput)`, one partition each).
//! - [`TcpOutput`]: connects to a server and writes the stream's events and CTIs as lines.
//!
//! Lines longer than [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES) are malformed (the rest of such a
//! line is skipped, never held). Malformed lines are skipped, counted as `malformed` and dead-lettered with the peer and line
//! number. For CTIs when a connection is quiet, give the stream a watermark strategy and the
//! query a clock (`InputOptions::watermark`, `Query::clock`): the idle input then advances from
//! the clock like any other. The factories declare no advance-time settings: CTIs come from the
//! lines (`cti` lines), the stream's settings or its watermark strategy.
//!
//! ```no_run
//! use punctual_adapters::{TcpServerInput};
//! use punctual_runtime::{InputOptions, Query};
//! use punctual_core::{EventShape};
//! use punctual_rows::{Row};
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let server = TcpServerInput::bind("127.0.0.1:7000")?;
//! let mut query = Query::new("tcp");
//! let lines = query.create_stream::<_, Row, _, _>(InputOptions::new("in", EventShape::Point), &server, &())?;
//! # let _ = lines; Ok(()) }
//! ```

use std::marker::PhantomData;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use punctual_core::{Batch, EventShape, StreamItem};
use punctual_policies::MalformedRecord;

use crate::line::{write_item_as, LineFormat, TimeFormat};
use crate::memory::BATCH;
use crate::replay::next_line;
use punctual_runtime::adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, Payload,
};
use punctual_runtime::context::InputContext;
use punctual_runtime::error::AdapterError;
use punctual_runtime::query::QueryReport;

/// What a connection's reader hands the adapter.
enum Received<P> {
    Item(StreamItem<P>),
    Malformed(MalformedRecord),
    /// A line that carries no item (blank, or `eof`).
    Skipped,
}

fn net_error(what: String) -> impl FnOnce(std::io::Error) -> AdapterError {
    move |source| AdapterError::Io {
        path: PathBuf::from(what),
        error: source,
    }
}

/// Reads JSON lines (as `lines` says) from one connection into `tx` until it closes (or the
/// adapter is gone).
async fn read_lines<P: DeserializeOwned>(
    conn: impl AsyncRead + Unpin + Send,
    peer: String,
    lines: std::sync::Arc<LineFormat>,
    tx: mpsc::Sender<Received<P>>,
) {
    let mut reader = BufReader::new(conn);
    let mut number = 0usize;
    let nowhere = std::path::PathBuf::from(&peer);
    // An I/O error (a reset connection) ends this connection's lines.
    while let Ok(Some(line)) = next_line(&mut reader, false, &nowhere, std::future::pending()).await
    {
        number += 1;
        let text = match line {
            Ok(text) => text,
            Err((text, message)) => {
                // Not UTF-8, or too long: counted and dead-lettered; the connection goes on.
                let m = MalformedRecord {
                    location: format!("{peer}:{number}"),
                    message,
                    text,
                };
                if tx.send(Received::Malformed(m)).await.is_err() {
                    break;
                }
                continue;
            }
        };
        if text.trim().is_empty() {
            if tx.send(Received::Skipped).await.is_err() {
                break;
            }
            continue;
        }
        let received = match lines.read::<P>(&text) {
            Ok(Some(item)) => Received::Item(item),
            Ok(None) => {
                // `eof`: this client is done; the connection is closed.
                let _ = tx.send(Received::Skipped).await;
                break;
            }
            Err(message) => Received::Malformed(MalformedRecord {
                location: format!("{peer}:{number}"),
                message,
                text,
            }),
        };
        if tx.send(received).await.is_err() {
            break;
        }
    }
}

/// Enqueues what the readers send, in batches, until every sender is gone or the query stops.
async fn pump<P: Payload>(
    rx: &mut mpsc::Receiver<Received<P>>,
    ctx: &mut InputContext<P>,
) -> Result<(), AdapterError> {
    let mut buf = Vec::with_capacity(BATCH);
    loop {
        let n = tokio::select! {
            n = rx.recv_many(&mut buf, BATCH) => n,
            _ = ctx.stopping() => return Ok(()),
        };
        if n == 0 {
            return Ok(());
        }
        let mut items = Vec::with_capacity(n);
        let mut skipped = 0;
        for r in buf.drain(..) {
            match r {
                Received::Item(i) => items.push(i),
                Received::Malformed(m) => {
                    ctx.enqueue_read(&mut items).await?;
                    ctx.report_malformed(m).await;
                }
                Received::Skipped => skipped += 1,
            }
        }
        ctx.enqueue_read(&mut items).await?;
        if skipped > 0 {
            ctx.report_skipped(skipped).await;
        }
    }
}

/// How many clients a [`TcpServerInput`] serves at once by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How long a [`TcpServerInput`] waits after an error accepting a connection.
pub const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// The next connection `accept` gives: after an error (no file descriptor left, say) it logs
/// it, waits [`ACCEPT_BACKOFF`] and tries again, so a failing accept never spins.
pub(crate) async fn accept_with_backoff<T, F, Fut>(what: &str, mut accept: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::io::Result<T>>,
{
    loop {
        match accept().await {
            Ok(conn) => return conn,
            Err(e) => {
                tracing::warn!(error = %e, "{what}: accepting a connection failed; retrying");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// A listening TCP input; see the module doc. It can feed one stream.
#[derive(Debug)]
pub struct TcpServerInput {
    listener: Mutex<Option<TcpListener>>,
    addr: SocketAddr,
    max_connections: usize,
    lines: LineFormat,
}

impl TcpServerInput {
    /// Listens on `addr` (`127.0.0.1:0` picks a free port; see [`TcpServerInput::local_addr`]),
    /// at once. Call it within a tokio runtime (a task, or a thread that entered one).
    pub fn bind(addr: &str) -> Result<Self, AdapterError> {
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|l| {
                l.set_nonblocking(true)?;
                TcpListener::from_std(l)
            })
            .map_err(net_error(addr.to_owned()))?;
        let addr = listener.local_addr().map_err(net_error(addr.to_owned()))?;
        Ok(TcpServerInput {
            listener: Mutex::new(Some(listener)),
            addr,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            lines: LineFormat::default(),
        })
    }

    /// Reads the lines as `lines` says (default: items; [`LineFormat::flat`]: flat records).
    pub fn lines(mut self, lines: LineFormat) -> Self {
        self.lines = lines;
        self
    }

    /// Serves at most `n` clients at once (at least 1); a client over the limit is closed at
    /// once, unread, logged (`warn`) and counted as one `malformed` record (its dead letter
    /// names the peer and the limit).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// The adapter of a [`TcpServerInput`]: runs until the query stops (servers do not end by
/// themselves).
pub struct TcpServerAdapter<P> {
    listener: Option<TcpListener>,
    /// Where to listen when it starts, for a [`TcpListenInput`].
    bind: Option<String>,
    max_connections: usize,
    lines: std::sync::Arc<LineFormat>,
    _payload: PhantomData<fn() -> P>,
}

impl<P: Payload + DeserializeOwned> InputAdapterFactory<(), P> for TcpServerInput {
    type Adapter = TcpServerAdapter<P>;

    fn create(&self, _: &(), _shape: EventShape) -> Result<Self::Adapter, AdapterError> {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| AdapterError::Config("a TcpServerInput feeds one stream".into()))?;
        Ok(TcpServerAdapter {
            listener: Some(listener),
            bind: None,
            max_connections: self.max_connections,
            lines: std::sync::Arc::new(self.lines.clone()),
            _payload: PhantomData,
        })
    }
}

#[async_trait]
impl<P: Payload + DeserializeOwned> InputAdapter<P> for TcpServerAdapter<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let listener = match (self.listener.take(), self.bind.take()) {
            (Some(listener), _) => listener,
            (None, Some(addr)) => TcpListener::bind(&addr)
                .await
                .map_err(net_error(addr.clone()))?,
            (None, None) => return Ok(()),
        };
        let (tx, mut rx) = mpsc::channel::<Received<P>>(BATCH);
        let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(self.max_connections));
        let lines = std::sync::Arc::clone(&self.lines);
        let limit = self.max_connections;
        let accept = async move {
            // The readers end with the input (dropping the set aborts them).
            let mut readers = tokio::task::JoinSet::new();
            loop {
                let (conn, peer) = accept_with_backoff("TCP input", || listener.accept()).await;
                while readers.try_join_next().is_some() {}
                let Ok(slot) = std::sync::Arc::clone(&slots).try_acquire_owned() else {
                    tracing::warn!(%peer, limit, "TCP input: over the connection limit; closed");
                    drop(conn);
                    // What it would have sent is lost: counted, and a dead letter says whose.
                    let refused = MalformedRecord {
                        location: format!("socket {peer}"),
                        message: format!(
                            "connection closed unread: the input serves at most {limit} clients at once"
                        ),
                        text: String::new(),
                    };
                    if tx.send(Received::Malformed(refused)).await.is_err() {
                        return;
                    }
                    continue;
                };
                let (tx, lines) = (tx.clone(), std::sync::Arc::clone(&lines));
                readers.spawn(async move {
                    read_lines(conn, peer.to_string(), lines, tx).await;
                    drop(slot);
                });
            }
        };
        tokio::select! {
            r = pump(&mut rx, ctx) => r,
            () = accept => Ok(()),
        }
    }
}

/// Configuration of [`TcpListenInput`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpListenConfig {
    /// The address to listen on (`0.0.0.0:7000`).
    pub listen: String,
    /// Clients served at once (default [`DEFAULT_MAX_CONNECTIONS`]).
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// How its lines are read (default: items).
    #[serde(default)]
    pub lines: LineFormat,
}

impl TcpListenConfig {
    /// Listens on `addr`.
    pub fn new(addr: impl Into<String>) -> Self {
        TcpListenConfig {
            listen: addr.into(),
            max_connections: None,
            lines: LineFormat::default(),
        }
    }

    /// Reads the lines as `lines` says (default: items; [`LineFormat::flat`]: flat records).
    pub fn lines(mut self, lines: LineFormat) -> Self {
        self.lines = lines;
        self
    }
}

/// Factory of TCP server inputs that listen on their configuration's address once their
/// adapter starts, where it runs: unlike [`TcpServerInput`] (bound when made, so that port 0
/// gives a port to tell clients), nothing is bound on a worker that does not read the input,
/// so one source can listen on several addresses, a partition each, spread over the workers
/// of a cluster. An address that cannot be bound fails the query with the address.
///
/// ```no_run
/// use punctual_adapters::{TcpListenConfig, TcpListenInput};
/// use punctual_runtime::{InputOptions, Partitioned, Query};
/// use punctual_core::{EventShape};
/// use punctual_rows::{Row};
/// # fn demo() -> Result<(), punctual_runtime::QueryError> {
/// let mut query = Query::new("two ports");
/// let ports = vec![TcpListenConfig::new("0.0.0.0:7000"), TcpListenConfig::new("0.0.0.0:7001")];
/// let lines = query.create_stream::<_, Row, _, _>(
///     InputOptions::new("in", EventShape::Point),
///     &Partitioned(TcpListenInput),
///     &ports,
/// )?; // inputs `in#0` (port 7000) and `in#1` (port 7001)
/// # let _ = lines; Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpListenInput;

impl<P: Payload + DeserializeOwned> InputAdapterFactory<TcpListenConfig, P> for TcpListenInput {
    type Adapter = TcpServerAdapter<P>;

    fn create(
        &self,
        config: &TcpListenConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        if config.listen.is_empty() {
            return Err(AdapterError::Config("`listen` must name an address".into()));
        }
        Ok(TcpServerAdapter {
            listener: None,
            bind: Some(config.listen.clone()),
            max_connections: config
                .max_connections
                .unwrap_or(DEFAULT_MAX_CONNECTIONS)
                .max(1),
            lines: std::sync::Arc::new(config.lines.clone()),
            _payload: PhantomData,
        })
    }
}

/// Configuration of [`TcpClientInput`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpClientConfig {
    /// `host:port` to connect to.
    pub connect: String,
    /// How its lines are read (default: items).
    #[serde(default)]
    pub lines: LineFormat,
}

impl TcpClientConfig {
    /// Connects to `connect` (`host:port`).
    pub fn new(connect: impl Into<String>) -> Self {
        TcpClientConfig {
            connect: connect.into(),
            lines: LineFormat::default(),
        }
    }

    /// Reads the lines as `lines` says (default: items; [`LineFormat::flat`]: flat records).
    pub fn lines(mut self, lines: LineFormat) -> Self {
        self.lines = lines;
        self
    }
}

/// Factory of TCP inputs that connect to a server and read its lines until it closes.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpClientInput;

/// The adapter of a [`TcpClientInput`].
pub struct TcpClientAdapter<P> {
    connect: String,
    lines: std::sync::Arc<LineFormat>,
    _payload: PhantomData<fn() -> P>,
}

impl<P: Payload + DeserializeOwned> InputAdapterFactory<TcpClientConfig, P> for TcpClientInput {
    type Adapter = TcpClientAdapter<P>;

    fn create(
        &self,
        config: &TcpClientConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        Ok(TcpClientAdapter {
            connect: config.connect.clone(),
            lines: std::sync::Arc::new(config.lines.clone()),
            _payload: PhantomData,
        })
    }
}

#[async_trait]
impl<P: Payload + DeserializeOwned> InputAdapter<P> for TcpClientAdapter<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let conn = TcpStream::connect(&self.connect)
            .await
            .map_err(net_error(self.connect.clone()))?;
        let (tx, mut rx) = mpsc::channel::<Received<P>>(BATCH);
        let lines = std::sync::Arc::clone(&self.lines);
        let reader = tokio::spawn(read_lines(conn, self.connect.clone(), lines, tx));
        let r = pump(&mut rx, ctx).await;
        reader.abort();
        r
    }
}

/// Configuration of [`TcpOutput`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpOutputConfig {
    /// `host:port` to connect to.
    pub connect: String,
}

/// Factory of TCP outputs: connect, then write every event and CTI as a JSON line; a slow
/// receiver holds the query back.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpOutput;

/// The adapter of a [`TcpOutput`].
pub struct TcpWriter<P> {
    connect: String,
    conn: Option<BufWriter<TcpStream>>,
    _payload: PhantomData<fn(P)>,
}

impl<P: Payload + Serialize> OutputAdapterFactory<TcpOutputConfig, P> for TcpOutput {
    type Adapter = TcpWriter<P>;

    fn create(
        &self,
        config: &TcpOutputConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        Ok(TcpWriter {
            connect: config.connect.clone(),
            conn: None,
            _payload: PhantomData,
        })
    }
}

#[async_trait]
impl<P: Payload + Serialize> OutputAdapter<P> for TcpWriter<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        if self.conn.is_none() {
            let conn = TcpStream::connect(&self.connect)
                .await
                .map_err(net_error(self.connect.clone()))?;
            self.conn = Some(BufWriter::new(conn));
        }
        let mut text = Vec::new();
        for item in batch.items() {
            write_item_as(item, TimeFormat::Auto, &mut text).map_err(AdapterError::other)?;
            text.push(b'\n');
        }
        if let Some(conn) = self.conn.as_mut() {
            conn.write_all(&text)
                .await
                .map_err(net_error(self.connect.clone()))?;
            conn.flush()
                .await
                .map_err(net_error(self.connect.clone()))?;
        }
        Ok(())
    }

    async fn finish(&mut self, _report: &QueryReport) -> Result<(), AdapterError> {
        if let Some(conn) = self.conn.as_mut() {
            conn.shutdown()
                .await
                .map_err(net_error(self.connect.clone()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accept errors (out of file descriptors) are waited out, not spun on: each costs one
    /// back-off, and the next good connection is taken.
    #[tokio::test(start_paused = true)]
    async fn accept_errors_back_off_and_the_loop_goes_on() {
        let mut calls = 0;
        let started = tokio::time::Instant::now();
        let got = accept_with_backoff("test", || {
            calls += 1;
            let n = calls;
            async move {
                if n <= 3 {
                    Err(std::io::Error::from_raw_os_error(24)) // EMFILE
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(got, 4);
        assert_eq!(started.elapsed(), ACCEPT_BACKOFF * 3);
    }
}
