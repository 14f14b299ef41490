//! `--checkpoint DIR` and `--checkpoint-every DURATION`: snapshots of a run (`job`, `query`,
//! `pipe`), so that a run killed at any moment and started again with the same arguments goes
//! on from its last snapshot.

use std::path::PathBuf;
use std::time::Duration;

/// The checkpoint options of a command.
#[derive(Clone, Debug, Default, clap::Args)]
#[command(next_help_heading = "Checkpoints")]
pub(super) struct Checkpointing {
    /// Take snapshots of the run in DIR: its state and where each input and output stands.
    /// Killed and run again with the same arguments and DIR, it goes on from its last
    /// snapshot, with no duplicate and no gap in its output files. The inputs must be files
    /// (or Kafka, NATS JetStream) and the outputs JSON-lines files (or NATS). A snapshot of
    /// `--workers N` goes on with any --workers (not with `--processes`).
    #[arg(long, value_name = "DIR")]
    pub(super) checkpoint: Option<PathBuf>,
    /// A snapshot every DURATION (10s).
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = super::args::positive_duration,
        requires = "checkpoint"
    )]
    pub(super) checkpoint_every: Option<Duration>,
}

impl Checkpointing {
    /// The checkpoints these options ask for, if any, for a run whose query and settings
    /// `identity` says (a snapshot of another is refused).
    pub(super) fn checkpoints(&self, identity: String) -> Option<punctual_runtime::Checkpoints> {
        let dir = self.checkpoint.as_ref()?;
        let mut c = punctual_runtime::Checkpoints::new(dir).identity(identity);
        if let Some(every) = self.checkpoint_every {
            c = c.every(every);
        }
        Some(c)
    }
}
