//! A nats-server of a test's own: started with JetStream on a free loopback port, stopped
//! (and its store removed) when dropped. Needs `nats-server` on the `PATH` (Debian's
//! `nats-server` package; `.ci/run` installs it).
//!
//! ```no_run
//! # async fn demo() -> Result<(), String> {
//! use punctual_adapters::nats::testing::Server;
//! let server = Server::start()?;
//! server.stream("READINGS", 20_000, &[]).await?; // keeps the last 20,000 messages
//! let url = server.url(); // nats://127.0.0.1:PORT
//! # let _ = url; Ok(()) }
//! ```

use crate::testing::LocalServer;

/// A running nats-server with JetStream; see the module doc.
pub struct Server {
    server: LocalServer,
    dir: std::path::PathBuf,
}

impl Server {
    /// Starts one on a free loopback port (another port if the one found free is taken before
    /// the server binds it), or says why it could not.
    pub fn start() -> Result<Server, String> {
        // A store of its own, whatever port another server of this process tried.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("punctual-nats-server-{}-{n}", std::process::id()));
        let server = LocalServer::start("nats-server", "apt-get install nats-server", |port| {
            let _ = std::fs::remove_dir_all(&dir);
            let args = ["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"];
            let mut args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            args.push(dir.clone().into());
            Ok(args)
        })?;
        Ok(Server { server, dir })
    }

    /// Its URL, `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.server.port())
    }

    /// A JetStream context on it.
    pub async fn jetstream(&self) -> Result<async_nats::jetstream::Context, String> {
        let client = async_nats::connect(self.url())
            .await
            .map_err(|e| e.to_string())?;
        Ok(async_nats::jetstream::new(client))
    }

    /// Makes a stream `name` on the subject of the same name in lower case, keeping at most
    /// `max` messages (0: no limit), with `lines` published to it in order.
    pub async fn stream(&self, name: &str, max: i64, lines: &[String]) -> Result<(), String> {
        let js = self.jetstream().await?;
        js.create_stream(async_nats::jetstream::stream::Config {
            name: name.to_owned(),
            subjects: vec![name.to_lowercase()],
            max_messages: if max > 0 { max } else { -1 },
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
        let mut acks = Vec::with_capacity(lines.len());
        for line in lines {
            let ack = js
                .publish(name.to_lowercase(), line.clone().into())
                .await
                .map_err(|e| e.to_string())?;
            acks.push(ack);
        }
        for ack in acks {
            ack.await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The process first, then its store.
        self.server.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
