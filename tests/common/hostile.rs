//! What hostile clients send: values no well-behaved client would.

/// Values a hostile client sends, already as they travel in a URL.
pub fn hostile_values() -> Vec<String> {
    let mut values: Vec<String> = [
        "%C3%A9",
        "%E2%82%AC1",
        "1%F0%9F%92%A9",
        "99999999999999999999999999999999",
        "18446744073709551616",
        "4294967296",
        "-1",
        "-0.5",
        "",
        "1e3",
        "0x10",
        "NaN",
        "%00",
        "%ZZ",
        "%5B",
        "%5B%22ETHUSDT%22%5D",
        "%5B%5D",
        "true",
        "%20",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    values.push("9".repeat(4096));
    values.push("%C3%A9".repeat(700));
    values
}

/// Sends `GET target` on `connection` and asserts Etherscan's answer shape:
/// never a 5xx; a refusal is `NOTOK` with its reason in `result`; an empty
/// answer (`status` "0", 200) says why in `message`.
pub async fn assert_etherscan_shape(
    connection: &mut crate::common::raw_http::Connection,
    target: &str,
) {
    let what = &target[..target.len().min(160)];
    let answer = connection
        .request("GET", target, &[], b"")
        .await
        .unwrap_or_else(|| panic!("{what}: connection dropped"));
    assert!(answer.status < 500, "{what}: {answer:?}");
    let body = answer.json();
    if answer.status != 200 || body["message"] == "NOTOK" {
        assert_eq!(body["message"], "NOTOK", "{what}: {body}");
        assert!(body["result"].is_string(), "{what}: {body}");
    } else if body["status"] == "0" {
        assert!(body["message"].is_string(), "{what}: {body}");
    }
}
