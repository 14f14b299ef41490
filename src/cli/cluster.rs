//! Cases on several workers and processes: `run --workers W [--processes P --process I
//! --hosts FILE]` and `check --workers W --processes P`, which starts the processes itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use punctual_adapters::line::{item_to_json, parse_line};
use punctual_cluster::{ClusterConfig, MAX_WORKERS};
use punctual_core::StreamItem;
use punctual_policies::IngressCounters;
use punctual_rows::Row;

use crate::conformance::{run_case, run_cluster, Case, CaseError, CaseRun};

/// How long `check --processes` waits for a case's processes before it kills them.
const DEADLINE: Duration = Duration::from_secs(120);

/// Where a run goes: `--workers W` threads in each of `--processes P` processes; this one
/// is `--process I`, the processes' addresses are in `--hosts FILE` (one `host:port` a line);
/// `--report FILE` writes what this process saw as JSON (for `check`).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "On the cluster")]
pub(super) struct Placement {
    /// Split the run over W worker threads (the same results).
    #[arg(long, value_name = "W", default_value_t = 1, value_parser = super::args::count)]
    pub(super) workers: usize,
    /// Run as P processes, each running the same command with its own --process I (at most
    /// 128 workers in all); the output is on process 0.
    #[arg(long, value_name = "P", default_value_t = 1, value_parser = super::args::count)]
    pub(super) processes: usize,
    /// This process's index, from 0 (with --processes).
    #[arg(long, value_name = "I")]
    pub(super) process: Option<usize>,
    /// A file with one host:port per process; line I is this one (with --processes).
    #[arg(long, value_name = "FILE")]
    pub(super) hosts: Option<PathBuf>,
    /// Write what this process saw as JSON (how `check --processes` collects a run).
    #[arg(long, value_name = "FILE", hide = true)]
    pub(super) report: Option<PathBuf>,
    /// How long the processes may take to connect before the run fails naming the missing
    /// one (60s).
    #[arg(long, value_name = "DURATION", value_parser = super::args::positive_duration)]
    pub(super) connect_timeout: Option<Duration>,
    /// How long another process may send nothing, not even its heartbeat, before the run
    /// fails naming it: a stopped or frozen process (30s).
    #[arg(long, value_name = "DURATION", value_parser = super::args::positive_duration)]
    pub(super) peer_timeout: Option<Duration>,
}

/// `check`'s placement: each case on `--workers W` threads in each of `--processes P`
/// processes that `check` starts itself.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "On the cluster")]
pub(super) struct Spread {
    /// Run each case on W worker threads (in each process).
    #[arg(long, value_name = "W", default_value_t = 1, value_parser = super::args::count)]
    pub(super) workers: usize,
    /// Run each case as P processes of this program on free loopback ports (a 120 s deadline
    /// each).
    #[arg(long, value_name = "P", default_value_t = 1, value_parser = super::args::count)]
    pub(super) processes: usize,
}

impl Spread {
    /// The placement of `check`'s runs on this process.
    pub(super) fn placement(&self) -> Placement {
        Placement {
            workers: self.workers,
            processes: self.processes,
            process: None,
            hosts: None,
            report: None,
            connect_timeout: None,
            peer_timeout: None,
        }
    }
}

impl Placement {
    /// Refuses more workers than a run may have: `--workers` times `--processes` past
    /// [`MAX_WORKERS`] (every pair of workers has its own channels).
    pub(super) fn check(&self) -> Result<(), String> {
        let all = self.workers.saturating_mul(self.processes);
        if all > MAX_WORKERS {
            return Err(format!(
                "`--workers {} --processes {}` make {all} workers; at most {MAX_WORKERS} are allowed in all (every pair of workers has its own channels)",
                self.workers, self.processes
            ));
        }
        Ok(())
    }

    /// The cluster configuration of `job`: none (the local runtime) without `--workers` or
    /// `--processes`; `--report` is for `run` only.
    pub(super) fn job_config(&self) -> Result<Option<ClusterConfig>, String> {
        if self.report.is_some() {
            return Err("`--report` is for `run`".to_owned());
        }
        if self.workers == 1 && self.processes == 1 {
            return Ok(None);
        }
        self.config().map(Some)
    }

    /// The cluster configuration of `run`: one process, or this one of `--processes` with
    /// `--process` and `--hosts`.
    pub(super) fn config(&self) -> Result<ClusterConfig, String> {
        if self.processes == 1 {
            return Ok(ClusterConfig::threads(self.workers));
        }
        let (Some(process), Some(hosts)) = (self.process, &self.hosts) else {
            return Err(format!(
                "`--processes {}` needs `--process I` (this process's index) and `--hosts FILE`",
                self.processes
            ));
        };
        let text = std::fs::read_to_string(hosts)
            .map_err(|e| format!("cannot read the hosts file {}: {e}", hosts.display()))?;
        let addresses: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect();
        if addresses.len() != self.processes {
            return Err(format!(
                "the hosts file {} has {} addresses, for `--processes {}`",
                hosts.display(),
                addresses.len(),
                self.processes
            ));
        }
        if process >= self.processes {
            return Err(format!(
                "`--process {process}`: the processes are numbered 0 to {}",
                self.processes - 1
            ));
        }
        let mut config = ClusterConfig::processes(self.workers, process, addresses);
        if let Some(t) = self.connect_timeout {
            config.connect_timeout = t;
        }
        if let Some(t) = self.peer_timeout {
            config.peer_timeout = t;
        }
        Ok(config)
    }
}

/// Runs a case where `placement` says: on one worker, on threads, or as one process of
/// several. With `--report FILE`, also writes what this process saw there. Returns the run
/// and, for each input, whether this process owns it (its counters are here).
pub(super) fn run(dir: &Path, placement: &Placement) -> Result<(CaseRun, Vec<bool>), CaseError> {
    let config = placement.config().map_err(CaseError::Config)?;
    if config.workers == 1 && config.process_count() == 1 {
        let run = run_case(dir)?;
        let owned = vec![true; run.counters.len()];
        return Ok((run, owned));
    }
    let share = run_cluster(Case::load(dir)?, &config)?;
    if let Some(path) = &placement.report {
        let report = serde_json::json!({
            "output": share.run.output.iter().map(|i| item_to_json(i.as_ref())).collect::<Vec<_>>(),
            "counters": share.run.counters.iter().zip(&share.owned)
                .filter(|(_, owned)| **owned)
                .map(|((name, c), _)| (name.clone(), serde_json::to_value(c).unwrap_or_default()))
                .collect::<serde_json::Map<_, _>>(),
        });
        std::fs::write(path, report.to_string()).map_err(|e| CaseError::Io {
            path: path.clone(),
            message: e.to_string(),
        })?;
    }
    Ok((share.run, share.owned))
}

/// `check --processes P`: runs the case in `dir` as P processes of this program on free
/// loopback ports, each with a deadline, and puts their reports together: the output of
/// process 0, each input's counters from the process that owns it. A process that fails or
/// does not finish in time fails the case (the others are stopped).
pub(super) fn check_on_processes(
    dir: &Path,
    workers: usize,
    processes: usize,
) -> Result<CaseRun, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = std::env::temp_dir().join(format!("punctual-check-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    // A port found free may be taken by someone else before a process binds it: then the
    // case runs again on other ports (twice at most).
    let mut result = run_processes(&exe, dir, workers, processes, &scratch);
    for _ in 0..2 {
        match &result {
            Err(e) if e.contains("Address already in use") => {
                result = run_processes(&exe, dir, workers, processes, &scratch);
            }
            _ => break,
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn run_processes(
    exe: &Path,
    dir: &Path,
    workers: usize,
    processes: usize,
    scratch: &Path,
) -> Result<CaseRun, String> {
    let hosts = scratch.join("hosts");
    let ports = free_ports(processes)?;
    let lines: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    std::fs::write(&hosts, lines.join("\n")).map_err(|e| format!("{}: {e}", hosts.display()))?;
    let mut children = spawn_processes(exe, dir, (workers, processes), &hosts, scratch)?;
    wait_for_processes(&mut children)?;
    let reports: Vec<PathBuf> = children.into_iter().map(|(_, report, _)| report).collect();
    read_reports(dir, &reports, workers)
}

/// A started process of a case's run: the child, where it writes its report, its stderr.
type Process = (Child, PathBuf, PathBuf);

/// Starts the `processes` processes of a case's run, each of `workers` workers; a process that
/// cannot start stops the others.
fn spawn_processes(
    exe: &Path,
    dir: &Path,
    (workers, processes): (usize, usize),
    hosts: &Path,
    scratch: &Path,
) -> Result<Vec<Process>, String> {
    let mut children: Vec<Process> = Vec::new();
    for i in 0..processes {
        let report = scratch.join(format!("report-{i}.json"));
        let log = scratch.join(format!("stderr-{i}.txt"));
        let stderr = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(exe)
            .arg("run")
            .arg(dir)
            .args(["--workers", &workers.to_string()])
            .args(["--processes", &processes.to_string()])
            .args(["--process", &i.to_string()])
            .arg("--hosts")
            .arg(hosts)
            .arg("--report")
            .arg(&report)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn();
        match child {
            Ok(c) => children.push((c, report, log)),
            Err(e) => {
                stop(&mut children);
                return Err(format!("cannot start process {i}: {e}"));
            }
        }
    }
    Ok(children)
}

/// Waits until every process has succeeded; the first that fails, or the deadline, stops
/// them all with the reason (a failed process's stderr).
fn wait_for_processes(children: &mut [Process]) -> Result<(), String> {
    let processes = children.len();
    let deadline = Instant::now() + DEADLINE;
    let mut done = vec![false; processes];
    while done.iter().any(|d| !d) {
        for i in 0..processes {
            if done[i] {
                continue;
            }
            let (child, _, log) = &mut children[i];
            match child.try_wait() {
                Ok(Some(status)) if status.success() => done[i] = true,
                Ok(Some(status)) => {
                    let said = std::fs::read_to_string(log.as_path()).unwrap_or_default();
                    stop(children);
                    return Err(format!(
                        "process {i} of {processes} failed ({status}): {}",
                        said.trim()
                    ));
                }
                Ok(None) => {}
                Err(e) => {
                    stop(children);
                    return Err(format!("cannot wait for process {i}: {e}"));
                }
            }
        }
        if Instant::now() > deadline {
            stop(children);
            return Err(format!(
                "the processes did not finish within {}s",
                DEADLINE.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The case's run from its processes' reports: process 0's output, each stream's counters from
/// the process that owns it (`workers` in each process).
fn read_reports(dir: &Path, reports: &[PathBuf], workers: usize) -> Result<CaseRun, String> {
    let case = Case::load(dir).map_err(|e| e.to_string())?;
    let mut output = Vec::new();
    let mut counters: Vec<(String, Option<IngressCounters>)> = case
        .streams
        .iter()
        .map(|s| (s.name.clone(), None))
        .collect();
    for (i, report) in reports.iter().enumerate() {
        let text = std::fs::read_to_string(report)
            .map_err(|e| format!("process {i} wrote no report: {e}"))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("process {i}'s report: {e}"))?;
        if i == 0 {
            for line in json["output"].as_array().into_iter().flatten() {
                let item: Option<StreamItem<Row>> = parse_line::<Row>(&line.to_string())
                    .and_then(|l| l.into_item_or_default())
                    .map_err(|e| format!("process 0's output: {e}"))?;
                output.extend(item);
            }
        }
        for (name, c) in json["counters"].as_object().into_iter().flatten() {
            let c: IngressCounters = serde_json::from_value(c.clone())
                .map_err(|e| format!("process {i}'s counters of `{name}`: {e}"))?;
            if let Some(slot) = counters.iter_mut().find(|(n, _)| n == name) {
                slot.1 = Some(c);
            }
        }
    }
    let counters = counters
        .into_iter()
        .map(|(name, c)| {
            c.map(|c| (name.clone(), c))
                .ok_or_else(|| format!("no process reported the counters of `{name}`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let dead_letters = counters
        .iter()
        .map(|(n, _)| (n.clone(), Vec::new()))
        .collect();
    Ok(CaseRun {
        case,
        output,
        counters,
        dead_letters,
        held: Vec::new(),
        explanations: Vec::new(),
        traces: Vec::new(),
        workers: reports.len() * workers,
    })
}

/// `n` loopback ports free now: bound all at once (so they differ), then released.
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let listeners = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))
}

fn stop(children: &mut [(Child, PathBuf, PathBuf)]) {
    for (child, _, _) in children.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Writes a one-line note when a process of a run on several is not the one with the output.
pub(super) fn note_share(err: &mut dyn Write, placement: &Placement) {
    if placement.processes > 1 && placement.process.is_some_and(|p| p > 0) {
        let _ = writeln!(
            err,
            "process {} of {}: the output is on process 0; the counters below are of the inputs this process owns",
            placement.process.unwrap_or(0),
            placement.processes
        );
    }
}
