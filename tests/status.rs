//! `/status` on the admin listener: each part's state and the last hour's
//! charts, rendered by the server alone and photographed by headless
//! Chromium (`WEIPORT_STATUS_SCREENSHOT=docs/status.png` keeps the picture).

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Anvil, Weiport, history_env, order};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_each_part_and_the_last_hours_charts() {
    let anvil = Anvil::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &history_env(&anvil.url, &[]));
    let (maker, taker) = weiport.two_traders().await;
    order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=3000",
    )
    .await;
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.5",
    )
    .await;
    for path in [
        "/api/v3/simple/price?ids=ethereum&vs_currencies=usd",
        "/api/v3/depth?symbol=ETHUSDT",
    ] {
        reqwest::get(format!("{}{path}", weiport.url))
            .await
            .unwrap();
    }

    let client = reqwest::Client::new();
    let url = format!("{}/status", weiport.admin_url);
    let refused = client.get(&url).send().await.unwrap();
    assert_eq!(refused.status(), 401, "the admin token guards it");
    let answer = client
        .get(&url)
        .bearer_auth(&weiport.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert!(
        answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = answer.text().await.unwrap();
    for part in [
        "<th>Chain ",
        "<th>ETHUSDT</th><td>last price 3000",
        "<th>Wallet ETH on ETH</th><td>",
        "Index lag by chain (blocks)",
        "Requests a second by face",
        "Orders a second",
    ] {
        assert!(page.contains(part), "{part} missing from {page}");
    }
    assert_eq!(page.matches("<svg").count(), 3);
    assert!(
        !page.contains("<script"),
        "no script: one server-rendered page"
    );

    // Chromium draws it as a browser would.
    let shot_dir = tempfile::tempdir().unwrap();
    let html = shot_dir.path().join("status.html");
    let png = shot_dir.path().join("status.png");
    std::fs::write(&html, &page).unwrap();
    let (html_url, png_arg) = (
        format!("file://{}", html.display()),
        format!("--screenshot={}", png.display()),
    );
    let output = tokio::task::spawn_blocking(move || {
        Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1000,1000",
                &png_arg,
                &html_url,
            ])
            .output()
            .expect("chromium (scripts/setup.sh installs it)")
    });
    let output = tokio::time::timeout(Duration::from_secs(120), output)
        .await
        .expect("chromium within two minutes")
        .unwrap();
    let picture = std::fs::read(&png)
        .unwrap_or_else(|_| panic!("no screenshot: {}", String::from_utf8_lossy(&output.stderr)));
    assert!(picture.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        picture.len() > 10_000,
        "a page, not a blank: {} bytes",
        picture.len()
    );
    if let Ok(keep) = std::env::var("WEIPORT_STATUS_SCREENSHOT") {
        std::fs::write(common::repo_path(&keep), &picture).unwrap();
    }
}
