//! A server process of a test's own (a message broker: nats-server, mosquitto) on a free
//! loopback port, stopped when dropped. What the brokers' `testing` modules start theirs with.

use std::ffi::OsString;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running server process listening on a loopback port; killed when dropped.
pub struct LocalServer {
    child: Child,
    port: u16,
}

impl LocalServer {
    /// Starts `program` with the arguments `args` gives for a port found free, and waits until
    /// it listens there. A port found free may be taken by another test's server before this
    /// one binds it: a server that exits at start, or that someone else answers for, is
    /// started again on another port, ten times at most. `install` says how to get `program`
    /// when it cannot be run.
    pub fn start(
        program: &str,
        install: &str,
        mut args: impl FnMut(u16) -> Result<Vec<OsString>, String>,
    ) -> Result<LocalServer, String> {
        for _ in 0..10 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("no free port: {e}"))?
                .port();
            let child = Command::new(program)
                .args(args(port)?)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{program} did not start ({install}): {e}"))?;
            if let Some(server) = LocalServer::listening(child, port) {
                return Ok(server);
            }
        }
        Err(format!(
            "{program} did not start on a free port in ten tries"
        ))
    }

    /// `child` once it listens on `port` and is still running a moment later (the listener is
    /// its own), or `None` (stopped) when it exits or does not listen within 5 s.
    fn listening(mut child: Child, port: u16) -> Option<LocalServer> {
        for _ in 0..100 {
            if child.try_wait().ok().flatten().is_some() {
                return None; // the port was taken: another one
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                std::thread::sleep(Duration::from_millis(100));
                if child.try_wait().ok().flatten().is_none() {
                    return Some(LocalServer { child, port });
                }
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    /// The port it listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the process and waits for it (again: nothing).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop();
    }
}
