//! The conformance cases through snapshots: a case run with the query's state saved after
//! every arrival and restored into a query built anew, which must give what the run without
//! snapshots gives (the same items, CTIs and counters).

use punctual_core::{Batch, StreamItem};
use punctual_rows::Row;

use super::{build, feed, unended, Built, Case, CaseError};

/// What a run through snapshots gave: the output items, each input's counters, and how many
/// times the query was saved and restored.
#[derive(Debug)]
pub struct RestoredRun {
    /// What the output adapter received, in order.
    pub output: Vec<StreamItem<Row>>,
    /// Each input stream's counters, in declaration order.
    pub counters: Vec<punctual_policies::IngressCounters>,
    /// Dead letters per input, in declaration order (how many).
    pub dead_letters: Vec<usize>,
    /// Snapshots taken and restored.
    pub restores: usize,
}

/// Runs `case` as [`run`](super::run) does, saving the query's state after every arrival and
/// going on in a query built anew and restored from it. A query that cannot be saved (an
/// operator or input whose state a snapshot does not hold yet) is
/// [`CaseError::Unsupported`], with the reason.
pub fn run_restoring(case: &Case) -> Result<RestoredRun, CaseError> {
    let mut built = build(case)?;
    let mut output = Vec::new();
    let mut letters = vec![0usize; case.streams.len()];
    let mut restores = 0;
    let take = |built: &mut Built, output: &mut Vec<StreamItem<Row>>| {
        let mut out = Batch::new();
        built.driver.take_output(&built.output, &mut out);
        out.drain_items(|item| output.push(item));
    };
    for arrival in &case.arrivals {
        feed(&mut built.driver, &built.inputs, arrival);
        take(&mut built, &mut output);
        let bytes = built
            .driver
            .save_state()
            .map_err(|e| CaseError::Unsupported(format!("snapshot: {e}")))?;
        for (n, c) in letters.iter_mut().zip(&built.letters) {
            *n += c.letters().len();
        }
        built = build(case)?;
        built
            .driver
            .restore_state(&bytes)
            .map_err(|e| CaseError::Config(format!("restore: {e}")))?;
        restores += 1;
    }
    for i in unended(case) {
        built.driver.finish(built.inputs[i].index());
    }
    built.driver.close();
    take(&mut built, &mut output);
    for (n, c) in letters.iter_mut().zip(&built.letters) {
        *n += c.letters().len();
    }
    let counters = built
        .inputs
        .iter()
        .map(|id| built.driver.counters(id.index()).unwrap_or_default())
        .collect();
    Ok(RestoredRun {
        output,
        counters,
        dead_letters: letters,
        restores,
    })
}
