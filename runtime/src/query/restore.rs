//! Where a query with checkpoints starts from: what it is checked for (inputs that resume,
//! operators that save their state, outputs that cut themselves back), the directory's lock,
//! and the latest snapshot restored into its driver.

use super::Query;
use crate::error::QueryError;

impl Query {
    /// With checkpoints: how many workers took the snapshot the query would start from
    /// ([`Checkpoints::workers`](crate::Checkpoints::workers)); `None` without checkpoints or without a snapshot. A run on
    /// several workers splits its keys into that many parts.
    pub fn snapshot_workers(&self) -> Result<Option<usize>, QueryError> {
        let Some(c) = &self.checkpoints else {
            return Ok(None);
        };
        c.workers().map_err(|error| QueryError::Create {
            stream: "checkpoints".to_owned(),
            error,
        })
    }

    /// With checkpoints: checks that the query can take snapshots, takes the directory's
    /// lock, and restores the driver from the latest snapshot if there is one. `None` without
    /// checkpoints. As part `w` of `workers` (`worker`): the driver takes that part of a
    /// snapshot of as many parts, and part 0 alone takes the lock.
    pub(super) fn restore(
        &self,
        driver: &mut punctual_engine::Driver,
        worker: Option<(usize, usize)>,
    ) -> Result<Option<Restored>, QueryError> {
        let (me, workers) = worker.unwrap_or((0, 1));
        let Some(c) = &self.checkpoints else {
            return Ok(None);
        };
        let refusal = if let Some(name) = self.not_resumable.first() {
            Some(format!(
                "input `{name}` cannot resume its source at a position (a file can; standard \
                 input and follow mode cannot)"
            ))
        } else if let Some(why) = self.outputs.iter().find_map(|o| o.checkpoint_refusal()) {
            Some(why)
        } else {
            driver.save_state().err().map(|e| e.to_string())
        };
        if let Some(why) = refusal {
            return Err(QueryError::Bind(format!("checkpoints: {why}")));
        }
        let create = |error| QueryError::Create {
            stream: "checkpoints".to_owned(),
            error,
        };
        let lock = if me == 0 {
            Some(c.prepare(&self.input_files).map_err(create)?)
        } else {
            None
        };
        let names: Vec<String> = (0..driver.input_count())
            .map(|i| driver.input_name(i).unwrap_or_default().to_owned())
            .collect();
        let Some(snapshot) = c.load(driver.name()).map_err(create)? else {
            return Ok(Some(Restored {
                lock,
                from_snapshot: false,
                inputs: vec![None; names.len()],
                outputs: Vec::new(),
                seq: 0,
                executor: Vec::new(),
            }));
        };
        let refuse = |why: String| {
            QueryError::Bind(format!(
                "checkpoints: the snapshot in {} does not fit this query: {why}",
                c.dir().display()
            ))
        };
        if snapshot.workers.len() != workers {
            let n = snapshot.workers.len();
            return Err(refuse(format!(
                "it was taken on {n} worker{} and this run has {workers} part{}: run it on \
                 the cluster (`punctual_cluster::run_query`, or `--workers` with any number), \
                 which starts as many parts as the snapshot has",
                if n == 1 { "" } else { "s" },
                if workers == 1 { "" } else { "s" }
            )));
        }
        let mut part = snapshot.workers.into_iter().nth(me).unwrap_or_default();
        driver
            .restore_state(&part.driver)
            .map_err(|e| refuse(e.to_string()))?;
        let mut inputs = Vec::with_capacity(names.len());
        for name in &names {
            match snapshot.inputs.iter().find(|(n, _)| n == name) {
                Some((_, at)) => inputs.push(at.clone()),
                None => return Err(refuse(format!("it has no input `{name}`"))),
            }
        }
        if let Some(o) = self
            .outputs
            .iter()
            .find(|o| !snapshot.outputs.iter().any(|(n, _)| n == o.name()))
        {
            return Err(refuse(format!("it has no output `{}`", o.name())));
        }
        Ok(Some(Restored {
            lock,
            from_snapshot: true,
            inputs,
            outputs: snapshot.outputs,
            seq: snapshot.seq,
            executor: std::mem::take(&mut part.executor),
        }))
    }
}

/// What a query with checkpoints starts from: the directory's lock, and where each input
/// resumes and each output rewinds to (from the latest snapshot, or the start).
pub(super) struct Restored {
    /// The directory's lock (worker 0's, as one worker of several).
    pub(super) lock: Option<std::fs::File>,
    pub(super) from_snapshot: bool,
    pub(super) inputs: Vec<Option<crate::checkpoint::SourcePosition>>,
    pub(super) outputs: Vec<(String, u64)>,
    pub(super) seq: u64,
    /// What the executor of several workers held between them, this worker's part.
    pub(super) executor: Vec<u8>,
}
