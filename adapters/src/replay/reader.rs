//! The one file reader: reads a file (or a part of it, or standard input) line by line and
//! hands each line to its format ([`FileFormat`]: CSV records, JSON lines), replaying what
//! the format makes of it through a [`Feeder`]. What every file input does the same way is
//! here once: line numbers, a byte-order mark, blank lines, malformed lines, a header, an
//! `eof` line, a stop.

use std::marker::PhantomData;
use std::path::Path;

use async_trait::async_trait;

use punctual_core::StreamItem;
use punctual_runtime::adapter::{InputAdapter, Payload};
use punctual_runtime::context::InputContext;
use punctual_runtime::error::AdapterError;

use super::{Feeder, FilePart, Lines, MalformedLines, ReadLine, ReplayOptions};

/// The byte-order mark some editors write at the start of a UTF-8 file: not part of its first
/// line.
const BOM: char = '\u{feff}';

/// What a format made of a line ([`FileFormat::read`]).
#[derive(Debug, Clone, PartialEq)]
pub enum LineRead<P> {
    /// One item.
    Item(StreamItem<P>),
    /// Two items, in the order they are enqueued (a table of versions: the end of the key's
    /// version before, then the new version).
    Two(StreamItem<P>, StreamItem<P>),
    /// One item and its arrival time (a record that says when it reached the source), for
    /// a watermark strategy that judges events by their arrival.
    Arrived(StreamItem<P>, punctual_core::Time),
    /// A line that carries no item (counted as skipped).
    Nothing,
    /// The end of the input's items (a JSON-lines `eof` line): the lines after it are
    /// malformed.
    End,
}

/// How a [`FileReader`] reads each line of its file: the CSV and JSON-lines inputs are
/// [`FileReader`]s with a format each.
pub trait FileFormat<P>: Send + 'static {
    /// Whether the file's first line is a header ([`FileFormat::header`]) rather than data.
    /// No by default.
    fn has_header(&self) -> bool {
        false
    }

    /// Reads the header (without a byte-order mark), or says why it cannot be one: the input
    /// fails with line 1 of the file. Called once, before any [`FileFormat::read`], also by a
    /// reader of a later part of the file (which reads the file's first line for it).
    fn header(&mut self, line: &str) -> Result<(), String> {
        let _ = line;
        Ok(())
    }

    /// Reads a line that is not blank into its items, or says why it is malformed.
    fn read(&mut self, line: &str) -> Result<LineRead<P>, String>;
}

/// Reads one file, or one part of one, into a stream, each line as its format
/// ([`FileFormat`]) reads it; see [`CsvInput`](crate::CsvInput) and
/// [`JsonLinesInput`](crate::JsonLinesInput).
#[derive(Debug)]
pub struct FileReader<P, F> {
    /// The file, or the part of it, it reads.
    source: FilePart,
    replay: ReplayOptions,
    malformed: MalformedLines,
    format: F,
    _payload: PhantomData<fn() -> P>,
}

impl<P, F> FileReader<P, F> {
    pub(crate) fn new(
        source: FilePart,
        replay: ReplayOptions,
        malformed: MalformedLines,
        format: F,
    ) -> Self {
        FileReader {
            source,
            replay,
            malformed,
            format,
            _payload: PhantomData,
        }
    }
}

/// How the reader stands after the header: where line numbers start, or the input has
/// already ended (an empty file, a stop).
enum Start {
    Lines(usize),
    Done,
}

impl<P: Payload, F: FileFormat<P>> FileReader<P, F> {
    /// Reads the header if the format has one: from the lines read (this reader starts at the
    /// file's first byte) or from the file's first line (a later part).
    async fn header(
        &mut self,
        ctx: &mut InputContext<P>,
        (feed, reader, from_start): (&mut Feeder<P>, &mut Lines, bool),
        line: &mut String,
    ) -> Result<Start, AdapterError> {
        if !self.format.has_header() {
            return Ok(Start::Lines(0));
        }
        let path = self.source.path.clone();
        let header = match from_start {
            false => first_line(&path).await?,
            true => feed
                .next_line(ctx, reader.reader.as_mut(), (&path, line))
                .await?
                .map(|read| read.map(|()| std::mem::take(line))),
        };
        let Some(header) = header else {
            // An empty file: no rows, and the end of input as for any other.
            return Ok(Start::Done);
        };
        let malformed = |message: String| AdapterError::Malformed {
            path: path.clone(),
            line: 1,
            message,
        };
        let header = header.map_err(|(_, why)| malformed(why))?;
        let header = header.strip_prefix(BOM).unwrap_or(&header);
        self.format.header(header).map_err(malformed)?;
        // Lines are numbered in what this reader reads: the file, or its part.
        Ok(Start::Lines(usize::from(from_start)))
    }
}

/// Where a bulk read of the lines already buffered stopped ([`FileReader::read_bulk`]).
enum Stop<P> {
    /// No whole line left in the buffer, or the next one takes the one-line path (the
    /// first line, one over the limit or not UTF-8, one after an `eof` line).
    Lines,
    /// The batch read is full ([`Feeder::rotate`]).
    Full,
    /// The items with arrival times make a batch ([`Feeder::flush`]).
    Flush,
    /// A line whose reading needs a wait: `End`, or malformed (its text kept to show).
    Read(Result<LineRead<P>, String>, String),
}

/// What the loop does after a line.
enum Flow {
    Next,
    /// The end of a followed input's items.
    Break,
}

impl<P: Payload, F: FileFormat<P>> FileReader<P, F> {
    /// Reads the whole lines at the start of `buf` without a wait each, as the one-line path
    /// would, until one needs a wait or the batch is full: how many bytes it took, and why it
    /// stopped. `number` counts the lines taken.
    fn read_bulk(
        &mut self,
        feed: &mut Feeder<P>,
        buf: &[u8],
        number: &mut usize,
    ) -> (usize, Stop<P>) {
        // The whole lines, checked as UTF-8 at once (up to the line with a byte that is not:
        // that one takes the one-line path, which says so).
        let whole = &buf[..memchr::memrchr(b'\n', buf).map_or(0, |i| i + 1)];
        let text = std::str::from_utf8(whole).unwrap_or_else(|e| {
            let valid = &whole[..e.valid_up_to()];
            let lines = &valid[..memchr::memrchr(b'\n', valid).map_or(0, |i| i + 1)];
            std::str::from_utf8(lines).unwrap_or_default()
        });
        let mut taken = 0;
        while let Some(end) = memchr::memchr(b'\n', &text.as_bytes()[taken..]) {
            if end > crate::MAX_LINE_BYTES {
                break;
            }
            let line = text[taken..taken + end].trim_end_matches('\r');
            taken += end + 1;
            *number += 1;
            if line.trim().is_empty() {
                feed.skip();
                continue;
            }
            let stop = match self.format.read(line) {
                Ok(LineRead::Item(item)) => feed.push(item).then_some(Stop::Full),
                Ok(LineRead::Two(first, second)) => {
                    let full = feed.push(first);
                    (feed.push(second) || full).then_some(Stop::Full)
                }
                Ok(LineRead::Arrived(item, at)) => {
                    feed.push_arrived(item, at).then_some(Stop::Flush)
                }
                Ok(LineRead::Nothing) => {
                    feed.skip();
                    None
                }
                read @ (Ok(LineRead::End) | Err(_)) => Some(Stop::Read(read, line.to_owned())),
            };
            if let Some(stop) = stop {
                return (taken, stop);
            }
        }
        (taken, Stop::Lines)
    }

    /// Takes what the format read of line `number` (its text given by `text` if it is
    /// malformed).
    async fn take(
        &mut self,
        ctx: &mut InputContext<P>,
        feed: &mut Feeder<P>,
        (read, number, text): (Result<LineRead<P>, String>, usize, impl FnOnce() -> String),
        ended: &mut bool,
    ) -> Result<Flow, AdapterError> {
        match read {
            Ok(LineRead::Item(item)) => feed.item(ctx, item).await?,
            Ok(LineRead::Arrived(item, at)) => feed.arrived(ctx, item, at).await?,
            Ok(LineRead::Two(first, second)) => {
                feed.item(ctx, first).await?;
                feed.item(ctx, second).await?;
            }
            Ok(LineRead::Nothing) => feed.skip(),
            Ok(LineRead::End) => {
                // The end of this input. In follow mode the file is left there.
                feed.skip();
                if self.replay.follow {
                    return Ok(Flow::Break);
                }
                feed.end(ctx).await?;
                *ended = true;
            }
            Err(why) => feed.malformed(ctx, (number, text()), why).await?,
        }
        Ok(Flow::Next)
    }
}

#[async_trait]
impl<P: Payload, F: FileFormat<P>> InputAdapter<P> for FileReader<P, F> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let path = self.source.path.clone();
        let resume = resumed_at(ctx)?;
        let (base, resumed_line) = resume.unwrap_or((0, 0));
        let (mut lines, shown) = self.source.open(resume.map(|_| base)).await?;
        let from_start = lines.from_start;
        let read = Counted::wrap(&mut lines);
        let mut feed = Feeder::new(&shown, self.replay, self.malformed, lines.live);
        feed.whole = ctx.commits_positions();
        let bulk = feed.takes_bulk();
        // The line read, reused for each.
        let mut line = String::new();
        let start = self.header(ctx, (&mut feed, &mut lines, from_start), &mut line);
        let mut number = match start.await? {
            Start::Lines(n) if resume.is_none() => n,
            Start::Lines(_) => usize::try_from(resumed_line).unwrap_or(usize::MAX),
            Start::Done if ctx.is_stopping() => return Ok(()),
            Start::Done => {
                feed.finish(ctx).await?;
                return commit(ctx, base + read.get(), 0).await;
            }
        };
        // What the last commit said (the first one, at the start, only with checkpoints).
        let mut committed = None;
        // After an `eof` line (not following the file), the lines left are read and counted.
        let mut ended = false;
        loop {
            if ctx.is_stopping() {
                return feed.stopped(ctx).await;
            }
            // With checkpoints: once everything read is enqueued, the source stands here.
            let at = (base + read.get(), number);
            if feed.whole && feed.is_drained() && committed != Some(at) {
                commit(ctx, at.0, at.1).await?;
                committed = Some(at);
            }
            // The lines already buffered, without a wait each (after the first line, which
            // may start with a byte-order mark).
            if bulk && number > 0 && !ended {
                let reader = lines.reader.as_mut();
                let (taken, stop) = std::future::poll_fn(|cx| {
                    std::task::Poll::Ready(
                        match std::pin::Pin::new(&mut *reader).poll_fill_buf(cx) {
                            std::task::Poll::Ready(Ok(buf)) => {
                                Ok(self.read_bulk(&mut feed, buf, &mut number))
                            }
                            std::task::Poll::Ready(Err(e)) => Err(e),
                            std::task::Poll::Pending => Ok((0, Stop::Lines)),
                        },
                    )
                })
                .await
                .map_err(|error| AdapterError::Io {
                    path: path.clone(),
                    error,
                })?;
                std::pin::Pin::new(&mut *reader).consume(taken);
                let flow = match stop {
                    Stop::Lines if taken == 0 => None,
                    Stop::Lines => Some(Flow::Next),
                    Stop::Full => Some(feed.rotate(ctx).await.map(|()| Flow::Next)?),
                    Stop::Flush => Some(feed.flush(ctx).await.map(|()| Flow::Next)?),
                    Stop::Read(read, text) => {
                        let read = (read, number, || text);
                        Some(self.take(ctx, &mut feed, read, &mut ended).await?)
                    }
                };
                match flow {
                    Some(Flow::Next) => continue,
                    Some(Flow::Break) => break,
                    None => {}
                }
            }
            let read = feed.next_line(ctx, lines.reader.as_mut(), (&path, &mut line));
            let Some(read) = read.await? else {
                if ctx.is_stopping() {
                    return feed.stopped(ctx).await;
                }
                break;
            };
            number += 1;
            if let Err((shown, why)) = read {
                feed.malformed(ctx, (number, shown), why).await?;
                continue;
            }
            if number == 1 && from_start && line.starts_with(BOM) {
                line.drain(..BOM.len_utf8());
            }
            if line.trim().is_empty() {
                feed.skip();
                continue;
            }
            if ended {
                let why = "a line after the `eof` line".to_owned();
                feed.malformed(ctx, (number, line.clone()), why).await?;
                continue;
            }
            let read = (self.format.read(&line), number, || line.clone());
            if let Flow::Break = self.take(ctx, &mut feed, read, &mut ended).await? {
                break;
            }
        }
        feed.finish(ctx).await?;
        commit(ctx, base + read.get(), number).await
    }
}

/// Where a query restored from a snapshot resumes a file input: the byte and the line after
/// the last line read before the snapshot (`None`: from the start).
fn resumed_at<P: Payload>(ctx: &InputContext<P>) -> Result<Option<(u64, u64)>, AdapterError> {
    match ctx.resume_from().map(|p| p.0.as_slice()) {
        None => Ok(None),
        Some(&[offset, line]) => Ok(Some((offset, line))),
        Some(other) => Err(AdapterError::Config(format!(
            "a snapshot's position of a file input is a byte and a line, not {other:?}"
        ))),
    }
}

/// With checkpoints: says that the file input stands at byte `offset`, line `line`.
async fn commit<P: Payload>(
    ctx: &mut InputContext<P>,
    offset: u64,
    line: usize,
) -> Result<(), AdapterError> {
    if ctx.commits_positions() {
        let at = punctual_runtime::checkpoint::SourcePosition(vec![offset, line as u64]);
        ctx.commit_position(at).await;
    }
    Ok(())
}

/// The bytes taken from a line source so far: a reader that counts what is consumed of it
/// (the reader's buffer, in bulk or line by line) and read through it.
struct Counted {
    inner: Box<dyn tokio::io::AsyncBufRead + Unpin + Send>,
    taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The count of a [`Counted`] reader.
struct Taken(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Taken {
    fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Counted {
    /// Puts a counter around `lines`' reader; the count it returns goes up as it is read.
    fn wrap(lines: &mut Lines) -> Taken {
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let inner = std::mem::replace(&mut lines.reader, Box::new(tokio::io::empty()));
        lines.reader = Box::new(Counted {
            inner,
            taken: std::sync::Arc::clone(&taken),
        });
        Taken(taken)
    }

    fn add(&self, n: usize) {
        self.taken
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.add(n);
        polled
    }
}

impl tokio::io::AsyncBufRead for Counted {
    fn poll_fill_buf(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<&[u8]>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_fill_buf(cx)
    }

    fn consume(mut self: std::pin::Pin<&mut Self>, amt: usize) {
        self.add(amt);
        std::pin::Pin::new(&mut self.inner).consume(amt);
    }
}

/// The first line of a file (without its line end), `None` for an empty file; a line over
/// [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES) or not UTF-8 is `Some(Err(why))`, and no more of
/// it is held than the limit.
async fn first_line(path: &Path) -> Result<Option<ReadLine>, AdapterError> {
    let path = path.to_owned();
    let io = |path: &Path, source| AdapterError::Io {
        path: path.to_owned(),
        error: source,
    };
    // One line read ahead, blocking: on the blocking pool, as tokio reads files anyway.
    let read = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path).map_err(|e| io(&path, e))?;
        super::read_line_ahead(&mut std::io::BufReader::new(file), false).map_err(|e| io(&path, e))
    });
    match read.await {
        Ok(read) => Ok(read?.map(|r| r.map_err(|why| (String::new(), why)))),
        Err(e) => Err(AdapterError::Config(format!("reading a header: {e}"))),
    }
}
