use super::*;

fn text(m: &Metrics) -> String {
    String::from_utf8(m.render().expect("renders")).expect("utf-8")
}

/// Every family with at least one series, each `observe_*` used once.
fn exercised() -> Metrics {
    let m = Metrics::register();
    m.observe_admission(
        "v1",
        "crontabs.stable.example.com",
        "CREATE",
        AdmissionOutcome::Allowed,
    );
    m.observe_conversion_review("v1", "crontabs.example.com", ConversionOutcome::Success);
    m.observe_overloaded(Endpoint::Validate);
    m.observe_deadline_exceeded(Endpoint::Convert);
    m.observe_converted("crontabs.example.com", "v1beta1", "v1", 2);
    m.observe_conversion_failure("crontabs.example.com", ConversionFailure::Call);
    m.rule("crontabs.stable.example.com", "v1", ".spec", 0)
        .observe(RuleResult::Error, 5);
    m.observe_config_loaded(1, SystemTime::now());
    m.observe_config_reload_failure();
    m.observe_config_reload_deferred();
    m.observe_inline_retry();
    m.observe_review_in_round();
    m.io_saturated().set(1);
    m.observe_cert_expiry(SystemTime::now());
    m.observe_cert_reload(true);
    m.observe_connection_refused("source_limit");
    m.observe_connection_closed("idle");
    m.observe_handshake_failure("protocol");
    m.connections_open().inc();
    m.body_bytes_in_flight().add(10);
    drop(m.start(Endpoint::Validate));
    m
}

#[test]
fn each_registry_is_its_own() {
    let a = Metrics::register();
    let b = Metrics::register();
    a.observe_admission(
        "v1",
        "crontabs.stable.example.com",
        "CREATE",
        AdmissionOutcome::Denied,
    );
    assert!(text(&a).contains(
        "celhook_admission_requests_total{crd=\"crontabs.stable.example.com\",operation=\"CREATE\",outcome=\"denied\",review_version=\"v1\"} 1"
    ));
    assert!(!text(&b).contains("outcome=\"denied\""));
}

#[test]
fn in_flight_guards_count_and_time() {
    let m = Metrics::register();
    let guard = m.start(Endpoint::Convert);
    assert!(text(&m).contains("celhook_requests_in_flight{handler=\"convert\"} 1"));
    drop(guard);
    let t = text(&m);
    assert!(
        t.contains("celhook_requests_in_flight{handler=\"convert\"} 0"),
        "{t}"
    );
    assert!(t.contains("celhook_request_duration_seconds_count{handler=\"convert\"} 1"));
    // Sub-millisecond buckets are exposed, fine enough for a p99/p50.
    for le in [
        "0.000005", "0.00001", "0.000025", "0.00003", "0.000045", "0.0001", "0.00015", "0.00035",
        "0.00075",
    ] {
        assert!(t.contains(&format!("le=\"{le}\"")), "{le}: {t}");
    }
}

#[test]
fn conversions_are_counted_apart_from_admissions() {
    let m = Metrics::register();
    let crd = "crontabs.example.com";
    m.observe_converted(crd, "v1", "v2", 3);
    m.observe_converted(crd, "v1", "v2", 2);
    m.observe_conversion_review("v1", crd, ConversionOutcome::Success);
    m.observe_conversion_failure(crd, ConversionFailure::PartialResponse);
    m.observe_conversion_review("v1beta1", crd, ConversionOutcome::Failure);
    let t = text(&m);
    assert!(t.contains("celhook_conversion_objects_total{crd=\"crontabs.example.com\",from=\"v1\",to=\"v2\"} 5"), "{t}");
    assert!(t.contains("celhook_conversion_failures_total{crd=\"crontabs.example.com\",failure_type=\"partial_response\"} 1"), "{t}");
    assert!(t.contains("celhook_conversion_requests_total{crd=\"crontabs.example.com\",outcome=\"success\",review_version=\"v1\"} 1"), "{t}");
    assert!(t.contains("celhook_conversion_requests_total{crd=\"crontabs.example.com\",outcome=\"failure\",review_version=\"v1beta1\"} 1"), "{t}");
    assert!(!t.contains("celhook_admission_requests_total{"), "{t}");
}

#[test]
fn unanswered_requests_count_as_errors_of_their_own_endpoint() {
    let m = Metrics::register();
    m.observe_overloaded(Endpoint::Validate);
    m.observe_deadline_exceeded(Endpoint::Convert);
    m.observe_unanswered(Endpoint::Convert);
    let t = text(&m);
    assert!(t.contains("celhook_admission_requests_total{crd=\"unknown\",operation=\"unknown\",outcome=\"error\",review_version=\"unknown\"} 1"), "{t}");
    assert!(t.contains("celhook_conversion_requests_total{crd=\"unknown\",outcome=\"error\",review_version=\"unknown\"} 2"), "{t}");
    assert!(
        t.contains("celhook_requests_overloaded_total{handler=\"validate\"} 1"),
        "{t}"
    );
    assert!(
        t.contains("celhook_requests_overloaded_total{handler=\"convert\"} 0"),
        "{t}"
    );
    assert!(
        t.contains("celhook_requests_deadline_exceeded_total{handler=\"convert\"} 1"),
        "{t}"
    );
}

#[test]
fn fixed_label_sets_are_in_the_first_scrape_at_zero() {
    let t = text(&Metrics::register());
    for series in [
        "celhook_requests_overloaded_total{handler=\"validate\"} 0",
        "celhook_requests_deadline_exceeded_total{handler=\"convert\"} 0",
        "celhook_tls_cert_reloads_total{result=\"failure\"} 0",
        "celhook_connections_refused_total{reason=\"connection_limit\"} 0",
        "celhook_connections_closed_total{reason=\"write_stall\"} 0",
        "celhook_tls_handshake_failures_total{reason=\"client_certificate\"} 0",
        "celhook_requests_in_flight_bytes 0",
        "celhook_config_reload_failures_total 0",
        "celhook_admission_inline_retries_total 0",
        "celhook_admission_reviews_in_rounds_total 0",
        "celhook_io_saturated 0",
    ] {
        assert!(t.contains(series), "{series} missing in\n{t}");
    }
}

#[test]
fn names_and_labels_follow_prometheus_conventions() {
    // Labels the scrape sets on every series (Prometheus, Prometheus
    // Operator): a metric label of the same name would be renamed.
    const TARGET_LABELS: &[&str] = &[
        "job",
        "instance",
        "namespace",
        "service",
        "pod",
        "container",
        "endpoint",
    ];
    let snake = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    let families = exercised().registry().gather();
    assert_eq!(families.len(), 27, "a family was added: extend `exercised`");
    for family in &families {
        let name = family.name();
        assert!(name.starts_with("celhook_") && snake(name), "{name}");
        assert!(!family.help().is_empty(), "{name}");
        let counter = family.get_field_type() == prometheus::proto::MetricType::COUNTER;
        assert_eq!(
            name.ends_with("_total"),
            counter,
            "{name}: _total iff a counter"
        );
        if family.get_field_type() == prometheus::proto::MetricType::HISTOGRAM {
            assert!(name.ends_with("_seconds"), "{name}: base unit as suffix");
        }
        assert!(
            (!name.contains("_bytes_") && !name.contains("_seconds_"))
                || name.contains("_timestamp_seconds"),
            "{name}: the unit goes last"
        );
        for metric in family.get_metric() {
            for label in metric.get_label() {
                let label = label.name();
                assert!(snake(label), "{name}: label {label}");
                assert!(
                    !TARGET_LABELS.contains(&label),
                    "{name}: label {label} collides with a target label"
                );
            }
        }
    }
}

#[test]
fn build_info_and_config_gauges() {
    let m = Metrics::register();
    m.observe_config_loaded(3, UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    m.observe_cert_expiry(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let t = text(&m);
    assert!(t.contains(&format!(
        "celhook_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    )));
    assert!(t.contains("celhook_config_generation 3"));
    assert!(t.contains("celhook_config_last_reload_success_timestamp_seconds 1700000000"));
    assert!(t.contains("celhook_tls_cert_expiry_timestamp_seconds 1800000000"));
}
