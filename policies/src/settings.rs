//! Advance-time settings: where a stream's CTIs come from and what happens to events that break
//! them. StreamInsight's model, with builders that validate.
//!
//! | setting | what it does | default |
//! |---|---|---|
//! | [`AdvanceTimeGenerationSettings`] | a CTI at `highest start - delay` every N accepted events, or whenever that candidate is at least T past the current CTI; optionally `CTI(+inf)` at end of input | no final CTI |
//! | [`AdvanceTimeImportSettings`] | re-issue every CTI of another stream on this one | — |
//! | [`AdvanceTimePolicy`] | what to do with an event that breaks a CTI: [`Drop`](AdvanceTimePolicy::Drop) or [`Adjust`](AdvanceTimePolicy::Adjust) | `Drop` |
//!
//! ```
//! use punctual_policies::{AdvanceTimeGenerationSettings, AdvanceTimeSettings, AdvanceTimePolicy};
//! use punctual_core::TimeSpan;
//! let settings = AdvanceTimeSettings::builder()
//!     .generation(
//!         AdvanceTimeGenerationSettings::every_events(1000)
//!             .delay(TimeSpan::from_secs(2))
//!             .final_cti(true)
//!             .build()?,
//!     )
//!     .policy(AdvanceTimePolicy::Adjust)
//!     .build()?;
//! assert!(settings.generation().unwrap().final_cti());
//! # Ok::<(), punctual_policies::Error>(())
//! ```

use std::num::NonZeroU64;

use punctual_core::TimeSpan;

use crate::Error;

/// What to do with an event that breaks the stream's current CTI (docs/semantics.md, section 3).
///
/// | item (current application time `a`) | `Drop` | `Adjust` |
/// |---|---|---|
/// | `P(t)`, `t < a` | dropped | dropped (a point cannot overlap `a`); `AdjustPoints`: becomes `P(a)` |
/// | `I(s,e)`, `s < a < e` | dropped | becomes `I(a,e)` |
/// | `I(s,e)`, `e <= a` | dropped | dropped |
/// | `S(s)`, `s < a` | dropped; its end edge is dropped too | becomes `S(a)`; its end edge is rewritten to start `a` |
/// | `E(s,e)`, `e < a` | dropped (the start edge stays open: `dangling_edges`) | end clamped to `a`; if that leaves an empty edge whose start is unreleased, both are removed |
/// | `E(s,e)` whose start edge was dropped | dropped | — |
///
/// Every dropped item is counted and goes to the dead-letter output with reason `late`; every
/// changed item is counted as `adjusted`. Without any policy, a violating event is rejected.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvanceTimePolicy {
    /// Drop violating events.
    #[default]
    Drop,
    /// Move violating lifetimes up to the current CTI where some of the lifetime is left
    /// (StreamInsight's rule: a late point is dropped, as nothing of it is left).
    Adjust,
    /// As [`Adjust`](AdvanceTimePolicy::Adjust), and a late point moves to the current CTI:
    /// `P(t)`, `t < a` becomes `P(a)` (Stream Analytics' adjust; the query language's
    /// default). Counted as `adjusted`, like every event the policy changes.
    AdjustPoints,
}

/// How often generated CTIs are issued.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GenerationFrequency {
    /// After every N accepted points, intervals and start edges.
    EveryEvents(NonZeroU64),
    /// Whenever the candidate (`highest start - delay`) is at least T past the current CTI (and
    /// for the first accepted event).
    EveryDuration(TimeSpan),
}

/// Declarative CTI generation from the events' own times: candidate `CTI(highest start - delay)`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AdvanceTimeGenerationSettings {
    frequency: GenerationFrequency,
    delay: TimeSpan,
    final_cti: bool,
}

/// Builder for [`AdvanceTimeGenerationSettings`]; defaults: delay 0, no final CTI.
#[derive(Clone, Copy, Debug)]
pub struct GenerationBuilder {
    every_events: Option<u64>,
    every_duration: Option<TimeSpan>,
    delay: TimeSpan,
    final_cti: bool,
}

impl AdvanceTimeGenerationSettings {
    /// Starts settings that issue a CTI after every `n` accepted events (`n >= 1`, checked by
    /// `build`).
    pub fn every_events(n: u64) -> GenerationBuilder {
        GenerationBuilder {
            every_events: Some(n),
            every_duration: None,
            delay: TimeSpan::ZERO,
            final_cti: false,
        }
    }

    /// Starts settings that issue a CTI whenever application time can advance by at least `t`
    /// (`t > 0`, checked by `build`).
    pub fn every_duration(t: TimeSpan) -> GenerationBuilder {
        GenerationBuilder {
            every_events: None,
            every_duration: Some(t),
            delay: TimeSpan::ZERO,
            final_cti: false,
        }
    }

    /// How often CTIs are issued.
    pub fn frequency(&self) -> GenerationFrequency {
        self.frequency
    }

    /// How far each CTI stays behind the highest start seen (may be negative).
    pub fn delay(&self) -> TimeSpan {
        self.delay
    }

    /// Whether `CTI(+inf)` is issued when the input ends.
    pub fn final_cti(&self) -> bool {
        self.final_cti
    }
}

impl GenerationBuilder {
    /// Sets the delay: each CTI is `highest start - delay`. A negative delay puts the CTI after
    /// the event, releasing it at once (`-1` tick for strictly increasing start times).
    pub fn delay(mut self, delay: TimeSpan) -> Self {
        self.delay = delay;
        self
    }

    /// Whether to issue `CTI(+inf)` when the input ends, releasing everything still buffered.
    pub fn final_cti(mut self, yes: bool) -> Self {
        self.final_cti = yes;
        self
    }

    /// Validates: the event count must be at least 1, the duration positive.
    pub fn build(self) -> Result<AdvanceTimeGenerationSettings, Error> {
        let frequency = match (self.every_events, self.every_duration) {
            (Some(n), None) => GenerationFrequency::EveryEvents(NonZeroU64::new(n).ok_or(
                Error::InvalidSettings("generation every N events needs N >= 1, not 0".into()),
            )?),
            (None, Some(t)) if t > TimeSpan::ZERO => GenerationFrequency::EveryDuration(t),
            (None, Some(t)) => {
                return Err(Error::InvalidSettings(format!(
                    "generation every duration T needs T > 0, not {} ticks",
                    t.ticks()
                )))
            }
            _ => {
                return Err(Error::InvalidSettings(
                    "generation needs exactly one of every-N-events and every-duration".into(),
                ))
            }
        };
        Ok(AdvanceTimeGenerationSettings {
            frequency,
            delay: self.delay,
            final_cti: self.final_cti,
        })
    }
}

/// Import the CTIs of another input stream of the same query: every CTI that stream's ingress
/// issues is issued on this one at the same moment. This keeps a slow reference stream in step
/// with a fast one.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AdvanceTimeImportSettings {
    stream: String,
}

impl AdvanceTimeImportSettings {
    /// Import from the input stream named `stream`.
    pub fn new(stream: impl Into<String>) -> Self {
        AdvanceTimeImportSettings {
            stream: stream.into(),
        }
    }

    /// The name of the stream whose CTIs are imported.
    pub fn stream(&self) -> &str {
        &self.stream
    }
}

/// A stream's advance-time settings: generation and/or import, and the violation policy.
/// Given when a stream is bound, they replace the adapter factory's declared settings entirely.
#[derive(Clone, PartialEq, Debug)]
pub struct AdvanceTimeSettings {
    generation: Option<AdvanceTimeGenerationSettings>,
    import: Option<AdvanceTimeImportSettings>,
    policy: Option<AdvanceTimePolicy>,
}

/// Builder for [`AdvanceTimeSettings`]; defaults: no generation, no import, policy `Drop`.
#[derive(Clone, Debug)]
pub struct AdvanceTimeSettingsBuilder {
    inner: AdvanceTimeSettings,
}

impl AdvanceTimeSettings {
    /// Starts settings; `build` requires generation, import or both.
    pub fn builder() -> AdvanceTimeSettingsBuilder {
        AdvanceTimeSettingsBuilder {
            inner: AdvanceTimeSettings {
                generation: None,
                import: None,
                policy: Some(AdvanceTimePolicy::Drop),
            },
        }
    }

    /// Settings for a stream whose CTIs all come from its adapter, with `policy` applied to
    /// events that break them (instead of rejecting such events).
    pub fn policy_only(policy: AdvanceTimePolicy) -> Self {
        AdvanceTimeSettings {
            generation: None,
            import: None,
            policy: Some(policy),
        }
    }

    /// Settings that only reject violations: CTIs from the adapter alone, no policy. The same as
    /// binding a stream with no settings at all.
    pub fn none() -> Self {
        AdvanceTimeSettings {
            generation: None,
            import: None,
            policy: None,
        }
    }

    /// StreamInsight's `IncreasingStartTime`: a CTI after every event with no delay, a final CTI,
    /// `Drop`.
    pub fn increasing_start_time() -> Self {
        Self::every_event_with_delay(TimeSpan::ZERO)
    }

    /// StreamInsight's `StrictlyIncreasingStartTime`: a CTI one tick after every event (delay
    /// `-1`), which releases each event at once; a final CTI; `Drop`.
    pub fn strictly_increasing_start_time() -> Self {
        Self::every_event_with_delay(-TimeSpan::TICK)
    }

    /// StreamInsight's `UnorderedStartTime(d)`: a CTI after every event, `d` behind the highest
    /// start seen (a grace period for disorder); a final CTI; `Drop`.
    pub fn unordered_start_time(delay: TimeSpan) -> Self {
        Self::every_event_with_delay(delay)
    }

    fn every_event_with_delay(delay: TimeSpan) -> Self {
        AdvanceTimeSettings {
            generation: Some(AdvanceTimeGenerationSettings {
                frequency: GenerationFrequency::EveryEvents(NonZeroU64::MIN),
                delay,
                final_cti: true,
            }),
            import: None,
            policy: Some(AdvanceTimePolicy::Drop),
        }
    }

    /// The generation settings, if any.
    pub fn generation(&self) -> Option<&AdvanceTimeGenerationSettings> {
        self.generation.as_ref()
    }

    /// The import settings, if any.
    pub fn import(&self) -> Option<&AdvanceTimeImportSettings> {
        self.import.as_ref()
    }

    /// The violation policy; `None` rejects violating events.
    pub fn policy(&self) -> Option<AdvanceTimePolicy> {
        self.policy
    }
}

impl AdvanceTimeSettingsBuilder {
    /// Generate CTIs from the events' times.
    pub fn generation(mut self, g: AdvanceTimeGenerationSettings) -> Self {
        self.inner.generation = Some(g);
        self
    }

    /// Import CTIs from another stream.
    pub fn import(mut self, i: AdvanceTimeImportSettings) -> Self {
        self.inner.import = Some(i);
        self
    }

    /// What to do with violating events (default `Drop`).
    pub fn policy(mut self, p: AdvanceTimePolicy) -> Self {
        self.inner.policy = Some(p);
        self
    }

    /// Reject violating events instead of applying a policy: `enqueue` returns an error for each.
    pub fn reject_violations(mut self) -> Self {
        self.inner.policy = None;
        self
    }

    /// Validates: generation, import or both must be given.
    pub fn build(self) -> Result<AdvanceTimeSettings, Error> {
        if self.inner.generation.is_none() && self.inner.import.is_none() {
            return Err(Error::InvalidSettings(
                "advance-time settings need generation, import or both (for a policy alone use AdvanceTimeSettings::policy_only)".into(),
            ));
        }
        Ok(self.inner)
    }
}

/// The settings an adapter factory declares for the streams it feeds (StreamInsight's
/// `AdapterAdvanceTimeSettings`): generation plus policy. Settings given at binding replace them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AdapterAdvanceTimeSettings {
    /// How CTIs are generated.
    pub generation: AdvanceTimeGenerationSettings,
    /// What to do with violating events.
    pub policy: AdvanceTimePolicy,
}

impl AdapterAdvanceTimeSettings {
    /// Declared settings from generation settings and a policy.
    pub fn new(generation: AdvanceTimeGenerationSettings, policy: AdvanceTimePolicy) -> Self {
        AdapterAdvanceTimeSettings { generation, policy }
    }
}

impl From<AdapterAdvanceTimeSettings> for AdvanceTimeSettings {
    fn from(a: AdapterAdvanceTimeSettings) -> Self {
        AdvanceTimeSettings {
            generation: Some(a.generation),
            import: None,
            policy: Some(a.policy),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_validates() {
        assert!(AdvanceTimeGenerationSettings::every_events(0)
            .build()
            .is_err());
        assert!(
            AdvanceTimeGenerationSettings::every_duration(TimeSpan::ZERO)
                .build()
                .is_err()
        );
        let e = AdvanceTimeSettings::builder().build().unwrap_err();
        assert!(e.to_string().contains("generation, import or both"), "{e}");
        let s = AdvanceTimeSettings::builder()
            .import(AdvanceTimeImportSettings::new("fast"))
            .build()
            .unwrap();
        assert_eq!(s.import().unwrap().stream(), "fast");
        assert_eq!(s.policy(), Some(AdvanceTimePolicy::Drop));
    }

    #[test]
    fn shorthands() {
        let s = AdvanceTimeSettings::strictly_increasing_start_time();
        let g = s.generation().unwrap();
        assert_eq!(g.delay(), TimeSpan::from_ticks(-1));
        assert!(g.final_cti());
        assert_eq!(
            g.frequency(),
            GenerationFrequency::EveryEvents(NonZeroU64::MIN)
        );
        let u = AdvanceTimeSettings::unordered_start_time(TimeSpan::from_ticks(3));
        assert_eq!(u.generation().unwrap().delay().ticks(), 3);
        assert_eq!(u.policy(), Some(AdvanceTimePolicy::Drop));
    }
}
