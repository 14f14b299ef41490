//! A mosquitto broker of a test's own on a free loopback port, stopped when dropped. Needs
//! `mosquitto` on the `PATH` (Debian's `mosquitto` package; `.ci/run` installs it).
//!
//! ```no_run
//! use punctual_adapters::mqtt::testing::Broker;
//! let broker = Broker::start().expect("mosquitto runs");
//! let port = broker.port(); // 127.0.0.1:PORT, anonymous, nothing persisted
//! # let _ = port;
//! ```

use crate::testing::LocalServer;

/// A running mosquitto; see the module doc.
pub struct Broker {
    server: LocalServer,
}

impl Broker {
    /// Starts one on a free loopback port (another port if the one found free is taken before
    /// it binds it), or says why it could not.
    pub fn start() -> Result<Broker, String> {
        let server = LocalServer::start("mosquitto", "apt-get install mosquitto", |port| {
            // A configuration per broker: the tests of a process may run several at once.
            let dir = std::env::temp_dir()
                .join(format!("punctual-mosquitto-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let conf = dir.join("mosquitto.conf");
            let text =
                format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n");
            std::fs::write(&conf, text).map_err(|e| e.to_string())?;
            Ok(vec!["-c".into(), conf.into()])
        })?;
        Ok(Broker { server })
    }

    /// The port it listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.server.port()
    }
}
