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
