//! The headline sample's payloads and CTI settings (`--bin sensors`, `samples/jobs/sensors.toml`):
//! readings of a device's raw value, calibrations valid until the next one, calibrated values.

use punctual::prelude::*;
use serde::{Deserialize, Serialize};

/// A device's raw reading (a point event of the `readings` stream).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The device that read it.
    pub device: String,
    /// The value as read.
    pub raw: f64,
}

/// A device's calibration, valid until the next one (an edge event of `calibration`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The device it calibrates.
    pub device: String,
    /// What a raw value is multiplied by.
    pub factor: f64,
    /// What is added after.
    pub offset: f64,
}

/// A reading calibrated: `raw * factor + offset`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibrated {
    /// The device that read it.
    pub device: String,
    /// The calibrated value.
    pub value: f64,
}

impl Calibrated {
    /// `reading` calibrated by `calibration`: `raw * factor + offset`.
    pub fn of(reading: &Reading, calibration: &Calibration) -> Calibrated {
        Calibrated {
            device: reading.device.clone(),
            value: reading.raw * calibration.factor + calibration.offset,
        }
    }
}

/// The readings' CTIs: one after every 20 readings, 3 s behind the newest, a final one at the
/// end; a reading behind a CTI is dropped.
///
/// ```
/// let settings = punctual_samples::sensors::readings_settings();
/// assert_eq!(settings.policy(), Some(punctual::prelude::AdvanceTimePolicy::Drop));
/// ```
pub fn readings_settings() -> AdvanceTimeSettings {
    let every = AdvanceTimeGenerationSettings::every_events(20)
        .delay(TimeSpan::from_secs(3))
        .final_cti(true)
        .build()
        .expect("valid generation settings");
    AdvanceTimeSettings::builder()
        .generation(every)
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .expect("valid settings")
}

/// CTIs imported from the stream `from` (a reference stream kept in step with it); an event
/// behind a CTI is moved up to it (`Adjust`).
pub fn imported_from(from: &str) -> AdvanceTimeSettings {
    AdvanceTimeSettings::builder()
        .import(AdvanceTimeImportSettings::new(from))
        .policy(AdvanceTimePolicy::Adjust)
        .build()
        .expect("valid settings")
}
