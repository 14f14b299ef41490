//! Heartbeats between the processes of a run, on a connection of their own beside timely's:
//! each process sends a byte to every other one several times per
//! [`ClusterConfig::peer_timeout`](crate::ClusterConfig::peer_timeout), from a thread of its
//! own (busy workers do not delay it), and watches what the others send. A peer that sends
//! nothing for the timeout while its connection stays open (a process stopped with `SIGSTOP`,
//! frozen, or cut off by the network) is lost: its data connection is shut, so that timely's
//! network threads end as they do for a killed peer, and the run fails with
//! [`Error::LostPeer`](crate::Error::LostPeer) naming it. A connection that closes is not a
//! loss here (a peer that ended its run closes it; one that died is caught by timely's own
//! connection).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// [`ClusterConfig::peer_timeout`](crate::ClusterConfig::peer_timeout) by default.
pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(30);

/// The heartbeat connections of a run: they beat until dropped (the run's end), then close.
pub(crate) struct Heartbeats {
    sockets: Vec<TcpStream>,
    ended: Arc<AtomicBool>,
}

impl Heartbeats {
    /// Starts beating on `beats` (one connection per other process, `None` at this one) and
    /// watching them: a peer silent for `timeout` has its connection in `data` shut and is
    /// recorded as lost, under its address in `hosts`.
    pub(crate) fn start(
        beats: Vec<Option<TcpStream>>,
        data: &[Option<TcpStream>],
        hosts: &[String],
        timeout: Duration,
    ) -> Result<Heartbeats, String> {
        let ended = Arc::new(AtomicBool::new(false));
        let mut sockets = Vec::new();
        // Several beats per timeout, so that one late beat is not a loss.
        let every = (timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        for (peer, beat) in beats.into_iter().enumerate() {
            let Some(beat) = beat else { continue };
            let address = hosts.get(peer).cloned().unwrap_or_default();
            let broken =
                |e: std::io::Error| format!("the heartbeat of process {peer} ({address}): {e}");
            let data = match data.get(peer) {
                Some(Some(d)) => Some(d.try_clone().map_err(broken)?),
                _ => None,
            };
            let mut sender = beat.try_clone().map_err(broken)?;
            let mut watched = beat.try_clone().map_err(broken)?;
            watched.set_read_timeout(Some(timeout)).map_err(broken)?;
            sockets.push(beat);
            let stop = Arc::clone(&ended);
            std::thread::Builder::new()
                .name(format!("punctual:beat-{peer}"))
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) && sender.write_all(&[0]).is_ok() {
                        std::thread::sleep(every);
                    }
                })
                .map_err(broken)?;
            let stop = Arc::clone(&ended);
            std::thread::Builder::new()
                .name(format!("punctual:watch-{peer}"))
                .spawn(move || watch(&mut watched, peer, data, timeout, &stop))
                .map_err(broken)?;
        }
        Ok(Heartbeats { sockets, ended })
    }
}

/// Reads `peer`'s beats until its connection closes or the run ends; if it is silent for
/// `timeout` before, records it as lost and shuts its `data` connection.
fn watch(
    beats: &mut TcpStream,
    peer: usize,
    data: Option<TcpStream>,
    timeout: Duration,
    ended: &AtomicBool,
) {
    let mut buffer = [0u8; 64];
    loop {
        match beats.read(&mut buffer) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) && !ended.load(Ordering::Relaxed) =>
            {
                crate::LOST
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_or_insert((
                        peer,
                        format!(
                            "it sent nothing for {} s (stopped, frozen, or cut off by the network?)",
                            timeout.as_secs_f64()
                        ),
                    ));
                if let Some(data) = data {
                    let _ = data.shutdown(Shutdown::Both);
                }
                return;
            }
            Err(_) => return,
        }
    }
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        self.ended.store(true, Ordering::Relaxed);
        for s in &self.sockets {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}
