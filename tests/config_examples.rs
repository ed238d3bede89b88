//! Every example the configuration's comments give is taken as written: each
//! TOML example starts the server from a file, each environment example is
//! read by `weiport config`. A documented key can never be refused again.

mod common;

use std::time::Duration;

use common::{Weiport, repo_path, weiport_command};

/// One example: the section it sits in, and its lines.
struct Example {
    section: Option<String>,
    lines: Vec<String>,
}

/// The indented (`#   `) comment blocks of config/default.toml, blank
/// comment lines inside a block kept.
fn examples() -> Vec<Example> {
    let text = std::fs::read_to_string(repo_path("config/default.toml")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut section = None;
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        if line.starts_with('[') {
            section = Some(line.trim_matches(['[', ']']).to_owned());
        }
        if !line.starts_with("#   ") {
            at += 1;
            continue;
        }
        let mut block = Vec::new();
        while at < lines.len() {
            let line = lines[at];
            let continues = line == "#"
                && lines
                    .get(at + 1)
                    .is_some_and(|next| next.starts_with("#   "));
            if let Some(example) = line.strip_prefix("#   ") {
                block.push(example.to_owned());
            } else if continues {
                block.push(String::new());
            } else {
                break;
            }
            at += 1;
        }
        found.push(Example {
            section: section.clone(),
            lines: block,
        });
    }
    found
}

fn is_environment(example: &Example) -> bool {
    example
        .lines
        .iter()
        .all(|line| line.starts_with("WEIPORT_") && line.contains('='))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_example_starts_the_server() {
    let examples = examples();
    assert!(
        examples.len() >= 4,
        "the configuration documents its examples: {}",
        examples.len()
    );
    let dir = tempfile::tempdir().unwrap();
    for (n, example) in examples.iter().enumerate() {
        let shown = example.lines.join("\n");
        if is_environment(example) {
            let env: Vec<(&str, &str)> = example
                .lines
                .iter()
                .map(|line| line.split_once('=').unwrap())
                .collect();
            let output = weiport_command(&["config"], &env).output().unwrap();
            let printed = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "{shown}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            for (_, value) in &env {
                assert!(printed.contains(value), "{shown}: {printed}");
            }
            continue;
        }
        // An example without its own header belongs to the section it is
        // written in.
        let has_header = example.lines.iter().any(|line| line.starts_with('['));
        let mut file = String::new();
        if let (false, Some(section)) = (has_header, &example.section) {
            file.push_str(&format!("[{section}]\n"));
        }
        file.push_str(&shown);
        let path = dir.path().join(format!("example-{n}.toml"));
        std::fs::write(&path, &file).unwrap();
        let data = dir.path().join(format!("data-{n}"));
        let mut weiport = Weiport::serve(
            &data,
            &[
                ("WEIPORT_CONFIG", path.to_str().unwrap()),
                ("WEIPORT_INDEXER__ENABLED", "false"),
            ],
        );
        let health = reqwest::get(format!("{}/healthz", weiport.url))
            .await
            .unwrap();
        assert_eq!(health.status(), 200, "{file}");
        weiport.stop("TERM", Duration::from_secs(10));
    }
}
