//! Parsing of the command line: defaults, flags and usage errors.

use super::*;
use crate::server::{ClientAuth, ServeConfig, TlsSource};
use crate::telemetry::LogFormat;

fn serve(args: &[&str]) -> (ServeConfig, LogFormat) {
    let argv = std::iter::once("celhook")
        .chain(std::iter::once("serve"))
        .chain(args.iter().copied());
    match parse_from(argv).expect("parses") {
        Command::Serve { config, log_format } => (config, log_format),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn serve_defaults() {
    let (config, log_format) = serve(&[]);
    assert!(matches!(config.config_source, ConfigSource::Embedded));
    assert_eq!(config.listen, "0.0.0.0:8443".parse().expect("addr"));
    assert_eq!(config.tls, TlsSource::SelfSigned);
    assert_eq!(config.max_request_bytes, 8 * 1024 * 1024);
    assert_eq!(log_format, LogFormat::Text);
}

#[test]
fn serve_flags() {
    let (config, log_format) = serve(&[
        "--config",
        "/etc/celhook",
        "--tls-cert",
        "/tls/tls.crt",
        "--tls-key",
        "/tls/tls.key",
        "--listen",
        "127.0.0.1:9443",
        "--max-request-bytes",
        "1024",
        "--log-format",
        "json",
    ]);
    assert!(
        matches!(config.config_source, ConfigSource::Dir(ref d) if d == std::path::Path::new("/etc/celhook"))
    );
    assert_eq!(
        config.tls,
        TlsSource::Files {
            cert: "/tls/tls.crt".into(),
            key: "/tls/tls.key".into()
        }
    );
    assert_eq!(config.listen.port(), 9443);
    assert_eq!(config.max_request_bytes, 1024);
    assert_eq!(log_format, LogFormat::Json);
}

#[test]
fn serve_operation_flags() {
    let (config, _) = serve(&[]);
    assert_eq!(config.shutdown_delay, std::time::Duration::from_secs(5));
    assert_eq!(config.request_timeout, std::time::Duration::from_secs(25));
    assert_eq!(config.metrics_listen, None);
    assert_eq!(config.client_auth, None);
    assert_eq!(config.review_rounds, crate::server::ReviewRounds::Auto);
    assert_eq!(config.inline_budget, std::time::Duration::from_millis(1));

    let (config, _) = serve(&[
        "--metrics-listen",
        "0.0.0.0:9090",
        "--client-ca",
        "/tls/client-ca.crt",
        "--allowed-client-names",
        "kube-apiserver,front-proxy-client",
        "--reload-interval",
        "250ms",
        "--shutdown-delay",
        "2s",
        "--shutdown-timeout",
        "1m",
        "--max-concurrent-requests",
        "8",
        "--request-timeout",
        "10s",
        "--keep-alive",
        "90s",
        "--header-timeout",
        "3s",
        "--max-in-flight-bytes",
        "1048576",
        "--max-connection-rate",
        "16",
        "--workers",
        "3",
        "--review-rounds",
        "never",
        "--inline-budget",
        "5ms",
    ]);
    let s = std::time::Duration::from_secs;
    assert_eq!(config.max_in_flight_bytes, 1 << 20);
    assert_eq!(config.max_connection_rate, 16);
    assert_eq!(config.workers, Some(3));
    assert_eq!(config.review_rounds, crate::server::ReviewRounds::Never);
    assert_eq!(
        config.metrics_listen,
        Some("0.0.0.0:9090".parse().expect("addr"))
    );
    assert_eq!(
        config.client_auth,
        Some(ClientAuth {
            ca: "/tls/client-ca.crt".into(),
            allowed_names: vec!["kube-apiserver".into(), "front-proxy-client".into()],
        })
    );
    assert_eq!(
        config.reload_interval,
        std::time::Duration::from_millis(250)
    );
    assert_eq!(config.shutdown_delay, s(2));
    assert_eq!(config.shutdown_timeout, s(60));
    assert_eq!(config.max_concurrent_requests, 8);
    assert_eq!(config.request_timeout, s(10));
    assert_eq!(config.keep_alive, s(90));
    assert_eq!(config.header_timeout, s(3));
    assert_eq!(config.inline_budget, std::time::Duration::from_millis(5));
}

#[test]
fn usage_errors_are_reported_on_stderr() {
    for args in [
        &["celhook", "serve", "--tls-cert", "/a.crt"][..],
        &["celhook", "serve", "--tls-key", "/a.key"],
        &["celhook", "serve", "--listen", "not-an-address"],
        &["celhook", "serve", "--max-request-bytes", "0"],
        &["celhook", "serve", "--log-format", "xml"],
        &["celhook", "serve", "--review-rounds", "sometimes"],
        &["celhook", "serve", "--shutdown-delay", "5"],
        &["celhook", "serve", "--allowed-client-names", "x"],
        &["celhook", "serve", "--max-concurrent-requests", "0"],
        &["celhook", "certs", "--days", "0"],
        &["celhook", "check", "--config", "/x", "--output", "yaml"],
        &["celhook", "frobnicate"],
        &["celhook"],
    ] {
        let err = parse_from(args).expect_err("usage error");
        assert!(err.use_stderr(), "{args:?}: {err}");
    }
}

#[test]
fn check_flags() {
    match parse_from(["celhook", "check", "--config", "crds", "--output", "json"]).expect("parses")
    {
        Command::Check(args) => {
            assert!(
                matches!(args.source, ConfigSource::Dir(ref d) if d == std::path::Path::new("crds"))
            );
            assert_eq!(args.output, OutputFormat::Json);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn eval_old_goes_with_object_or_expr() {
    match parse_from(["celhook", "eval", "--expr", "oldSelf", "--old", "o.yaml"]) {
        Ok(Command::Eval(EvalArgs::Expr { old, this, .. })) => {
            assert_eq!((old, this), (Some(PathBuf::from("o.yaml")), None));
        }
        other => panic!("unexpected {other:?}"),
    }
    match parse_from([
        "celhook", "eval", "--crd", "c.yaml", "--object", "n.yaml", "--old", "o.yaml", "--output",
        "json",
    ]) {
        Ok(Command::Eval(EvalArgs::Object { old, output, .. })) => {
            assert_eq!(
                (old, output),
                (Some(PathBuf::from("o.yaml")), OutputFormat::Json)
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(parse_from(["celhook", "eval", "--old", "o.yaml"]).is_err());
}

#[test]
fn convert_flags_and_the_convert_body_limit() {
    match parse_from([
        "celhook",
        "convert",
        "--to",
        "example.com/v1",
        "a.yaml",
        "b.json",
    ])
    .expect("parses")
    {
        Command::Convert(args) => {
            assert!(matches!(args.source, ConfigSource::Embedded));
            assert_eq!(args.to, "example.com/v1");
            assert_eq!(
                args.files,
                [PathBuf::from("a.yaml"), PathBuf::from("b.json")]
            );
            assert_eq!(
                args.other_kinds,
                crate::conversion::files::OtherKinds::PassThrough
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    match parse_from([
        "celhook",
        "convert",
        "--refuse-other-kinds",
        "--to",
        "example.com/v1",
        "-",
    ]) {
        Ok(Command::Convert(args)) => assert_eq!(
            args.other_kinds,
            crate::conversion::files::OtherKinds::Refuse
        ),
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        parse_from(["celhook", "convert", "a.yaml"]).is_err(),
        "--to is required"
    );
    let (config, _) = serve(&[]);
    assert_eq!(config.max_convert_request_bytes, 256 * 1024 * 1024);
    let (config, _) = serve(&["--max-convert-request-bytes", "4096"]);
    assert_eq!(config.max_convert_request_bytes, 4096);
}
