//! Helpers shared by the sample programs: the benchmark programs' command line and exit codes,
//! and the shared workload's time unit.

use std::process::ExitCode;

pub mod sensors;

use punctual::prelude::Time;

/// The value after `name` on the command line, parsed, or `default` when `name` is absent.
///
/// ```
/// let args: Vec<String> = ["prog", "--reps", "3"].map(String::from).to_vec();
/// assert_eq!(punctual_samples::arg(&args, "--reps", 5), Ok(3));
/// assert_eq!(punctual_samples::arg(&args, "--cti", 1000), Ok(1000));
/// assert!(punctual_samples::arg::<u32>(&["prog".into(), "--reps".into()], "--reps", 5).is_err());
/// ```
pub fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} needs a value")),
    }
}

/// A benchmark's exit code: 0 when it ran and its checksums matched, 1 when a checksum did not
/// match, 2 (with the message on standard error) when it could not run.
pub fn exit_code(outcome: Result<bool, String>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// A time of the shared workload (milliseconds) as a [`Time`] (100 ns ticks).
///
/// ```
/// assert_eq!(punctual_samples::ms(2).ticks(), 20_000);
/// ```
pub fn ms(ms: i64) -> Time {
    Time::from_ticks(ms * 10_000)
}
