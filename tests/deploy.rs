//! The deployment files in `deploy/`, checked by the tools that read them:
//! the systemd unit by `systemd-analyze verify`.

mod common;

use std::process::Command;

#[test]
fn the_service_unit_verifies_clean() {
    let unit =
        std::fs::read_to_string(common::repo_path("deploy/systemd/weiport.service")).unwrap();
    // The unit names the installed binary; verify runs it from the build.
    assert!(unit.contains("ExecStart=/usr/local/bin/weiport "));
    let unit = unit.replace("/usr/local/bin/weiport", env!("CARGO_BIN_EXE_weiport"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weiport.service");
    std::fs::write(&path, unit).unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .expect("systemd-analyze (scripts/setup.sh installs systemd)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // Anything it says about the unit itself is a finding.
    let findings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("weiport.service"))
        .collect();
    assert!(findings.is_empty(), "{findings:#?}");
}
