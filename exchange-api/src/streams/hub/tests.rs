//! The hub's fan-out and its time units.

use super::*;
use weiport_exchange::market::tests_support::eth_usdt;

fn connection(buffer: usize) -> (Arc<Connection>, mpsc::Receiver<Arc<Frame>>) {
    Connection::new(buffer, false, false)
}

#[tokio::test]
async fn a_reader_that_never_reads_is_dropped_and_the_others_keep_every_event_in_order() {
    let (hub, _sink) = StreamHub::new(Arc::new(Catalog::new(vec![eth_usdt()])), None);
    let (stalled, _never_read) = connection(4);
    let (reader, mut frames) = connection(64);
    hub.subscribe(1, &stalled, "ethusdt@trade");
    hub.subscribe(2, &reader, "ethusdt@trade");
    for t in 0..10 {
        hub.publish("ethusdt@trade", &json!({ "t": t }), 0);
    }
    // Told to close when the fifth frame found its buffer full, and gone from the stream.
    tokio::time::timeout(Duration::from_secs(1), stalled.too_slow.notified())
        .await
        .expect("the stalled reader is told to close");
    let left = hub.subscribers.lock().unwrap()["ethusdt@trade"]
        .keys()
        .copied()
        .collect::<Vec<_>>();
    assert_eq!(left, [2]);
    for t in 0..10 {
        let frame = frames.recv().await.unwrap();
        assert_eq!(&*frame.raw, json!({ "t": t }).to_string());
        assert_eq!(
            &*frame.combined,
            format!("{{\"stream\":\"ethusdt@trade\",\"data\":{{\"t\":{t}}}}}")
        );
    }
}

#[test]
fn microseconds_scale_every_time_field_and_keep_the_event_times_precision() {
    let event_us = 1_700_000_000_123_456;
    let kline = json!({ "e": "kline", "E": 1_700_000_000_123u64, "t": 7, "k": { "t": 1_000, "T": 1_999, "n": 5 } });
    let scaled = in_microseconds(&kline, event_us);
    assert_eq!(scaled["E"], event_us);
    assert_eq!(scaled["t"], 7, "a trade id is no time");
    assert_eq!(
        (&scaled["k"]["t"], &scaled["k"]["T"]),
        (&json!(1_000_000), &json!(1_999_000))
    );
    assert_eq!(scaled["k"]["n"], 5);

    let report = json!({ "e": "executionReport", "E": 1, "T": 2, "O": 3, "W": 4, "t": 9, "i": 10 });
    let scaled = in_microseconds(&report, 1_500);
    assert_eq!(
        scaled,
        json!({ "e": "executionReport", "E": 1_500, "T": 2_000, "O": 3_000, "W": 4_000, "t": 9, "i": 10 })
    );

    let position = json!({ "e": "outboundAccountPosition", "E": 1, "u": 2, "B": [] });
    assert_eq!(in_microseconds(&position, 1_000)["u"], 2_000);
    let minis = json!([{ "e": "24hrMiniTicker", "E": 1, "s": "ETHUSDT" }, { "e": "24hrMiniTicker", "E": 1, "s": "BTCUSDT" }]);
    let scaled = in_microseconds(&minis, 1_234);
    assert!(scaled.as_array().unwrap().iter().all(|m| m["E"] == 1_234));
    // Depth diffs carry update ids in `U`/`u`, never scaled.
    let diff = json!({ "e": "depthUpdate", "E": 1, "U": 5, "u": 6 });
    assert_eq!(
        in_microseconds(&diff, 1_000),
        json!({ "e": "depthUpdate", "E": 1_000, "U": 5, "u": 6 })
    );
}
