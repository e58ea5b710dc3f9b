//! Timestamps, durations and time zones: what a schema's formats become,
//! and the corners where Go's integer arithmetic decides the answer.

use super::*;

#[test]
fn formats_become_timestamps_and_durations() {
    let s = crontab();
    let obj = json!({"spec": {"when": "2024-01-01T00:00:00Z", "ttl": "1h"}});
    assert_eq!(
        run(
            "self.spec.when + self.spec.ttl == timestamp('2024-01-01T01:00:00Z')",
            &s,
            &obj
        ),
        Ok(json!(true))
    );
}

#[test]
fn worded_durations_in_a_duration_field_are_durations() {
    // kube-openapi's reading of the format, as the API server types it.
    let s = crontab();
    for (ttl, hours) in [
        ("3 days", 72),
        ("1h 30m", 1),
        ("2 Weeks", 336),
        ("in 3 days", 72),
    ] {
        let obj = json!({"spec": {"ttl": ttl}});
        assert_eq!(
            run("self.spec.ttl.getHours()", &s, &obj),
            Ok(json!(hours)),
            "{ttl}"
        );
    }
    // Not a duration to kube-openapi: the string it is.
    let obj = json!({"spec": {"ttl": "soon"}});
    assert_eq!(
        run("type(self.spec.ttl) == string", &s, &obj),
        Ok(json!(true))
    );
}

#[test]
fn numeric_time_zones_and_negated_durations_follow_go() {
    let s = crontab();
    let obj = json!({});
    assert_eq!(
        run("-dyn(duration('-9223372036854775808ns'))", &s, &obj),
        Err("integer overflow".into())
    );
    assert_eq!(
        run(
            "-dyn(duration('-9223372036854775807ns')) == duration('9223372036854775807ns')",
            &s,
            &obj
        ),
        Ok(json!(true))
    );
    // Numeric offsets in Go's int arithmetic, no range check, no panic:
    // 999999 hours on is 15 o'clock; minutes 99999999 shift by days; a
    // signed minute subtracts under a '-' hour; hours past i64 wrap.
    let at = |tz: &str, part: &str| {
        run(
            &format!("timestamp('2024-01-01T00:00:00Z').{part}('{tz}')"),
            &s,
            &obj,
        )
    };
    assert_eq!(at("999999:00", "getHours"), Ok(json!(15)));
    assert_eq!(at("25:00", "getHours"), Ok(json!(1)));
    assert_eq!(at("1:99999999", "getHours"), Ok(json!(11)));
    assert_eq!(at("1:99999999", "getMinutes"), Ok(json!(39)));
    assert_eq!(at("-05:-30", "getHours"), Ok(json!(19)));
    assert_eq!(at("-05:-30", "getMinutes"), Ok(json!(30)));
    assert_eq!(at("9223372036854775807:00", "getHours"), Ok(json!(23)));
    assert!(at("--5:00", "getHours")
        .unwrap_err()
        .contains("strconv.Atoi"));
    assert!(at("99999999999999999999:00", "getHours")
        .unwrap_err()
        .contains("value out of range"));
}
