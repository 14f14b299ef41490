//! Killing a command at random moments (`SIGKILL`), for the tests of checkpoints.

use std::process::Child;
use std::time::Duration;

/// Starts the command with `start` and kills it at a moment within `share` (a fixed sequence
/// from `seed`, xorshift), up to `times` kills and `times * 4` starts; returns how many runs
/// were killed (a run may end before its moment).
pub fn at_random(
    times: usize,
    share: Duration,
    mut seed: u64,
    mut start: impl FnMut() -> Child,
) -> usize {
    let mut kills = 0;
    let mut attempts = 0;
    while kills < times && attempts < times * 4 {
        attempts += 1;
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = Duration::from_micros(seed % (share.as_micros() as u64).max(1));
        let mut child = start();
        std::thread::sleep(at);
        if child.try_wait().expect("waits").is_none() {
            child.kill().expect("killed");
            kills += 1;
        }
        child.wait().expect("ends");
    }
    kills
}
