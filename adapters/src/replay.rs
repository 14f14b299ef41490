//! How file inputs replay: as fast as possible or at a speed factor of the event timestamps,
//! optionally following the file as it grows (tail), and with a final CTI at end of file.
//! Shared by the JSON-lines and CSV inputs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, BufWriter};
use tokio::time::Instant;

use punctual_core::{StreamItem, Time, TICKS_PER_SECOND};
use punctual_policies::MalformedRecord;

use crate::memory::BATCH;
use punctual_runtime::adapter::Payload;
use punctual_runtime::context::InputContext;
use punctual_runtime::error::AdapterError;

mod files;
mod reader;
pub use files::names_file;
#[cfg(test)]
use files::wildcard;
pub(crate) use files::{resumable, source_files, FilePart, Lines, FILE_BUFFER};
pub use reader::{FileFormat, FileReader, LineRead};

/// What a file input does with a line it cannot parse.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MalformedLines {
    /// Fail the adapter (and the query) with the file, line and reason.
    Fail,
    /// Count it as `malformed`, dead-letter it, and go on (the file inputs' default).
    #[default]
    Skip,
}

/// Replay options of a file input.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayOptions {
    /// `None`: as fast as possible. `Some(s)`: pace events by their timestamps, `s` times as
    /// fast as they happened (`1.0`: real time).
    pub speed: Option<f64>,
    /// At end of file, wait for more lines (polling every 200 ms) until the query stops.
    pub follow: bool,
    /// Enqueue `CTI(+inf)` at end of file (not in follow mode). Default: yes.
    pub final_cti: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            speed: None,
            follow: false,
            final_cti: true,
        }
    }
}

/// Paces a replay by event time.
#[derive(Debug)]
pub(crate) struct Pacer {
    speed: Option<f64>,
    origin: Option<(Time, Instant)>,
}

/// The longest wait a replay speed can ask for (about 30 years).
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 86_400);

impl ReplayOptions {
    /// Checks the options: a speed must be a finite number above zero.
    pub fn validate(&self) -> Result<(), AdapterError> {
        match self.speed {
            Some(s) if !(s.is_finite() && s > 0.0) => Err(AdapterError::Config(format!(
                "replay speed must be a finite number above zero, not {s}"
            ))),
            _ => Ok(()),
        }
    }
}

impl Pacer {
    pub(crate) fn new(speed: Option<f64>) -> Self {
        Pacer {
            speed: speed.filter(|s| *s > 0.0 && s.is_finite()),
            origin: None,
        }
    }

    /// How long to wait before an event at `t` is due (`None`: now).
    pub(crate) fn due(&mut self, t: Time) -> Option<Instant> {
        let speed = self.speed?;
        if t.is_infinite() {
            return None;
        }
        let (t0, w0) = *self.origin.get_or_insert((t, Instant::now()));
        let ticks = (t - t0).ticks().max(0) as f64 / speed;
        // A tiny speed makes a wait longer than any clock can add: it saturates (far future).
        let wait = Duration::try_from_secs_f64(ticks / TICKS_PER_SECOND as f64)
            .unwrap_or(Duration::MAX)
            .min(FAR_FUTURE);
        Some(w0.checked_add(wait).unwrap_or(w0 + FAR_FUTURE / 2))
    }
}

/// How long a live input may keep the lines read so far waiting for the rest of a batch.
pub(crate) const LIVE_FLUSH_AFTER: Duration = Duration::from_millis(10);

/// Lines longer than this are malformed: the rest of such a line is skipped, never held.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The most parts a file may be split into ([`CsvInputConfig::split`](crate::CsvInputConfig::split),
/// [`JsonLinesInputConfig::split`](crate::JsonLinesInputConfig::split)): each part is an input
/// of its own, with an open file and a 256 KiB buffer. More is refused before anything opens.
pub const MAX_SPLIT: usize = 256;

/// Reads one line ahead of a run (a header, the lines sampled for a file's fields), holding at
/// most [`MAX_LINE_BYTES`] of it: `Ok(None)` at the end of the input, `Ok(Some(Ok(text)))` for
/// a line (its end and a byte-order mark before it taken off: `first` says whether it is the
/// file's first line), `Ok(Some(Err(why)))` for a line over the limit or not UTF-8. After a line
/// over the limit, the rest of it is left unread: stop reading ahead there.
///
/// ```
/// use std::io::BufReader;
/// use punctual_adapters::replay::read_line_ahead;
/// let mut endless = BufReader::new(std::io::repeat(b'x'));
/// assert!(read_line_ahead(&mut endless, true).unwrap().unwrap().is_err());
/// let mut file: &[u8] = b"\xEF\xBB\xBFtime,value\r\n";
/// assert_eq!(read_line_ahead(&mut file, true).unwrap(), Some(Ok("time,value".to_owned())));
/// ```
pub fn read_line_ahead<R: std::io::BufRead>(
    reader: &mut R,
    first: bool,
) -> std::io::Result<Option<Result<String, String>>> {
    use std::io::{BufRead as _, Read as _};
    let mut line = Vec::new();
    let limit = MAX_LINE_BYTES as u64 + 1;
    if reader.by_ref().take(limit).read_until(b'\n', &mut line)? == 0 {
        return Ok(None);
    }
    let ended = line.last() == Some(&b'\n');
    if !ended && line.len() > MAX_LINE_BYTES {
        return Ok(Some(Err(format!(
            "the line is over the limit of {MAX_LINE_BYTES} bytes"
        ))));
    }
    let length = line.len() - usize::from(ended);
    let read = text(line, length).map_err(|(_, why)| why);
    Ok(Some(read.map(|t| match t.strip_prefix('\u{feff}') {
        Some(rest) if first => rest.to_owned(),
        _ => t,
    })))
}

/// One line read: its text, or why it is not a line of text (not UTF-8, too long) with what
/// can be shown of it.
pub(crate) type ReadLine = Result<String, (String, String)>;

/// Reads the next line (without its end) as bytes, following the file at end if asked; `None`
/// at the end, or when `stopping` resolves while it waits for the line. A line that is not UTF-8 or longer
/// than [`MAX_LINE_BYTES`] comes back as `Err((text shown, reason))`: a malformed line, which
/// the caller counts, not the end of the input.
pub(crate) async fn next_line(
    reader: &mut (dyn AsyncBufRead + Unpin + Send),
    follow: bool,
    path: &Path,
    stopping: impl std::future::Future<Output = ()>,
) -> Result<Option<ReadLine>, AdapterError> {
    tokio::pin!(stopping);
    let io = |source| AdapterError::Io {
        path: path.to_owned(),
        error: source,
    };
    let (mut line, mut length, mut ended) = (Vec::new(), 0usize, false);
    loop {
        // A stop ends the wait for a line (standard input may never send another).
        let available = tokio::select! {
            biased;
            read = reader.fill_buf() => read.map_err(io)?,
            _ = &mut stopping => return Ok(None),
        };
        if available.is_empty() {
            if length > 0 && !follow {
                break; // a last line without its end
            }
            if !follow {
                return Ok(None);
            }
            // At the end of a growing file: wait, then look again (a partial line is kept).
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(200)) => continue,
                _ = &mut stopping => return Ok(None),
            }
        }
        let (take, found) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = (MAX_LINE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&available[..take.min(room)]);
        length += take;
        reader.consume(take);
        if found {
            ended = true;
            break;
        }
    }
    if ended {
        length -= 1;
    }
    Ok(Some(text(line, length)))
}

/// The next line into `line`, if the reader's buffer holds all of it (its end included):
/// taken at once, with nothing to wait on (most lines of a file are), and copied into the
/// caller's `line` (no allocation per line). `None` when the line is not all there; `Some(Err)`
/// for a malformed line, as [`next_line`] says.
async fn buffered_line(
    reader: &mut (dyn AsyncBufRead + Unpin + Send),
    line: &mut String,
) -> std::io::Result<Option<Result<(), (String, String)>>> {
    std::future::poll_fn(|cx| {
        let available = match std::pin::Pin::new(&mut *reader).poll_fill_buf(cx) {
            std::task::Poll::Ready(read) => read?,
            std::task::Poll::Pending => return std::task::Poll::Ready(Ok(None)),
        };
        let Some(end) = memchr::memchr(b'\n', available) else {
            return std::task::Poll::Ready(Ok(None));
        };
        let mut bytes = &available[..end];
        while let [rest @ .., b'\r'] = bytes {
            bytes = rest;
        }
        let read = match std::str::from_utf8(bytes) {
            Ok(text) if end <= MAX_LINE_BYTES => {
                line.clear();
                line.push_str(text);
                Ok(())
            }
            _ => text(available[..=end].to_vec(), end).map(|text| {
                *line = text;
            }),
        };
        std::pin::Pin::new(&mut *reader).consume(end + 1);
        std::task::Poll::Ready(Ok(Some(read)))
    })
    .await
}

/// A line read (its end still on it), of `length` bytes without its end: its text, or why it
/// is not a line of text (too long, not UTF-8).
fn text(mut line: Vec<u8>, length: usize) -> ReadLine {
    while line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
        line.pop();
    }
    if length > MAX_LINE_BYTES {
        line.truncate(200);
        let shown = String::from_utf8_lossy(&line).into_owned();
        let why = format!("the line is {length} bytes long, over the limit of {MAX_LINE_BYTES}");
        return Err((shown, why));
    }
    String::from_utf8(line).map_err(|e| {
        let at = e.utf8_error().valid_up_to() + 1;
        let shown = String::from_utf8_lossy(e.as_bytes()).into_owned();
        (
            shown,
            format!("not UTF-8 (an invalid byte at byte {at} of the line)"),
        )
    })
}

/// Feeds parsed lines into a stream: paces them, batches them, handles malformed lines, ends
/// with the final CTI. Shared by the file inputs.
///
/// Batches go in one behind the reading: once a batch is read, the one before it is enqueued
/// and the stream's watermark strategy is told the range of start times of the one read
/// ([`InputContext::look_ahead`]: YTsaurus Flow's look-ahead term for a partitioned strategy;
/// a file is partition 0).
pub(crate) struct Feeder<P> {
    path: PathBuf,
    pacer: Pacer,
    /// Read, to be enqueued next.
    pending: Vec<StreamItem<P>>,
    /// Being read: the batch after `pending`.
    ahead: Vec<StreamItem<P>>,
    /// Items with their arrival times, enqueued together ([`Feeder::arrived`]).
    arrived: Vec<(StreamItem<P>, punctual_policies::Arrival)>,
    follow: bool,
    malformed: MalformedLines,
    final_cti: bool,
    /// A live input: what was read is enqueued whenever the next line keeps it waiting.
    live: bool,
    /// Lines that carry no item (blank, `eof`) not yet reported.
    skipped: u64,
    /// The items have ended (see [`Feeder::end`]).
    ended: bool,
    /// With checkpoints: a full batch is enqueued whole, with the one before it, so that
    /// everything read is in the query whenever the input commits its position (not one
    /// batch behind the reading).
    pub(crate) whole: bool,
}

impl<P: Payload> Feeder<P> {
    pub(crate) fn new(
        path: &Path,
        replay: ReplayOptions,
        malformed: MalformedLines,
        live: bool,
    ) -> Self {
        Feeder {
            path: path.to_owned(),
            pacer: Pacer::new(replay.speed),
            pending: Vec::with_capacity(BATCH),
            ahead: Vec::with_capacity(BATCH),
            arrived: Vec::new(),
            follow: replay.follow,
            malformed,
            final_cti: replay.final_cti,
            live,
            skipped: 0,
            ended: false,
            whole: false,
        }
    }

    /// Whether everything read so far is enqueued: nothing waits in its batches, no skipped
    /// line is unreported.
    pub(crate) fn is_drained(&self) -> bool {
        self.pending.is_empty()
            && self.ahead.is_empty()
            && self.arrived.is_empty()
            && self.skipped == 0
    }

    /// A line that carries no item (blank, or an `eof` line): counted as `skipped`.
    pub(crate) fn skip(&mut self) {
        self.skipped += 1;
    }

    /// Reads the next line into `line` (see [`next_line`]): `Some(Ok(()))` when it is there,
    /// `Some(Err((text shown, why)))` for a malformed line, `None` at the end. On a live input,
    /// when that line keeps the reader waiting for more than [`LIVE_FLUSH_AFTER`], what was
    /// read so far is enqueued first: a slow writer's lines are not held back to fill a batch.
    pub(crate) async fn next_line(
        &mut self,
        ctx: &mut InputContext<P>,
        reader: &mut (dyn AsyncBufRead + Unpin + Send),
        (path, line): (&Path, &mut String),
    ) -> Result<Option<Result<(), (String, String)>>, AdapterError> {
        let buffered = buffered_line(reader, line)
            .await
            .map_err(|error| AdapterError::Io {
                path: path.to_owned(),
                error,
            })?;
        if let Some(read) = buffered {
            return Ok(Some(read));
        }
        let into = |read: Option<ReadLine>| {
            read.map(|read| {
                read.map(|text| {
                    *line = text;
                })
            })
        };
        let read = next_line(reader, self.follow, path, ctx.stop_signal());
        tokio::pin!(read);
        if !self.live || (self.pending.is_empty() && self.ahead.is_empty() && self.skipped == 0) {
            return read.await.map(into);
        }
        // One look first: a line already buffered costs no timer.
        let first = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(read.as_mut(), cx))
        })
        .await;
        if let std::task::Poll::Ready(read) = first {
            return read.map(into);
        }
        tokio::select! {
            biased;
            read = &mut read => return read.map(into),
            _ = tokio::time::sleep(LIVE_FLUSH_AFTER) => {}
        }
        self.flush(ctx).await?;
        read.await.map(into)
    }

    /// Enqueues what was read so far, in order (announcing the batch being read first).
    pub(crate) async fn flush(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        if self.skipped > 0 {
            ctx.report_skipped(std::mem::take(&mut self.skipped)).await;
        }
        if !self.arrived.is_empty() {
            ctx.enqueue_batch_with(self.arrived.drain(..)).await?;
        }
        if !self.pending.is_empty() {
            ctx.enqueue_read(&mut self.pending).await?;
        }
        if let Some(range) = start_range(&self.ahead) {
            ctx.look_ahead(0, range).await?;
        }
        if !self.ahead.is_empty() {
            ctx.enqueue_read(&mut self.ahead).await?;
        }
        Ok(())
    }

    /// An item: waits until it is due (at a speed factor), then enqueues it with the others
    /// (at once in follow mode, else in batches, one behind the reading).
    pub(crate) async fn item(
        &mut self,
        ctx: &mut InputContext<P>,
        item: StreamItem<P>,
    ) -> Result<(), AdapterError> {
        if let StreamItem::Insert(e) = &item {
            if let Some(due) = self.pacer.due(e.kind.start()) {
                self.flush(ctx).await?;
                tokio::time::sleep_until(due).await;
            }
        }
        if self.follow {
            self.pending.push(item);
            return self.flush(ctx).await;
        }
        if self.push(item) {
            self.rotate(ctx).await?;
        }
        Ok(())
    }

    /// Whether lines already read can be taken without a wait each ([`Feeder::push`]): not
    /// paced, not followed, not live.
    pub(crate) fn takes_bulk(&self) -> bool {
        self.pacer.speed.is_none() && !self.follow && !self.live
    }

    /// An item of a bulk read ([`Feeder::takes_bulk`]), kept with the batch being read:
    /// `true` when that batch is full and [`Feeder::rotate`] is due.
    pub(crate) fn push(&mut self, item: StreamItem<P>) -> bool {
        self.ahead.push(item);
        self.ahead.len() >= BATCH
    }

    /// An item with its arrival time, of a bulk read: `true` when the batch is full and
    /// [`Feeder::flush`] is due.
    pub(crate) fn push_arrived(&mut self, item: StreamItem<P>, at: Time) -> bool {
        let arrival = punctual_policies::Arrival {
            time: Some(at),
            partition: None,
        };
        self.arrived.push((item, arrival));
        self.arrived.len() >= BATCH
    }

    /// The batch read is full: the one before it is enqueued, the strategy told the range
    /// of the one read, which then waits its turn.
    pub(crate) async fn rotate(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        if self.whole {
            return self.flush(ctx).await;
        }
        if self.skipped > 0 {
            ctx.report_skipped(std::mem::take(&mut self.skipped)).await;
        }
        if !self.pending.is_empty() {
            ctx.enqueue_read(&mut self.pending).await?;
        }
        if let Some(range) = start_range(&self.ahead) {
            ctx.look_ahead(0, range).await?;
        }
        std::mem::swap(&mut self.pending, &mut self.ahead);
        Ok(())
    }

    /// An item with its arrival time (a record that says when it reached the source):
    /// enqueued with it, in batches (at once in follow mode). A file's records all carry
    /// one or none, so these keep their order with the others.
    pub(crate) async fn arrived(
        &mut self,
        ctx: &mut InputContext<P>,
        item: StreamItem<P>,
        at: Time,
    ) -> Result<(), AdapterError> {
        if self.push_arrived(item, at) || self.follow {
            self.flush(ctx).await?;
        }
        Ok(())
    }

    /// A line that could not be parsed: an error (`Fail`), or counted and dead-lettered (`Skip`).
    pub(crate) async fn malformed(
        &mut self,
        ctx: &mut InputContext<P>,
        (line, text): (usize, String),
        message: String,
    ) -> Result<(), AdapterError> {
        match self.malformed {
            MalformedLines::Fail => Err(AdapterError::Malformed {
                path: self.path.clone(),
                line,
                message,
            }),
            MalformedLines::Skip => {
                self.flush(ctx).await?;
                ctx.report_malformed(MalformedRecord {
                    location: format!("{}:{line}", self.path.display()),
                    message,
                    text,
                })
                .await;
                Ok(())
            }
        }
    }

    /// End of input: what is pending, then `CTI(+inf)` if asked (not in follow mode).
    pub(crate) async fn finish(mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        self.end(ctx).await?;
        self.flush(ctx).await
    }

    /// The query is stopping: what was read is enqueued all the same (it is not lost); with a
    /// drain, the final CTI follows as at the end of the file (if asked, not in follow mode),
    /// with an abort none.
    pub(crate) async fn stopped(mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        if ctx.is_draining() && self.final_cti && !self.follow {
            self.ahead.push(StreamItem::Cti(Time::INF));
        }
        self.flush(ctx).await
    }

    /// The end of the input's items (an `eof` line, or the end of the file): what is pending,
    /// then `CTI(+inf)` if asked (not in follow mode). Only the first call does anything;
    /// lines read after it can still be counted.
    pub(crate) async fn end(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        if std::mem::replace(&mut self.ended, true) {
            return Ok(());
        }
        self.flush(ctx).await?;
        if self.final_cti && !self.follow {
            ctx.enqueue_cti(Time::INF).await?;
        }
        Ok(())
    }
}

/// The least and highest start times of the events among `items` (`None` without events).
pub(crate) fn start_range<P>(items: &[StreamItem<P>]) -> Option<(Time, Time)> {
    items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some(e.kind.start()),
            StreamItem::Cti(_) => None,
        })
        .fold(None, |r, t| match r {
            None => Some((t, t)),
            Some((lo, hi)) => Some((lo.min(t), hi.max(t))),
        })
}

/// A buffered writer to a file (created or truncated), or to standard output for `-`.
pub(crate) async fn open_sink(
    path: &Path,
) -> Result<BufWriter<Box<dyn AsyncWrite + Unpin + Send + Sync>>, AdapterError> {
    if path.as_os_str() == "-" {
        return Ok(BufWriter::new(Box::new(tokio::io::stdout())));
    }
    let file = tokio::fs::File::create(path)
        .await
        .map_err(|source| AdapterError::Io {
            path: path.to_owned(),
            error: source,
        })?;
    Ok(BufWriter::with_capacity(FILE_BUFFER, Box::new(file)))
}

#[cfg(test)]
mod tests;
