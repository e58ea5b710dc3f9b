//! `celhook convert --round-trip` and the coverage `check` reports, on a
//! directory of objects with a planted loss (tests/fixtures/round-trip: a
//! v1 field that v2 cannot hold, which the conversion document does not
//! acknowledge).

use crate::celhook_output as celhook;
use crate::common;

fn fixture(name: &str) -> String {
    common::fixture_path(name).display().to_string()
}

#[test]
fn a_planted_loss_in_a_directory_of_objects_is_reported_and_fails_strict() {
    let config = fixture("round-trip/config");
    let objects = fixture("round-trip/objects");
    let args = ["convert", "--config", &config, "--round-trip", &objects];
    let (code, stdout, stderr) = celhook(&args);
    // The stash brings extra back: no difference, so only --strict fails.
    assert_eq!(code, 0, "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].ends_with("list.yaml: document 0 item 0 (team-b/special): v1 -> v2: spec.extra = \"only-in-v1\" is kept only in the stash: clients of v2 do not see it"),
        "{stdout}"
    );
    assert_eq!(
        lines[1],
        "round trips of 3 object(s) (1 skipped: other kinds or no conversion document): 0 difference(s), 0 error(s), 1 value(s) only in the stash (0 acknowledged in spec.lossy)"
    );
    let mut strict = args.to_vec();
    strict.push("--strict");
    let (code, stdout, _) = celhook(&strict);
    assert_eq!(code, 1, "{stdout}");

    // check names the same field statically, for every object to come.
    let (code, stdout, _) = celhook(&["check", "--config", &config]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("warning: ") && stdout.contains("spec.lossy.v1: converting v1 -> v2, these fields survive only in the celhook.dev/conversion-stash annotation"),
        "{stdout}"
    );
    let (code, _, _) = celhook(&["check", "--strict", "--config", &config]);
    assert_eq!(code, 1);
}

#[test]
fn an_acknowledged_loss_passes_strict_and_standard_input_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = std::fs::read_to_string(common::fixture_path("round-trip/config/widget.yaml"))
        .expect("fixture")
        + "  lossy:\n    v1: [spec.extra]\n";
    std::fs::write(dir.path().join("widget.yaml"), config).expect("write");
    let config = dir.path().display().to_string();
    let (code, stdout, _) = celhook(&["check", "--strict", "--config", &config]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("note: "), "{stdout}");

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_celhook"))
        .args([
            "convert",
            "--config",
            &config,
            "--round-trip",
            "--strict",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let list =
        std::fs::read(common::fixture_path("round-trip/objects/list.yaml")).expect("fixture");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), &list).expect("write");
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("<stdin>: document 0 item 0 (team-b/special): v1 -> v2: spec.extra = \"only-in-v1\" is kept only in the stash (acknowledged in spec.lossy)"),
        "{stdout}"
    );
}

#[test]
fn round_trip_takes_no_target_version_and_strict_needs_it() {
    let (code, _, stderr) = celhook(&[
        "convert",
        "--round-trip",
        "--to",
        "example.com/v1",
        "x.yaml",
    ]);
    assert_eq!(code, 64, "{stderr}");
    let (code, _, stderr) = celhook(&["convert", "--strict", "--to", "example.com/v1", "x.yaml"]);
    assert_eq!(code, 64, "{stderr}");
    let (code, _, stderr) = celhook(&["convert", "x.yaml"]);
    assert_eq!(code, 64, "--to or --round-trip: {stderr}");
}

#[test]
fn the_shipped_conversions_round_trip_the_fixtures() {
    let (code, stdout, _) = celhook(&["convert", "--round-trip", "--strict", &fixture("convert")]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains(": 0 difference(s), 0 error(s)"), "{stdout}");
}
