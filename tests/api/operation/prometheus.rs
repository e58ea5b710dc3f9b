//! celhook as Prometheus and Grafana see it: a real Prometheus scrapes the
//! real server over TLS, `promtool` checks the exposition, and every query
//! of the Grafana dashboard (`manifests/overlays/monitoring`) is checked
//! against a real scrape (metric and label names) and run by Prometheus.

use super::{files, tls_volume};
use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use celhook::certs::Ca;
use celhook::config::ConfigSource;
use celhook::server::ServeConfig;
use common::{crontab_review, metrics_text, start_with};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

// === the dashboard ===

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/overlays/monitoring/grafana-dashboard.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("parsing {}: {err}", path.display()))
}

/// One query of the dashboard: where it is, its PromQL, its legend.
struct Query {
    panel: String,
    expr: String,
    legend: String,
}

/// Every target of every panel, rows' nested panels included.
fn queries(dashboard: &Value) -> Vec<Query> {
    fn walk(panels: &Value, out: &mut Vec<Query>) {
        for panel in panels.as_array().into_iter().flatten() {
            let title = panel["title"].as_str().unwrap_or("(untitled)");
            for target in panel["targets"].as_array().into_iter().flatten() {
                out.push(Query {
                    panel: title.to_owned(),
                    expr: target["expr"].as_str().unwrap_or_default().to_owned(),
                    legend: target["legendFormat"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                });
            }
            walk(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// `expr` as Prometheus gets it from Grafana: the built-in intervals fixed,
/// template variables at their "All" value.
fn substituted(dashboard: &Value, expr: &str) -> String {
    let mut out = expr
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "1m")
        .replace("$__range", "5m");
    for var in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if var["type"] == "query" {
            let name = var["name"].as_str().expect("variable name");
            let all = var["allValue"].as_str().expect("an allValue");
            out = out.replace(&format!("${name}"), all);
        }
    }
    assert!(!out.contains('$'), "unknown variable in {expr}");
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The words of `expr` outside string literals, each with what follows it.
fn words(expr: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = expr.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '"' {
            // Skip the literal (label values may contain anything).
            while let Some((_, c)) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => break,
                    _ => {}
                }
            }
        } else if is_name_char(c) {
            let mut end = i + c.len_utf8();
            while let Some(&(j, c)) = chars.peek() {
                if !is_name_char(c) {
                    break;
                }
                end = j + c.len_utf8();
                chars.next();
            }
            out.push((expr[i..end].to_owned(), expr[end..].to_owned()));
        }
    }
    out
}

/// The celhook metric names an expression reads.
fn metric_names(expr: &str) -> BTreeSet<String> {
    words(expr)
        .into_iter()
        .map(|(w, _)| w)
        .filter(|w| w.starts_with("celhook_"))
        .collect()
}

/// The label names an expression uses: in matchers (`name=`, `name=~`,
/// `name!=`) and in `by (...)` / `without (...)` lists.
fn label_names(expr: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut matched, mut grouped) = (BTreeSet::new(), BTreeSet::new());
    for (word, rest) in words(expr) {
        let rest = rest.trim_start();
        if (rest.starts_with('=') && !rest.starts_with("=="))
            || rest.starts_with("!=")
            || rest.starts_with("!~")
        {
            matched.insert(word);
        } else if (word == "by" || word == "without") && rest.starts_with('(') {
            let list = &rest[1..rest.find(')').expect("a closed label list")];
            grouped.extend(list.split(',').map(|l| l.trim().to_owned()));
        }
    }
    (matched, grouped)
}

/// Families of a scrape: name -> (type, label names), histogram series
/// (`_bucket`, `_sum`, `_count`) under their family.
fn scrape_families(text: &str) -> HashMap<String, (String, BTreeSet<String>)> {
    let mut families: HashMap<String, (String, BTreeSet<String>)> = HashMap::new();
    for line in text.lines() {
        if let Some(decl) = line.strip_prefix("# TYPE ") {
            let (name, kind) = decl.split_once(' ').expect("# TYPE name type");
            families.insert(name.to_owned(), (kind.to_owned(), BTreeSet::new()));
        }
    }
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
        let (name, labels) = series.split_once('{').unwrap_or((series, ""));
        let family = family_of(name, &families).unwrap_or_else(|| panic!("no family: {line}"));
        let names = labels
            .trim_end_matches('}')
            .split(',')
            .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_owned()));
        if let Some((_, labels)) = families.get_mut(&family) {
            labels.extend(names);
        }
    }
    families
}

/// The family a series name belongs to.
fn family_of(name: &str, families: &HashMap<String, (String, BTreeSet<String>)>) -> Option<String> {
    if families.contains_key(name) {
        return Some(name.to_owned());
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        let base = name.strip_suffix(suffix)?;
        (families.get(base)?.0 == "histogram").then(|| base.to_owned())
    })
}

/// Labels every scraped series has besides its own: Prometheus' `job` and
/// `instance`, and what the Prometheus Operator adds for a ServiceMonitor.
const TARGET_LABELS: &[&str] = &[
    "job",
    "instance",
    "namespace",
    "service",
    "pod",
    "container",
    "endpoint",
];

/// Checks every dashboard query against a scrape: each names celhook
/// metrics that the scrape has, with labels those metrics carry, and its
/// legend uses only labels the query keeps.
fn check_dashboard_against(dashboard: &Value, scrape: &str) {
    let families = scrape_families(scrape);
    let queries = queries(dashboard);
    assert!(queries.len() >= 20, "{} queries", queries.len());
    let mut shown = BTreeSet::new();
    for q in &queries {
        let names = metric_names(&q.expr);
        assert!(
            !names.is_empty(),
            "{}: no celhook metric in {}",
            q.panel,
            q.expr
        );
        let mut labels: BTreeSet<String> = TARGET_LABELS.iter().map(|l| l.to_string()).collect();
        for name in &names {
            let family = family_of(name, &families)
                .unwrap_or_else(|| panic!("{}: {name} is not in a scrape of celhook", q.panel));
            labels.extend(families[&family].1.iter().cloned());
            shown.insert(family);
        }
        let (matched, grouped) = label_names(&q.expr);
        for label in matched.iter().chain(&grouped) {
            assert!(
                labels.contains(label),
                "{}: label {label} is on none of {names:?}",
                q.panel
            );
        }
        // `{{label}}` in the legend must survive the aggregation.
        let kept = if grouped.is_empty() {
            &labels
        } else {
            &grouped
        };
        for part in q.legend.split("{{").skip(1) {
            let label = part.split("}}").next().unwrap_or_default().trim();
            assert!(
                kept.contains(label),
                "{}: legend {{{{{label}}}}} is not kept by {}",
                q.panel,
                q.expr
            );
        }
    }
    // The requested panels are all there.
    for family in [
        "celhook_admission_requests_total",
        "celhook_conversion_requests_total",
        "celhook_request_duration_seconds",
        "celhook_rule_failures_total",
        "celhook_rule_errors_total",
        "celhook_rule_cost_total",
        "celhook_conversion_objects_total",
        "celhook_requests_in_flight",
        "celhook_requests_overloaded_total",
        "celhook_config_generation",
        "celhook_config_reload_failures_total",
        "celhook_tls_cert_expiry_timestamp_seconds",
    ] {
        assert!(shown.contains(family), "no panel shows {family}");
    }
}

/// Grafana picks the data source by the `datasource` variable everywhere.
fn check_dashboard_datasources(dashboard: &Value) {
    let vars = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    assert!(
        vars.iter().any(|v| v["name"] == "datasource"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "no `datasource` variable"
    );
    let by_variable = json!({"type": "prometheus", "uid": "${datasource}"});
    let mut ids = BTreeSet::new();
    fn walk(panels: &Value, by_variable: &Value, ids: &mut BTreeSet<u64>) {
        for panel in panels.as_array().into_iter().flatten() {
            let id = panel["id"].as_u64().expect("panel id");
            assert!(ids.insert(id), "panel id {id} twice");
            if panel["type"] != "row" {
                assert_eq!(&panel["datasource"], by_variable, "{}", panel["title"]);
                for target in panel["targets"].as_array().into_iter().flatten() {
                    assert_eq!(&target["datasource"], by_variable, "{}", panel["title"]);
                }
            }
            walk(&panel["panels"], by_variable, ids);
        }
    }
    walk(&dashboard["panels"], &by_variable, &mut ids);
    for var in vars.iter().filter(|v| v["type"] == "query") {
        assert_eq!(var["datasource"], by_variable, "{}", var["name"]);
    }
}

/// A ConversionReview of the docs' CronTab to `desired`.
fn conversion_review(uid: &str, desired: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [{
            "kind": "CronTab", "apiVersion": "example.com/v1beta1",
            "metadata": {"name": "local-crontab", "namespace": "default", "uid": "u-1"},
            "hostPort": "localhost:1234"
        }]}
    })
}

/// Sends the reviews whose metrics the dashboard shows: two allowed and
/// one denied admission, one conversion that succeeds and one that fails.
async fn send_reviews(client: &Client, base: &str) {
    for replicas in [1, 2, 20] {
        let answer = common::post_raw(
            client,
            &format!("{base}/validate?timeout=10s"),
            crontab_review(replicas),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    let convert = format!("{base}/convert?timeout=10s");
    for (uid, desired, status) in [
        ("ok", "example.com/v1", "Success"),
        ("bad", "example.com/v9", "Failure"),
    ] {
        let answer = common::post_review(client, &convert, &conversion_review(uid, desired)).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        assert_eq!(answer.json()["response"]["result"]["status"], status);
    }
}

#[tokio::test]
async fn the_dashboard_queries_only_metrics_and_labels_a_scrape_has() {
    let server = common::start().await;
    let client = common::client(&server, common::Http::H2);
    send_reviews(&client, &common::url(&server, "")).await;
    let text = metrics_text(&client, &common::url(&server, "/metrics")).await;
    let dashboard = dashboard();
    check_dashboard_datasources(&dashboard);
    check_dashboard_against(&dashboard, &text);
    server.stop().await.expect("stops");
}

#[test]
fn the_dashboard_check_catches_wrong_names() {
    // The checks above fail on what they are for, not only pass.
    let scrape = "# TYPE celhook_x_total counter\ncelhook_x_total{handler=\"a\"} 1\n\
                  # TYPE celhook_d_seconds histogram\ncelhook_d_seconds_bucket{le=\"1\"} 1\n\
                  celhook_d_seconds_sum 1\ncelhook_d_seconds_count 1\n";
    let panel = |expr: &str, legend: &str| json!({"panels": [{"title": "t", "targets": [{"expr": expr, "legendFormat": legend}]}]});
    let fails =
        |d: Value| std::panic::catch_unwind(|| check_dashboard_against(&d, scrape)).is_err();
    assert!(fails(panel(
        "sum by (handler) (rate(celhook_y_total[1m]))",
        ""
    )));
    assert!(fails(panel(
        "sum by (endpoint_x) (rate(celhook_x_total[1m]))",
        ""
    )));
    assert!(fails(panel(
        "sum by (handler) (rate(celhook_x_total[1m]))",
        "{{instance}}"
    )));
    assert!(fails(panel("rate(celhook_x_total{outcome=\"a\"}[1m])", "")));
    assert_eq!(
        metric_names("histogram_quantile(0.9, sum by (le) (rate(celhook_d_seconds_bucket{a=\"celhook_no\"}[1m])))"),
        BTreeSet::from(["celhook_d_seconds_bucket".to_owned()])
    );
    let families = scrape_families(scrape);
    assert_eq!(
        family_of("celhook_d_seconds_bucket", &families).as_deref(),
        Some("celhook_d_seconds")
    );
    assert_eq!(family_of("celhook_x_total_count", &families), None);
}

// === a real Prometheus scrapes celhook ===

/// Where `program` is on PATH, if it is.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The answer of an instant query (`status`, `data` or `error`); `None`
/// while Prometheus is not listening yet.
async fn query_answer(client: &Client, base: &str, promql: &str) -> Option<Value> {
    let encoded: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let resp = client
        .get(format!("{base}/api/v1/query?query={encoded}"))
        .send()
        .await
        .ok()?;
    resp.json().await.ok()
}

/// The one value of an instant query, once it has one.
async fn query(client: &Client, base: &str, promql: &str) -> Option<f64> {
    let body = query_answer(client, base, promql).await?;
    let result = body["data"]["result"].as_array()?;
    if result.len() != 1 {
        return None;
    }
    result[0]["value"][1].as_str()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_celhook_over_tls_and_runs_every_dashboard_query() {
    let (Some(prometheus), Some(promtool)) = (on_path("prometheus"), on_path("promtool")) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "prometheus/promtool not installed: .ci/run installs the Debian package `prometheus`"
        );
        eprintln!("SKIPPED: prometheus/promtool not installed (apt-get install prometheus)");
        return;
    };
    // A certificate for the in-cluster name, as the ServiceMonitor scrapes it.
    let ca = Ca::new("test CA", 30).expect("ca");
    let pair = ca
        .serving(&celhook::certs::service_names("celhook", "celhook"), 30)
        .expect("serving");
    let volume = tls_volume(&pair);
    // The embedded examples: CRDs with rules and with conversions.
    let config = ServeConfig {
        tls: files(&volume),
        config_source: ConfigSource::Embedded,
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, common::embedded_catalog()).await;
    let client = {
        common::install_crypto();
        Client::builder()
            .tls_certs_only(
                reqwest::Certificate::from_pem_bundle(ca.pair.cert_pem.as_bytes()).expect("pem"),
            )
            .resolve("celhook.celhook.svc", server.local_addr())
            .build()
            .expect("client")
    };
    let base = format!("https://celhook.celhook.svc:{}", server.local_addr().port());
    send_reviews(&client, &base).await;

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("ca.crt"), &ca.pair.cert_pem).expect("ca");
    let web_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    // The target labels the Prometheus Operator sets for a ServiceMonitor
    // (`endpoint` is the port's name): a metric label of the same name
    // would come out as `exported_<name>`.
    let target_labels: String = [
        ("namespace", "celhook"),
        ("service", "celhook"),
        ("pod", "celhook-0"),
        ("container", "celhook"),
        ("endpoint", "metrics"),
    ]
    .iter()
    .map(|(k, v)| format!("      - target_label: {k}\n        replacement: {v}\n"))
    .collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n\
         scrape_configs:\n  - job_name: celhook\n    scheme: https\n    tls_config:\n      ca_file: {}\n      server_name: celhook.celhook.svc\n    static_configs:\n      - targets: ['{}']\n    relabel_configs:\n{target_labels}",
        dir.path().join("ca.crt").display(),
        server.local_addr()
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).expect("config");
    let _prometheus = tokio::process::Command::new(prometheus)
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web_port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("prometheus starts");

    let api = format!("http://127.0.0.1:{web_port}");
    let plain = Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while query(&plain, &api, "up{job=\"celhook\"}").await != Some(1.0) {
        assert!(
            Instant::now() < deadline,
            "Prometheus did not report the target up within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let expect = [
        ("sum(celhook_admission_requests_total{outcome=\"allowed\",crd=\"crontabs.stable.example.com\"})", 2.0),
        ("sum(celhook_admission_requests_total{outcome=\"denied\",crd=\"crontabs.stable.example.com\"})", 1.0),
        ("sum(celhook_conversion_requests_total{outcome=\"success\",crd=\"crontabs.example.com\"})", 1.0),
        ("sum(celhook_conversion_requests_total{outcome=\"failure\",crd=\"crontabs.example.com\"})", 1.0),
        ("celhook_config_generation", 1.0),
        ("celhook_build_info", 1.0),
        ("celhook_request_duration_seconds_count{handler=\"validate\"}", 3.0),
        ("celhook_request_duration_seconds_count{handler=\"convert\"}", 2.0),
        (
            "celhook_rule_failures_total{crd=\"crontabs.stable.example.com\",path=\".spec\",index=\"1\"}",
            1.0,
        ),
        ("celhook_tls_cert_expiry_timestamp_seconds > time()", 1.0),
    ];
    for (promql, want) in expect {
        let got = query(&plain, &api, promql).await;
        // The expiry query yields the expiry itself; only its presence matters.
        if promql.ends_with("time()") {
            assert!(got.is_some_and(|v| v > 1.0), "{promql}: {got:?}");
        } else {
            assert_eq!(got, Some(want), "{promql}");
        }
    }
    // No celhook label collides with a target label.
    let labels = query_answer(&plain, &api, "celhook_requests_in_flight")
        .await
        .expect("an answer");
    for series in labels["data"]["result"].as_array().expect("series") {
        let metric = series["metric"].as_object().expect("labels");
        assert!(
            metric.keys().all(|k| !k.starts_with("exported_")),
            "{series}"
        );
        assert_eq!(metric["endpoint"], "metrics", "{series}");
    }

    // Every dashboard query runs, and gives series once rate() has two
    // scrapes to work with: a query with a wrong label value or function
    // would give none.
    let dashboard = dashboard();
    let deadline = Instant::now() + Duration::from_secs(30);
    for q in queries(&dashboard) {
        let promql = substituted(&dashboard, &q.expr);
        loop {
            let answer = query_answer(&plain, &api, &promql)
                .await
                .expect("an answer");
            assert_eq!(
                answer["status"], "success",
                "{}: {promql}: {answer}",
                q.panel
            );
            let series = answer["data"]["result"].as_array().map_or(0, Vec::len);
            if series > 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{}: no series from {promql}",
                q.panel
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    let text = metrics_text(&client, &format!("{base}/metrics")).await;
    let mut check = tokio::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool starts");
    let mut stdin = check.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).await.expect("write");
    drop(stdin);
    let out = check.wait_with_output().await.expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
