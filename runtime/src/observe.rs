//! Observability: metrics through the `metrics` facade and logs through `tracing`. The library
//! never installs a recorder or a subscriber; the application picks them (a Prometheus exporter,
//! `tracing-subscriber`, ...).
//!
//! Metrics, per input stream (label `stream`), updated after every call into the query (an
//! enqueue, a clock reading, the end of an input):
//!
//! | name | kind | what |
//! |---|---|---|
//! | `punctual_events_in` | counter | events enqueued |
//! | `punctual_events_released` | counter | events released downstream |
//! | `punctual_events_dropped` | counter | dropped by a policy or watermark strategy |
//! | `punctual_events_adjusted` | counter | adjusted |
//! | `punctual_events_rejected` | counter | rejected |
//! | `punctual_ctis_rejected` | counter | CTIs rejected (at `-inf`) |
//! | `punctual_events_filtered` | counter | kept out by a filter that runs inside the ingress (a `filter` right after the input) |
//! | `punctual_events_buffered` | gauge | waiting in the reorder buffer for a CTI |
//! | `punctual_cti_ticks` | gauge | the stream's CTI (ticks since the epoch) |
//! | `punctual_cti_lag_ticks` | gauge | highest start minus the CTI: how far the CTI lags the events |
//! | `punctual_cti_clock_lag_ticks` | gauge | the clock minus the CTI, at each clock reading (streams with a watermark strategy) |
//!
//! Per operator (labels `query` and `node`, the operator's name or `Stream::named` label),
//! updated after every call into the query:
//!
//! | name | kind | what |
//! |---|---|---|
//! | `punctual_operator_events_out` | counter | events the operator emitted |
//! | `punctual_operator_state` | gauge | events or groups it holds |
//! | `punctual_operator_cti_ticks` | gauge | its output CTI |
//! | `punctual_operator_dropped` | counter | events it dropped (over a window's limit of windows per event); each is also logged (`warn`) with the reason |
//!
//! Logs: a `warn` when an input has produced many events and still no CTI (10,000, then every
//! tenfold), and, every 10 s of a running query, one `debug` line per node of `explain`
//! (target `punctual::explain`).

use metrics::{Counter, Gauge};
use punctual_policies::IngressCounters;

use punctual_core::Time;

/// One stream's metric handles, registered once.
pub(crate) struct StreamMetrics {
    events_in: Counter,
    released: Counter,
    dropped: Counter,
    adjusted: Counter,
    rejected: Counter,
    rejected_ctis: Counter,
    filtered: Counter,
    buffered: Gauge,
    cti: Gauge,
    lag: Gauge,
    clock_lag: Gauge,
    warned_at: u64,
    name: String,
}

impl std::fmt::Debug for StreamMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamMetrics")
            .field("stream", &self.name)
            .finish()
    }
}

impl StreamMetrics {
    pub(crate) fn new(stream: &str) -> Self {
        let label = [("stream", stream.to_owned())];
        StreamMetrics {
            events_in: metrics::counter!("punctual_events_in", &label),
            released: metrics::counter!("punctual_events_released", &label),
            dropped: metrics::counter!("punctual_events_dropped", &label),
            adjusted: metrics::counter!("punctual_events_adjusted", &label),
            rejected: metrics::counter!("punctual_events_rejected", &label),
            rejected_ctis: metrics::counter!("punctual_ctis_rejected", &label),
            filtered: metrics::counter!("punctual_events_filtered", &label),
            buffered: metrics::gauge!("punctual_events_buffered", &label),
            cti: metrics::gauge!("punctual_cti_ticks", &label),
            lag: metrics::gauge!("punctual_cti_lag_ticks", &label),
            clock_lag: metrics::gauge!("punctual_cti_clock_lag_ticks", &label),
            warned_at: 0,
            name: stream.to_owned(),
        }
    }

    /// A clock reading: how far the CTI lags behind the clock.
    pub(crate) fn record_clock(&mut self, now: Time, cti: Time) {
        if now.is_finite() && cti.is_finite() {
            self.clock_lag.set((now - cti).ticks() as f64);
        }
    }

    pub(crate) fn record(&mut self, c: &IngressCounters) {
        self.events_in.absolute(c.events_in);
        self.released.absolute(c.released);
        self.dropped.absolute(c.dropped);
        self.adjusted.absolute(c.adjusted);
        self.rejected.absolute(c.rejected);
        self.rejected_ctis.absolute(c.rejected_ctis);
        self.filtered.absolute(c.filtered);
        self.buffered.set(c.buffered as f64);
        if c.cti.is_finite() {
            self.cti.set(c.cti.ticks() as f64);
            if c.max_start.is_finite() {
                self.lag.set((c.max_start - c.cti).ticks() as f64);
            }
        }
        let threshold = if self.warned_at == 0 {
            10_000
        } else {
            self.warned_at * 10
        };
        if c.cti == Time::NEG_INF && c.events_in >= threshold {
            self.warned_at = threshold;
            tracing::warn!(
                stream = %self.name,
                events = c.events_in,
                buffered = c.buffered,
                "input `{}` has produced {} events and no CTI: nothing downstream can be released; \
                 give it advance-time settings, a watermark strategy, or import another stream's CTIs",
                self.name,
                c.events_in
            );
        }
    }
}

/// One operator's metric handles: events out, state, CTI, dropped, and a window with allowed
/// lateness's events on time and late.
type OperatorHandles = (Counter, Gauge, Gauge, Counter, [Counter; 2]);

/// The query's operators' metric handles, registered on first sight of each node.
#[derive(Default)]
pub(crate) struct OperatorMetrics {
    nodes: Vec<Option<OperatorHandles>>,
}

impl OperatorMetrics {
    /// Records every operator's figures; returns the events or groups they hold in all.
    pub(crate) fn record(&mut self, query: &str, driver: &punctual_engine::Driver) -> usize {
        let mut held = 0usize;
        driver.for_each_operator(|n| {
            held = held.saturating_add(n.state);
            if self.nodes.len() <= n.node {
                self.nodes.resize_with(n.node + 1, || None);
            }
            let (out, state, cti, dropped, [on_time, late]) = self.nodes[n.node]
                .get_or_insert_with(|| {
                    let name = match n.label {
                        Some(l) => format!("{} {l}", n.operator),
                        None => format!("{} {}", n.operator, n.node),
                    };
                    let labels = [("query", query.to_owned()), ("node", name)];
                    (
                        metrics::counter!("punctual_operator_events_out", &labels),
                        metrics::gauge!("punctual_operator_state", &labels),
                        metrics::gauge!("punctual_operator_cti_ticks", &labels),
                        metrics::counter!("punctual_operator_dropped", &labels),
                        [
                            metrics::counter!("punctual_operator_on_time", &labels),
                            metrics::counter!("punctual_operator_late_accepted", &labels),
                        ],
                    )
                });
            out.absolute(n.events_out);
            dropped.absolute(n.dropped);
            on_time.absolute(n.lateness.on_time);
            late.absolute(n.lateness.late);
            state.set(n.state as f64);
            if n.cti.is_finite() {
                cti.set(n.cti.ticks() as f64);
            }
        });
        held
    }
}
