//! How file inputs replay: as fast as possible or at a speed factor of the event timestamps,
//! optionally following the file as it grows (tail), and with a final CTI at end of file.
//! Shared by the JSON-lines and CSV inputs.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::time::Instant;

use punctual_core::{Time, TICKS_PER_SECOND};

use crate::error::AdapterError;

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
        Some(w0 + Duration::from_secs_f64(ticks / TICKS_PER_SECOND as f64))
    }
}

/// Opens a file for line reading; `-` is standard input.
pub(crate) async fn open_lines(
    path: &Path,
) -> Result<Box<dyn AsyncBufRead + Unpin + Send>, AdapterError> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufReader::new(tokio::io::stdin())));
    }
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|source| AdapterError::Io {
            path: path.to_owned(),
            source,
        })?;
    Ok(Box::new(BufReader::new(file)))
}

/// Reads the next line (without its end), following the file at end if asked; `None` at the
/// end (or when `stop` resolves while following).
pub(crate) async fn next_line(
    reader: &mut (dyn AsyncBufRead + Unpin + Send),
    follow: bool,
    path: &Path,
    stopping: impl std::future::Future<Output = ()>,
) -> Result<Option<String>, AdapterError> {
    tokio::pin!(stopping);
    let mut line = String::new();
    loop {
        let n = reader
            .read_line(&mut line)
            .await
            .map_err(|source| AdapterError::Io {
                path: path.to_owned(),
                source,
            })?;
        if n > 0 && (line.ends_with('\n') || !follow) {
            while line.ends_with('\n') || line.ends_with('\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
        if !follow {
            return Ok(None);
        }
        // At the end of a growing file: wait, then look again (a partial line is kept).
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = &mut stopping => return Ok(None),
        }
    }
}
