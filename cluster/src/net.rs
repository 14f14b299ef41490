//! The connections between the processes of a run, made here rather than by timely (whose own
//! setup prints every failed attempt on standard output, where a query's output may go): the
//! same protocol (process `i` connects to processes `0..i` and sends its index as a big-endian
//! `u64`, and accepts the connections of processes `i+1..`), retried quietly until the peer
//! is there, then handed to timely's network threads.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::sleep;
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::{Hooks, WorkerGuards};
use timely::worker::Worker;

use crate::heartbeat::Heartbeats;
use crate::{ClusterConfig, Error, MAX_WORKERS};

/// How long to wait between two attempts to reach a peer that is not there yet.
const RETRY: Duration = Duration::from_millis(50);

/// A run's workers on this process, and its heartbeats when it has other processes.
pub(crate) struct Running<T: Send + 'static> {
    guards: WorkerGuards<T>,
    heartbeats: Option<Heartbeats>,
}

impl<T: Send + 'static> Running<T> {
    /// Waits for every worker of this process; then the heartbeats stop.
    pub(crate) fn join(self) -> Vec<Result<T, String>> {
        let results = self.guards.join();
        drop(self.heartbeats);
        results
    }
}

/// Runs `func` on every worker of this process, as `timely::execute` does: on one process
/// without a network; on several, over connections made by [`connect`], with heartbeats.
pub(crate) fn execute<T, F>(config: &ClusterConfig, func: F) -> Result<Running<T>, Error>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    config.check()?;
    let setup = |e: String| Error::Start(e);
    if config.hosts.len() <= 1 {
        let guards = timely::execute(config.timely(), func).map_err(setup)?;
        return Ok(Running {
            guards,
            heartbeats: None,
        });
    }
    let (sockets, beats) =
        connect(&config.hosts, config.process, config.connect_timeout).map_err(setup)?;
    let heartbeats =
        Heartbeats::start(beats, &sockets, &config.hosts, config.peer_timeout).map_err(setup)?;
    let hooks = Hooks::default();
    let local =
        ProcessBuilder::new_typed_vector(config.workers, hooks.refill.clone(), hooks.spill.clone());
    let (builders, guard) =
        initialize_networking_from_sockets(local, sockets, config.process, config.workers, hooks)
            .map_err(|e| setup(format!("the network threads: {e}")))?;
    let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
    let guards = timely::execute::execute_from(
        builders,
        Box::new(guard),
        timely::WorkerConfig::default(),
        func,
    )
    .map_err(setup)?;
    Ok(Running {
        guards,
        heartbeats: Some(heartbeats),
    })
}

/// A connection to each process of a run, by index (`None` at this one).
type Connections = Vec<Option<TcpStream>>;

/// The bit of a connection's first word that marks it as a heartbeat connection (the rest
/// is the process index).
const BEAT: u64 = 1 << 63;

/// Connections to every other process (`None` at `me`), in process order, within `timeout`
/// (else an error naming the processes not heard from): one for timely's data and one for
/// the heartbeats to each.
pub(crate) fn connect(
    hosts: &[String],
    me: usize,
    timeout: Duration,
) -> Result<(Connections, Connections), String> {
    let deadline = Instant::now() + timeout;
    let late = |peers: &[usize]| {
        let named: Vec<String> = peers
            .iter()
            .map(|&p| format!("process {p} ({})", hosts.get(p).map_or("?", |h| h.trim())))
            .collect();
        format!(
            "{} did not connect within {} s (is it running, on that address?)",
            named.join(", "),
            timeout.as_secs_f64()
        )
    };
    let own = hosts
        .get(me)
        .ok_or_else(|| format!("process {me} of {}", hosts.len()))?;
    // Listening first: a process that connects to this one waits in the backlog meanwhile.
    let listener = TcpListener::bind(own.trim()).map_err(|e| format!("listening on {own}: {e}"))?;
    let none = || {
        (0..hosts.len())
            .map(|_| None)
            .collect::<Vec<Option<TcpStream>>>()
    };
    let (mut sockets, mut beats) = (none(), none());
    for (peer, address) in hosts.iter().enumerate().take(me) {
        for (slots, word) in [(&mut sockets, me as u64), (&mut beats, me as u64 | BEAT)] {
            let mut stream = loop {
                match TcpStream::connect(address.trim()) {
                    Ok(s) => break s,
                    // Not there yet: it starts in its own time, up to the deadline.
                    Err(_) if Instant::now() < deadline => sleep(RETRY),
                    Err(_) => return Err(late(&[peer])),
                }
            };
            let sent = stream
                .set_nodelay(true)
                .and_then(|()| stream.write_all(&word.to_be_bytes()));
            sent.map_err(|e| format!("process {peer} ({address}): {e}"))?;
            slots[peer] = Some(stream);
        }
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("listening on {own}: {e}"))?;
    let missing = |sockets: &[Option<TcpStream>], beats: &[Option<TcpStream>]| -> Vec<usize> {
        (me + 1..hosts.len())
            .filter(|&p| sockets[p].is_none() || beats[p].is_none())
            .collect()
    };
    while !missing(&sockets, &beats).is_empty() {
        let (mut stream, from) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(late(&missing(&sockets, &beats)));
                }
                sleep(RETRY);
                continue;
            }
            Err(e) => return Err(format!("accepting on {own}: {e}")),
        };
        let mut index = [0u8; 8];
        // The index comes at once from a process of the run; anything else is not one.
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_nodelay(true))
            .and_then(|()| stream.set_read_timeout(Some(wait)))
            .and_then(|()| stream.read_exact(&mut index))
            .and_then(|()| stream.set_read_timeout(None))
            .map_err(|e| format!("a connection from {from} sent no process index ({e}): is another program using the run's addresses?"))?;
        let word = u64::from_be_bytes(index);
        let slots = if word & BEAT == 0 {
            &mut sockets
        } else {
            &mut beats
        };
        let peer = usize::try_from(word & !BEAT).unwrap_or(usize::MAX);
        match slots.get_mut(peer) {
            Some(slot @ None) if peer > me => *slot = Some(stream),
            _ => {
                return Err(format!(
                    "a connection from {from} says it is process {peer}"
                ))
            }
        }
    }
    Ok((sockets, beats))
}

impl ClusterConfig {
    /// Why the configuration cannot run, if it cannot: more than [`crate::MAX_WORKERS`] workers in
    /// all, or a process index outside the hosts.
    ///
    /// ```
    /// use punctual_cluster::ClusterConfig;
    /// assert!(ClusterConfig::threads(8).check().is_ok());
    /// assert!(ClusterConfig::threads(700).check().is_err());
    /// ```
    pub fn check(&self) -> Result<(), Error> {
        let all = self.workers.saturating_mul(self.process_count());
        if all > MAX_WORKERS {
            return Err(Error::Start(format!(
                "{} worker(s) in each of {} process(es) make {all} workers; at most {MAX_WORKERS} are allowed (every pair of workers has its own channels)",
                self.workers,
                self.process_count()
            )));
        }
        if self.hosts.len() > 1 && self.process >= self.hosts.len() {
            return Err(Error::Start(format!(
                "process {} of a run of {} processes (numbered from 0)",
                self.process,
                self.hosts.len()
            )));
        }
        Ok(())
    }
}
