//! The `celhook` binary: exit codes, `check`'s output, and `serve` starting
//! from `CELHOOK_*` variables and stopping cleanly on SIGTERM.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

fn celhook() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_celhook"));
    // Keep the tests independent of the caller's environment.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CELHOOK_") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("RUST_LOG");
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("celhook runs")
}

fn fixture_dir(name: &str) -> String {
    common::fixture_path(name).display().to_string()
}

#[test]
fn help_and_version_exit_0() {
    for arg in ["--help", "--version"] {
        let out = run(celhook().arg(arg));
        assert_eq!(out.status.code(), Some(0), "{arg}");
        assert!(!out.stdout.is_empty(), "{arg}");
    }
}

/// Each command's `--output` help describes what that command prints:
/// `check` its report, `eval` the webhook's answer.
#[test]
fn output_help_describes_each_commands_own_output() {
    let help = |command: &str| {
        let out = run(celhook().args([command, "--help"]));
        assert_eq!(out.status.code(), Some(0), "{command}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let start = text.find("--output").expect("--output is documented");
        let end = text[start..]
            .find("[default")
            .map_or(text.len(), |e| start + e);
        text[start..end].to_owned()
    };
    let (check, eval) = (help("check"), help("eval"));
    assert!(
        check.contains(r#"{"crds":[{"name","file","versions","errors"}]"#),
        "{check}"
    );
    assert!(!check.contains("AdmissionReview"), "{check}");
    assert!(
        eval.contains("The AdmissionReview the webhook would send"),
        "{eval}"
    );
    assert!(eval.contains("`allowed`, or `denied:`"), "{eval}");
    assert!(!eval.contains("crds"), "{eval}");
}

#[test]
fn usage_errors_exit_64() {
    for args in [
        &["frobnicate"][..],
        &["serve", "--tls-cert", "/tmp/only-a-cert.pem"],
        &["serve", "--listen", "not-an-address"],
        &["check"],
        &["check", "--config", "crds", "--output", "yaml"],
    ] {
        let out = run(celhook().args(args));
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn check_prints_the_report_as_json_and_exits_0_on_a_clean_config() {
    let out = run(celhook().args([
        "check",
        "--output",
        "json",
        "--config",
        &fixture_dir("crds/valid"),
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout).expect("stdout is JSON");
    assert!(report["crds"].is_array(), "{report}");
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    for crd in report["crds"].as_array().into_iter().flatten() {
        assert_eq!(crd["errors"], serde_json::json!([]), "{report}");
    }
}

#[test]
fn check_text_ends_with_a_summary_line() {
    let out = run(celhook()
        .env("CELHOOK_CONFIG", fixture_dir("crds/valid"))
        .arg("check"));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("checked ") && last.ends_with("no problems"),
        "{stdout}"
    );
}

#[test]
fn check_reports_a_broken_rule_with_its_location_and_exits_1() {
    let dir = fixture_dir("crds/broken");
    let out = run(celhook().args(["check", "--config", &dir]));
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("self.replicas >"))
        .unwrap_or_else(|| panic!("no line names the rule: {stdout}"));
    for part in [
        "crontab.yaml",
        "crontabs.stable.example.com",
        "version v1",
        "x-kubernetes-validations[1]",
    ] {
        assert!(line.contains(part), "{part:?} not in {line:?}");
    }

    let out = run(celhook().args(["check", "--output", "json", "--config", &dir]));
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["crds"][0]["name"], "crontabs.stable.example.com");
    assert_eq!(report["crds"][0]["errors"][0]["rule"], "self.replicas >");
}

#[test]
fn serve_refuses_a_config_that_check_rejects() {
    let out = run(celhook().args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--config",
        &fixture_dir("crds/broken"),
    ]));
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("self.replicas >"));
}

#[test]
fn serve_refuses_unreadable_certificate_files_naming_them() {
    let out = run(celhook().args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        "/nonexistent/celhook-test/tls.crt",
        "--tls-key",
        "/nonexistent/celhook-test/tls.key",
    ]));
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/celhook-test/tls.crt"),
        "{stderr}"
    );
}

/// Kills the child if the test fails before it is stopped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn serve_runs_from_env_and_stops_cleanly_on_sigterm() {
    let mut child = Child(
        celhook()
            .arg("serve")
            .env("CELHOOK_LISTEN", "127.0.0.1:0")
            .env("CELHOOK_LOG_FORMAT", "json")
            // Stop at once: the delay is tested in tests/api/operation/lifecycle.rs.
            .env("CELHOOK_SHUTDOWN_DELAY", "0s")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("celhook serve starts"),
    );

    // Log lines are JSON; the "listening" one carries the bound address.
    let stderr = child.0.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let value = serde_json::from_str(&line)
                .unwrap_or_else(|err| panic!("log line is not JSON ({err}): {line}"));
            if tx.send(value).is_err() {
                break;
            }
        }
    });
    let mut saw_self_signed_warning = false;
    let addr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a log line within 30 s");
        if line["level"] == "WARN"
            && line["message"]
                .as_str()
                .unwrap_or("")
                .contains("self-signed")
        {
            saw_self_signed_warning = true;
        }
        if let Some(addr) = line["local_addr"].as_str() {
            break addr.to_owned();
        }
    };
    assert!(
        saw_self_signed_warning,
        "no warning about the generated certificate"
    );

    // The generated certificate is not known here; trust is tested elsewhere.
    // HTTP/1.1 because actix closes idle HTTP/1.1 connections on a graceful
    // stop but leaves HTTP/2 ones open until the shutdown timeout.
    common::install_crypto();
    let client = reqwest::Client::builder()
        .tls_danger_accept_invalid_certs(true)
        .http1_only()
        .build()
        .expect("client");
    let resp = client
        .get(format!("https://{addr}/readyz"))
        .send()
        .await
        .expect("GET /readyz");
    assert_eq!(resp.status(), reqwest::StatusCode::OK);
    assert_eq!(resp.text().await.expect("body"), "ok\n");

    let pid = child.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // Well under the shutdown timeout: nothing is in flight, the idle
    // connection is closed at once.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running 5 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn check_skips_samples_with_a_warning_and_strict_fails_on_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crds = dir.path().join("team");
    std::fs::create_dir(&crds).expect("mkdir");
    std::fs::copy(
        common::fixture_path("crds/patterns.yaml"),
        crds.join("patterns.yaml"),
    )
    .expect("copy");
    std::fs::write(
        dir.path().join("sample.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sample}\n",
    )
    .expect("write");
    let config = dir.path().display().to_string();

    let out = run(celhook().args(["check", "--config", &config]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("warning: "), "{stdout}");
    assert!(
        stdout.contains("sample.yaml: document 0: skipped"),
        "{stdout}"
    );
    // The CRD in the subdirectory was read.
    assert!(stdout.contains("checked 1 CRD"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("no problems, 1 warning"),
        "{stdout}"
    );

    let strict = run(celhook().args(["check", "--config", &config, "--strict"]));
    assert_eq!(strict.status.code(), Some(1));
}

/// `--kubernetes-version`: `check` judges a rule as that API server judges
/// one being written (its compatibility version, one minor behind: the
/// semver library, 1.33, needs 1.34), `eval` as it runs a stored one.
#[test]
fn the_kubernetes_version_decides_which_libraries_a_rule_may_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: releases.example.com}
spec:
  group: example.com
  names: {kind: Release, plural: releases}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                version: {type: string, maxLength: 64}
                namespace: {type: string, maxLength: 64}
              x-kubernetes-validations:
                - rule: "isSemver(self.version)"
                  message: not a semver
                - rule: "self.namespace != 'kube-system'"
"#;
    std::fs::write(dir.path().join("crd.yaml"), crd).expect("write");
    let config = dir.path().display().to_string();
    let check = |version: &str| {
        run(celhook().args([
            "check",
            "--config",
            &config,
            "--kubernetes-version",
            version,
        ]))
    };
    let out = check("1.34");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = check("1.33");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("undeclared reference to 'isSemver'"),
        "{text}"
    );
    // A reserved word names a field in a rule being written from
    // compatibility version 1.31, which is Kubernetes 1.32's.
    let out = check("1.31");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("undefined field 'namespace'"), "{text}");
    let out = check("1.32");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("undefined field"), "{text}");

    let object = dir.path().join("object.yaml");
    std::fs::write(
        &object,
        "apiVersion: example.com/v1\nkind: Release\nmetadata: {name: r}\nspec: {version: not-semver}\n",
    )
    .expect("write");
    let object = object.display().to_string();
    let crd_file = dir.path().join("crd.yaml").display().to_string();
    let out = run(celhook().args([
        "eval",
        "--crd",
        &crd_file,
        "--object",
        &object,
        "--kubernetes-version",
        "1.33",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("spec: Invalid value: \"object\": not a semver"),
        "{text}"
    );

    let out = run(celhook().args(["check", "--config", &config, "--kubernetes-version", "1.38"]));
    assert_eq!(out.status.code(), Some(64), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("give one of 1.30 to 1.37"), "{err}");
}
