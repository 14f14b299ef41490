//! The Prometheus exporter: a query's metrics rendered and served over HTTP (feature
//! `prometheus`).

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use punctual_adapters::prometheus::PrometheusRecorder;
use punctual_adapters::{CollectOutput, MemoryInput};
use punctual_core::{StreamItem, Time};
use punctual_runtime::Query;

mod common;
use common::ordered;

#[test]
fn a_querys_metrics_are_served_in_the_prometheus_format() {
    let recorder = PrometheusRecorder::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let items: Vec<StreamItem<i64>> = (1..=3)
        .map(|x| StreamItem::point(Time::from_ticks(x), x))
        .collect();
    let mut query = Query::new("prom");
    let s = query
        .create_stream(ordered("readings"), &MemoryInput, &items)
        .expect("binds");
    query
        .bind_output(&s, &CollectOutput::new(), &())
        .expect("binds");
    let running = metrics::with_local_recorder(&recorder, || {
        let _guard = rt.enter();
        query.start().expect("starts")
    });
    rt.block_on(running.wait()).expect("runs");
    let text = recorder.render();
    assert!(text.contains("# TYPE punctual_events_in counter"), "{text}");
    assert!(
        text.contains("punctual_events_in{stream=\"readings\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("punctual_cti_ticks{stream=\"readings\"} 3"),
        "{text}"
    );
    let body = rt.block_on(async {
        let (addr, _server) = recorder.serve("127.0.0.1:0").await.expect("serves");
        scrape(addr, "GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n").await
    });
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(
        body.contains("punctual_events_released{stream=\"readings\"} 3"),
        "{body}"
    );
}

/// Sends `request` to the exporter at `addr`: its whole response.
async fn scrape(addr: std::net::SocketAddr, request: &str) -> String {
    let mut conn = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    conn.write_all(request.as_bytes()).await.expect("writes");
    let mut response = String::new();
    conn.read_to_string(&mut response).await.expect("reads");
    response
}

/// A label value with a line feed, a quote and a backslash stays one line of the format.
#[test]
fn label_values_are_escaped() {
    let recorder = PrometheusRecorder::new();
    metrics::with_local_recorder(&recorder, || {
        metrics::counter!("punctual_events_in", "stream" => "a\nb\"c\\d").absolute(1);
    });
    let text = recorder.render();
    assert!(
        text.contains("punctual_events_in{stream=\"a\\nb\\\"c\\\\d\"} 1\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "{text}");
}

/// A client that connects and sends nothing is closed after the scrape timeout; the exporter
/// serves the next scrape as usual.
#[tokio::test(start_paused = true)]
async fn an_idle_scraper_is_closed_and_the_exporter_goes_on() {
    let recorder = PrometheusRecorder::new();
    let (addr, _server) = recorder.serve("127.0.0.1:0").await.expect("serves");
    let mut idle = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let mut rest = Vec::new();
    // (With the clock paused, the timeout passes as soon as everything waits.)
    let n = idle
        .read_to_end(&mut rest)
        .await
        .expect("closed by the server");
    assert_eq!(n, 0, "no response without a request");
    let response = scrape(addr, "GET /metrics HTTP/1.1\r\n\r\n").await;
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
}

/// The exporter serves at most `MAX_SCRAPES` connections at once: one more is closed at once.
#[tokio::test]
async fn the_exporter_serves_a_bounded_number_of_scrapes() {
    use punctual_adapters::prometheus::MAX_SCRAPES;
    let recorder = PrometheusRecorder::new();
    let (addr, _server) = recorder.serve("127.0.0.1:0").await.expect("serves");
    let mut idle = Vec::new();
    for _ in 0..MAX_SCRAPES {
        idle.push(
            tokio::net::TcpStream::connect(addr)
                .await
                .expect("connects"),
        );
    }
    // (Each waits for its request, up to the scrape timeout, holding its slot.)
    tokio::task::yield_now().await;
    let mut over = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let mut rest = Vec::new();
    let n = tokio::time::timeout(
        punctual_adapters::prometheus::SCRAPE_TIMEOUT / 2,
        over.read_to_end(&mut rest),
    )
    .await
    .expect("closed before the idle ones time out")
    .unwrap_or(0);
    assert_eq!(n, 0);
    drop(idle);
}
