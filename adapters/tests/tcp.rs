//! The TCP line protocol over loopback: a server input fed by clients, a client input, an output.

use std::time::Duration;

mod common;
use common::{events_in, ordered, point, tcp_server_query};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use punctual_adapters::line::{LineFormat, TimeFormat};
use punctual_adapters::{
    CollectOutput, TcpClientConfig, TcpClientInput, TcpListenConfig, TcpListenInput, TcpOutput,
    TcpOutputConfig, TcpServerInput,
};
use punctual_core::{StreamItem, Time};
use punctual_policies::{AdvanceTimePolicy, AdvanceTimeSettings};
use punctual_rows::Row;
use punctual_runtime::{DeadLetterCollector, Partitioned, Query, QueryError};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

const LIMIT: Duration = Duration::from_secs(20);

/// Connects to `addr`, sends `bytes` and closes the connection.
async fn send_and_close(addr: std::net::SocketAddr, bytes: &[u8]) {
    let mut conn = TcpStream::connect(addr).await.expect("connects");
    conn.write_all(bytes).await.expect("writes");
    conn.shutdown().await.expect("closes");
}

/// A server on a free loopback port that sends `text` to the first client and closes: its
/// address.
async fn serve_once(text: &'static str) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.expect("accepts");
        conn.write_all(text.as_bytes()).await.expect("writes");
        conn.shutdown().await.expect("closes");
    });
    addr
}

#[tokio::test]
async fn a_server_input_takes_lines_from_several_clients() {
    tokio::time::timeout(LIMIT, async {
        let (mut query, s, addr) = tcp_server_query("tcp-in", Duration::from_secs(2));
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let running = query.start().expect("starts");
        for (client, lines) in [
            (
                "a",
                "{\"kind\":\"point\",\"start\":1,\"payload\":1}\n\nnot json\n",
            ),
            (
                "b",
                "{\"kind\":\"point\",\"start\":2,\"payload\":2}\n{\"kind\":\"eof\"}\n",
            ),
        ] {
            let mut conn = TcpStream::connect(addr).await.expect("connects");
            conn.write_all(lines.as_bytes()).await.expect("writes");
            conn.shutdown().await.expect(client);
        }
        // The CTI only after both points are in, from a third connection.
        tokio::time::sleep(Duration::from_millis(200)).await;
        send_and_close(addr, b"{\"kind\":\"cti\",\"time\":10}\n").await;
        while out.len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let report = running.stop().await.expect("stops");
        let mut items = out.items();
        items.sort_by_key(|i| format!("{i:?}"));
        assert!(
            items.contains(&StreamItem::point(t(1), 1))
                && items.contains(&StreamItem::point(t(2), 2))
        );
        assert_eq!(out.items().last(), Some(&StreamItem::Cti(t(10))));
        let c = report.counters("in").expect("stream");
        // A blank line and an `eof` line carry no item: `skipped`.
        assert_eq!((c.malformed, c.skipped), (1, 2), "{c:?}");
    })
    .await
    .expect("finishes in time");
}

#[tokio::test]
async fn a_client_input_reads_until_the_server_closes() {
    tokio::time::timeout(LIMIT, async {
        let addr = serve_once(
            "{\"kind\":\"point\",\"start\":5,\"payload\":50}\n{\"kind\":\"point\",\"start\":6,\"payload\":60}\n",
        )
        .await;
        let mut query = Query::new("tcp-client");
        let s = query
            .create_stream::<_, i64, _, _>(
                ordered("in"),
                &TcpClientInput,
                &TcpClientConfig::new(addr.to_string()),
            )
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        query.start().expect("starts").wait().await.expect("runs");
        assert_eq!(
            out.items(),
            vec![
                StreamItem::Cti(t(5)),
                StreamItem::point(t(5), 50),
                StreamItem::Cti(t(6)),
                StreamItem::point(t(6), 60),
                StreamItem::Cti(Time::INF),
            ]
        );
    })
    .await
    .expect("finishes in time");
}

/// A client input of flat records: each line a JSON object timed by one of its fields, read
/// for the fields asked for; in arrival order (the stream unordered), each event goes on as it
/// comes, and a record without its time is malformed, with the peer and line number.
#[tokio::test]
async fn a_client_input_reads_flat_records_in_arrival_order() {
    tokio::time::timeout(LIMIT, async {
        let addr = serve_once(concat!(
            "{\"ts\":3000,\"device\":\"a\",\"v\":1}\n",
            "{\"ts\":1000,\"device\":\"b\",\"v\":2}\n",
            "{\"device\":\"c\",\"v\":3}\n",
            "{\"v\":4,\"ts\":2000}\n",
        ))
        .await;
        let mut query = Query::new("tcp-flat");
        let lines = LineFormat::flat("ts", TimeFormat::EpochMs).fields(["device", "ts"]);
        let s = query
            .create_stream::<_, Row, _, _>(
                point("in")
                    .settings(AdvanceTimeSettings::policy_only(AdvanceTimePolicy::Drop))
                    .unordered(),
                &TcpClientInput,
                &TcpClientConfig::new(addr.to_string()).lines(lines),
            )
            .expect("binds");
        let letters = DeadLetterCollector::new();
        query.bind_dead_letters(&s, letters.clone()).expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let report = query.start().expect("starts").wait().await.expect("runs");
        let ms = |m: i64| Time::from_ticks(m * 10_000);
        let row = |ts: i64, device: Option<&str>| match device {
            Some(d) => Row::new().with("ts", ts).with("device", d),
            None => Row::new().with("ts", ts),
        };
        // In the order they came (no CTI: the settings generate none), each with the fields
        // asked for that it has, in the line's order (`v` left out).
        assert_eq!(
            out.items(),
            vec![
                StreamItem::point(ms(3000), row(3000, Some("a"))),
                StreamItem::point(ms(1000), row(1000, Some("b"))),
                StreamItem::point(ms(2000), row(2000, None)),
            ]
        );
        let c = report.counters("in").expect("stream");
        assert_eq!(c.malformed, 1, "{c:?}");
        let reasons: Vec<String> = letters.reasons();
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(
            reasons[0].contains(&format!("{addr}:3"))
                && reasons[0].contains("no field `ts` (the event time)"),
            "{reasons:?}"
        );
    })
    .await
    .expect("finishes in time");
}

#[tokio::test]
async fn an_output_writes_json_lines_to_a_server() {
    tokio::time::timeout(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("addr");
        let reader = tokio::spawn(async move {
            let (conn, _) = listener.accept().await.expect("accepts");
            let mut lines = BufReader::new(conn).lines();
            let mut got = Vec::new();
            while let Ok(Some(l)) = lines.next_line().await {
                got.push(l);
            }
            got
        });
        let items = vec![StreamItem::point(t(1), 7i64), StreamItem::Cti(Time::INF)];
        let config = TcpOutputConfig {
            connect: addr.to_string(),
        };
        common::write_items(&items, &TcpOutput, &config).await;
        assert_eq!(
            reader.await.expect("reader"),
            vec![
                r#"{"kind":"point","start":1,"payload":7}"#.to_owned(),
                r#"{"kind":"cti","time":"inf"}"#.to_owned()
            ]
        );
    })
    .await
    .expect("finishes in time");
}

/// Bytes that are not UTF-8 on a connection are one malformed line (counted, dead-lettered
/// with the peer and line number); the connection and its later lines go on.
#[tokio::test]
async fn a_line_that_is_not_utf8_is_malformed_and_the_connection_goes_on() {
    tokio::time::timeout(LIMIT, async {
        let (mut query, s, addr) = tcp_server_query("tcp-bytes", Duration::from_secs(2));
        let letters = punctual_runtime::DeadLetterCollector::new();
        query.bind_dead_letters(&s, letters.clone()).expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let running = query.start().expect("starts");
        send_and_close(addr, b"{\"kind\":\"point\",\"start\":1,\"payload\":1}\n\xff\xfe\n{\"kind\":\"point\",\"start\":2,\"payload\":2}\n{\"kind\":\"cti\",\"time\":5}\n").await;
        while out.len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let report = running.stop().await.expect("stops");
        let c = report.counters("in").expect("stream");
        assert_eq!((c.events_in, c.malformed), (2, 1));
        let letters = letters.letters();
        assert!(letters[0].reason.to_string().contains(":2"), "{:?}", letters[0].reason);
    })
    .await
    .expect("finishes in time");
}

/// Over its connection limit a server input closes a new client at once; at the stop, its
/// readers end and close their connections (nothing outlives the query).
#[tokio::test]
async fn a_server_input_limits_its_connections_and_closes_them_at_stop() {
    tokio::time::timeout(LIMIT, async {
        let server = TcpServerInput::bind("127.0.0.1:0")
            .expect("binds")
            .max_connections(1);
        let addr = server.local_addr();
        let mut query = Query::new("tcp-limit").stop_grace(Duration::from_secs(2));
        let s = query
            .create_stream::<_, i64, _, _>(point("in"), &server, &())
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let running = query.start().expect("starts");
        let mut first = TcpStream::connect(addr).await.expect("connects");
        first
            .write_all(
                b"{\"kind\":\"point\",\"start\":1,\"payload\":1}\n{\"kind\":\"cti\",\"time\":5}\n",
            )
            .await
            .expect("writes");
        while out.len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut second = TcpStream::connect(addr).await.expect("connects");
        let mut buf = [0u8; 8];
        let n = tokio::io::AsyncReadExt::read(&mut second, &mut buf)
            .await
            .unwrap_or(0);
        assert_eq!(n, 0, "over the limit: closed at once");
        // Counted and dead-lettered: what it would have sent is not lost without a word.
        while running.counters("in").map_or(0, |c| c.malformed) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        running.stop().await.expect("stops");
        let n = tokio::io::AsyncReadExt::read(&mut first, &mut buf)
            .await
            .unwrap_or(0);
        assert_eq!(n, 0, "the reader closed its connection at the stop");
    })
    .await
    .expect("finishes in time");
}

/// Connects to `addr`, retrying while the server is not listening yet (a [`TcpListenInput`]
/// binds when its adapter starts).
async fn connect_when_up(addr: &str) -> TcpStream {
    loop {
        match TcpStream::connect(addr).await {
            Ok(conn) => return conn,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// A source that listens on two addresses is two partitions, `in#0` and `in#1`, each with
/// its own counters and CTIs, listening once the query starts; the stream is their union. An
/// address that is taken fails the query with the address.
#[tokio::test]
async fn a_source_listening_on_several_addresses_is_a_partition_each() {
    tokio::time::timeout(LIMIT, async {
        let free = || {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
            l.local_addr().expect("addr").to_string()
        };
        let addrs = [free(), free()];
        let ports: Vec<TcpListenConfig> = addrs.iter().map(TcpListenConfig::new).collect();
        let mut query = Query::new("two ports").stop_grace(Duration::from_secs(2));
        let s = query
            .create_stream::<_, i64, _, _>(
                point("in"),
                &Partitioned(TcpListenInput),
                &ports,
            )
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let running = query.start().expect("starts");
        for (i, addr) in addrs.iter().enumerate() {
            let mut conn = connect_when_up(addr).await;
            let lines = format!(
                "{{\"kind\":\"point\",\"start\":{i},\"payload\":{i}}}\n{{\"kind\":\"cti\",\"time\":10}}\n"
            );
            conn.write_all(lines.as_bytes()).await.expect("writes");
            conn.shutdown().await.expect("closes");
        }
        // Both points, then the CTI both partitions have passed.
        while out.len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let report = running.stop().await.expect("stops");
        assert_eq!(events_in(&report), [("in#0", 1), ("in#1", 1)]);
        assert_eq!(
            out.items()[..3],
            [
                StreamItem::point(t(0), 0),
                StreamItem::point(t(1), 1),
                StreamItem::Cti(t(10))
            ]
        );

        // A taken address: the query fails and says which.
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = taken.local_addr().expect("addr").to_string();
        let mut query = Query::new("taken");
        let s = query
            .create_stream::<_, i64, _, _>(
                point("in"),
                &TcpListenInput,
                &TcpListenConfig::new(&addr),
            )
            .expect("binds");
        query
            .bind_output(&s, &CollectOutput::new(), &())
            .expect("binds");
        let failed = query.start().expect("starts").wait().await;
        let why = match failed {
            Err(f) if matches!(f.error, QueryError::Adapter { .. }) => f.to_string(),
            Err(f) => panic!("another failure: {f}"),
            Ok(_) => panic!("a taken address fails the query"),
        };
        assert!(why.contains(&addr), "{why}");
    })
    .await
    .expect("finishes in time");
}
