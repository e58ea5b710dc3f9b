//! The libraries through the whole engine (`Program::compile` + `eval`),
//! with cases from k8s.io/apiserver `pkg/cel/library/*_test.go`.

use celhook_json::{json, Value as Json};

use crate::registry::Func;
use crate::value::ANY;
use crate::{to_json, Environment, Program, Value, PER_EXPRESSION_COST_LIMIT};

// `indexOf` and `format` against cel-go's own probes.
mod strings;

fn lookup(name: &str, member: bool, arity: usize) -> Option<Func> {
    Environment::crd_rule(false).lookup(name, member, arity)
}

fn lookup_any(name: &str) -> bool {
    Environment::crd_rule(false).declares(name)
}

fn eval(expr: &str) -> Result<Json, String> {
    let p = Program::compile(expr, &ANY, Environment::default()).map_err(|e| e.message)?;
    let (r, _) = p.eval(Value::Null, None, PER_EXPRESSION_COST_LIMIT);
    r.map(|v| to_json(&v)).map_err(|e| e.message.to_string())
}

/// Asserts every expression evaluates to `true`.
fn all_true(cases: &[&str]) {
    for e in cases {
        assert_eq!(eval(e), Ok(json!(true)), "{e}");
    }
}

fn values(cases: &[(&str, Json)]) {
    for (e, want) in cases {
        assert_eq!(eval(e).as_ref(), Ok(want), "{e}");
    }
}

fn errors(cases: &[(&str, &str)]) {
    for (e, want) in cases {
        assert_eq!(eval(e), Err((*want).to_owned()), "{e}");
    }
}

#[test]
fn quantity_library() {
    all_true(&[
        r#"quantity("12Mi") == quantity("12582912")"#,
        r#"isQuantity("20")"#,
        r#"isQuantity("20M")"#,
        r#"isQuantity("20Mi")"#,
        r#"!isQuantity("20Mo")"#,
        r#"!isQuantity("10Mm")"#,
        r#"quantity("200M") == quantity("200M")"#,
        r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#,
        r#"quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")"#,
        r#"quantity("200M") != quantity("0.3G")"#,
        r#"quantity("50M").isLessThan(quantity("50Mi"))"#,
        r#"quantity("50M").isLessThan(quantity("100M"))"#,
        r#"!quantity("100M").isLessThan(quantity("50M"))"#,
        r#"quantity("50Mi").isGreaterThan(quantity("50M"))"#,
        r#"quantity("150Mi").isGreaterThan(quantity("100Mi"))"#,
        r#"!quantity("50M").isGreaterThan(quantity("100M"))"#,
        r#"quantity("50k").add(quantity("20")) == quantity("50.02k")"#,
        r#"!quantity("50k").add(20).isLessThan(quantity("50020"))"#,
        r#"quantity("50k").sub(quantity("20")) == quantity("49.98k")"#,
        r#"quantity("50k").sub(20) == quantity("49980")"#,
        r#"!quantity("9999999999999999999999999999999999999G").isInteger()"#,
        r#"quantity("50").isInteger()"#,
        r#"[quantity("9999999999999999999999999999999999999")].all(x, x.add(quantity("1")).compareTo(x.add(quantity("2"))) == -1)"#,
        r#"type(quantity("1")) == kubernetes.Quantity"#,
        r#"sign(quantity("-1m")) == -1 && sign(quantity("0")) == 0 && sign(quantity("3")) == 1"#,
    ]);
    values(&[
        (r#"quantity("200M").compareTo(quantity("0.2G"))"#, json!(0)),
        (r#"quantity("50M").compareTo(quantity("50Mi"))"#, json!(-1)),
        (r#"quantity("50Mi").compareTo(quantity("50M"))"#, json!(1)),
        (
            r#"quantity("50k").add(20).sub(quantity("100k")).asInteger()"#,
            json!(-49980),
        ),
        (
            r#"quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()"#,
            json!(20),
        ),
        (r#"quantity("50k").asInteger()"#, json!(50000)),
        (
            r#"quantity("50.703k").asApproximateFloat()"#,
            json!(50703.0),
        ),
    ]);
    errors(&[
        (
            r#"quantity("10Mo")"#,
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (r#"quantity("10Mm")"#, "unable to parse quantity's suffix"),
        (
            r#"quantity("9999999999999999999999999999999999999G").asInteger()"#,
            "cannot convert value to integer",
        ),
    ]);
    // `sign` is declared as a global function only.
    assert!(eval(r#"quantity("1").sign()"#)
        .unwrap_err()
        .contains("found no matching overload for 'sign'"));
}

#[test]
fn ip_library() {
    all_true(&[
        r#"ip("192.168.0.1") == ip("192.168.0.1")"#,
        r#"isIP("192.168.0.1")"#,
        r#"!isIP("192.168.0.1.0")"#,
        r#"ip.isCanonical("127.0.0.1")"#,
        r#"ip("0.0.0.0").isUnspecified()"#,
        r#"!ip("127.0.0.1").isUnspecified()"#,
        r#"ip("127.0.0.1").isLoopback()"#,
        r#"!ip("1.2.3.4").isLoopback()"#,
        r#"ip("224.0.0.1").isLinkLocalMulticast()"#,
        r#"!ip("224.0.1.1").isLinkLocalMulticast()"#,
        r#"ip("169.254.169.254").isLinkLocalUnicast()"#,
        r#"!ip("192.168.0.1").isLinkLocalUnicast()"#,
        r#"ip("192.168.0.1").isGlobalUnicast()"#,
        r#"!ip("255.255.255.255").isGlobalUnicast()"#,
        r#"isIP("2001:db8::68")"#,
        r#"!isIP("2001:db8:::68")"#,
        r#"ip.isCanonical("2001:db8::68")"#,
        r#"!ip.isCanonical("2001:DB8::68")"#,
        r#"ip("::").isUnspecified()"#,
        r#"!ip("::1").isUnspecified()"#,
        r#"ip("::1").isLoopback()"#,
        r#"!ip("2001:db8::abcd").isLoopback()"#,
        r#"ip("ff02::1").isLinkLocalMulticast()"#,
        r#"!ip("fd00::1").isLinkLocalMulticast()"#,
        r#"ip("fe80::1").isLinkLocalUnicast()"#,
        r#"!ip("fd80::1").isLinkLocalUnicast()"#,
        r#"ip("2001:db8::abcd").isGlobalUnicast()"#,
        r#"!ip("ff00::1").isGlobalUnicast()"#,
        r#"type(ip("192.168.0.1")) == net.IP"#,
        r#"ip("192.168.0.1") != ip("192.168.0.2")"#,
    ]);
    values(&[
        (r#"ip("192.168.0.1").family()"#, json!(4)),
        (r#"ip("2001:db8::68").family()"#, json!(6)),
        (r#"string(ip("192.168.0.1"))"#, json!("192.168.0.1")),
        (r#"string(ip("2001:DB8:0:0::68"))"#, json!("2001:db8::68")),
    ]);
    errors(&[
        (
            r#"ip("192.168.0.1.0")"#,
            r#"IP Address "192.168.0.1.0" parse error during conversion from string: ParseAddr("192.168.0.1.0"): IPv4 address too long"#,
        ),
        (
            r#"ip.isCanonical("127.0.0.1.0")"#,
            r#"IP Address "127.0.0.1.0" parse error during conversion from string: ParseAddr("127.0.0.1.0"): IPv4 address too long"#,
        ),
        (
            r#"ip("2001:db8:::68")"#,
            r#"IP Address "2001:db8:::68" parse error during conversion from string: ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit (at ":68")"#,
        ),
        (
            r#"ip("::ffff:192.168.0.1")"#,
            r#"IPv4-mapped IPv6 address "::ffff:192.168.0.1" is not allowed"#,
        ),
        (
            r#"ip("fe80::1%eth0")"#,
            r#"IP address "fe80::1%eth0" with zone value is not allowed"#,
        ),
    ]);
    let err = eval(r#"isIP(cidr("192.168.0.0/24"))"#).unwrap_err();
    assert!(
        err.starts_with(
            "ERROR: <input>:1:5: found no matching overload for 'isIP' applied to '(net.CIDR)'"
        ),
        "{err}"
    );
}

#[test]
fn cidr_library() {
    all_true(&[
        r#"cidr("192.168.0.0/24") == cidr("192.168.0.0/24")"#,
        r#"cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))"#,
        r#"!cidr("192.168.0.0/24").containsIP(ip("192.168.1.1"))"#,
        r#"cidr("192.168.0.0/24").containsIP("192.168.0.1")"#,
        r#"!cidr("192.168.0.0/24").containsIP("192.168.1.1")"#,
        r#"cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))"#,
        r#"cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.1/32"))"#,
        r#"!cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23"))"#,
        r#"!cidr("192.168.0.0/24").containsCIDR(cidr("192.169.0.1/32"))"#,
        r#"cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")"#,
        r#"!cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23")"#,
        r#"cidr("192.168.0.0/24").ip() == ip("192.168.0.0")"#,
        r#"cidr("192.168.0.0/24").masked() == cidr("192.168.0.0/24")"#,
        r#"cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24")"#,
        r#"cidr("2001:db8::/32").containsIP(ip("2001:db8::1"))"#,
        r#"!cidr("2001:db8::/32").containsIP(ip("2001:dc8::1"))"#,
        r#"cidr("2001:db8::/32").containsIP("2001:db8::1")"#,
        r#"!cidr("2001:db8::/32").containsIP("2001:dc8::1")"#,
        r#"cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))"#,
        r#"!cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/31"))"#,
        r#"cidr("2001:db8::/32").containsCIDR("2001:db8::/33")"#,
        r#"!cidr("2001:db8::/32").containsCIDR("2001:db8::/31")"#,
        r#"cidr("2001:db8::/32").ip() == ip("2001:db8::")"#,
        r#"cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32")"#,
        r#"type(cidr("192.168.0.0/24")) == net.CIDR"#,
        r#"isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0")"#,
    ]);
    values(&[
        (r#"cidr("192.168.0.0/24").prefixLength()"#, json!(24)),
        (r#"cidr("2001:db8::/32").prefixLength()"#, json!(32)),
        (r#"string(cidr("192.168.0.0/24"))"#, json!("192.168.0.0/24")),
        (
            r#"string(cidr("192.168.0.1/24").masked())"#,
            json!("192.168.0.0/24"),
        ),
    ]);
    errors(&[
        (
            r#"cidr("192.168.0.0/")"#,
            r#"network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after slash: """#,
        ),
        (
            r#"cidr("2001:db8::/")"#,
            r#"network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("2001:db8::/"): bad bits after slash: """#,
        ),
        (
            r#"cidr("192.168.0.0/24").containsIP("192.168.0")"#,
            r#"IP Address "192.168.0" parse error during conversion from string: ParseAddr("192.168.0"): IPv4 address too short"#,
        ),
    ]);
}

#[test]
fn url_library() {
    values(&[
        (
            r#"url("https://user:pass@example.com:80/path?query=val#fragment").getScheme()"#,
            json!("https"),
        ),
        (
            r#"url("https://example.com:80/path").getHost()"#,
            json!("example.com:80"),
        ),
        (
            r#"url("https://example.com:80/path").getHostname()"#,
            json!("example.com"),
        ),
        (
            r#"url("https://[::1]:80/path").getHostname()"#,
            json!("::1"),
        ),
        (r#"url("https://[::1]/path").getHost()"#, json!("[::1]")),
        (
            r#"url("https://example.com:80/path").getPort()"#,
            json!("80"),
        ),
        (r#"url("https://example.com/path").getPort()"#, json!("")),
        (
            r#"url("https://example.com/path with spaces/").getEscapedPath()"#,
            json!("/path%20with%20spaces/"),
        ),
        (r#"url("https://example.com").getEscapedPath()"#, json!("")),
        (
            r#"url("https://example.com/path?k1=a&k2=b&k2=c").getQuery()"#,
            json!({"k1": ["a"], "k2": ["b", "c"]}),
        ),
        (r#"url("https://example.com/path").getQuery()"#, json!({})),
        (r#"url("/absolute-path").getScheme()"#, json!("")),
    ]);
    all_true(&[
        r#"isURL("https://user:pass@example.com:80/path?query=val#fragment")"#,
        r#"isURL("/absolute-path")"#,
        r#"!isURL("https://a:b:c/")"#,
        r#"!isURL("../relative-path")"#,
        r#"url("https://example.com/p") == url("https://example.com/p")"#,
        r#"url("https://example.com/p") != url("https://example.com/q")"#,
        r#"type(url("/a")) == kubernetes.URL"#,
    ]);
    errors(&[(
        r#"url("../relative-path")"#,
        r#"URL parse error during conversion from string: parse "../relative-path": invalid URI for request"#,
    )]);
}

#[test]
fn semver_library() {
    all_true(&[
        r#"semver("1.2.3") == semver("1.2.3")"#,
        r#"isSemver("1.2.3-beta.1+build.1")"#,
        r#"!isSemver("")"#,
        r#"!isSemver("v1.0.0")"#,
        r#"!isSemver(" 1.0.0")"#,
        r#"!isSemver("1. 0.0")"#,
        r#"!isSemver("1.0.0 ")"#,
        r#"!isSemver("01.01.01")"#,
        r#"!isSemver("1")"#,
        r#"!isSemver("1.1")"#,
        r#"!isSemver("", true)"#,
        r#"!isSemver(" 1.0.0", true)"#,
        r#"!isSemver("1. 0.0", true)"#,
        r#"!isSemver("1.0.0 ", true)"#,
        r#"isSemver("v1.0.0", true)"#,
        r#"isSemver("01.01.01", true)"#,
        r#"isSemver("1", true)"#,
        r#"isSemver("1.1", true)"#,
        r#"semver("v01.01", true) == semver("1.1.0")"#,
        r#"semver("1.2.3") != semver("1.0.0")"#,
        r#"semver("1.0.0").isLessThan(semver("1.2.3"))"#,
        r#"!semver("1.0.0").isLessThan(semver("1.0.0"))"#,
        r#"semver("1.2.3").isGreaterThan(semver("1.0.0"))"#,
        r#"!semver("1.0.0").isGreaterThan(semver("1.0.0"))"#,
        r#"type(semver("1.0.0")) == kubernetes.Semver"#,
    ]);
    values(&[
        (r#"semver("1.2.3").compareTo(semver("1.2.3"))"#, json!(0)),
        (r#"semver("1.0.0").compareTo(semver("1.2.3"))"#, json!(-1)),
        (r#"semver("1.2.3").compareTo(semver("1.0.0"))"#, json!(1)),
        (r#"semver("1.2.3").major()"#, json!(1)),
        (r#"semver("1.2.3").minor()"#, json!(2)),
        (r#"semver("1.2.3").patch()"#, json!(3)),
    ]);
    errors(&[(r#"semver("v1.0")"#, "No Major.Minor.Patch elements found")]);
    // Mixed library types have no common overload: refused at compile
    // time, and at run time when the types only show up then.
    let err = eval(r#"semver("1.0.0").isLessThan(quantity("1"))"#).unwrap_err();
    assert!(
        err.contains("found no matching overload for 'isLessThan' applied to 'kubernetes.Semver.(kubernetes.Quantity)'"),
        "{err}"
    );
    // Several overloads share the name: cel-go names the call's types.
    assert_eq!(
        eval(r#"semver("1.0.0").isLessThan(dyn(quantity("1")))"#),
        Err("no such overload: isLessThan(kubernetes.Semver, kubernetes.Quantity)".to_owned())
    );
    let err = eval(r#"isQuantity([1, 2, 3])"#).unwrap_err();
    assert!(
        err.contains("found no matching overload for 'isQuantity' applied to"),
        "{err}"
    );
    let err = eval(r#"isSemver([1, 2, 3])"#).unwrap_err();
    assert!(
        err.contains("found no matching overload for 'isSemver' applied to"),
        "{err}"
    );
    // Results are typed: a library value is not a number.
    assert!(eval(r#"semver("1.0.0") + 1"#)
        .unwrap_err()
        .contains("found no matching overload for '_+_'"));
    assert!(eval(r#"quantity("1") == ip("1.2.3.4")"#)
        .unwrap_err()
        .contains("found no matching overload for '_==_'"));
}

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG: &str = r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

#[test]
fn format_library() {
    let none = Json::Null;
    values(&[
        (r#"format.dns1123Label().validate("my-label-name")"#, none.clone()),
        (r#"format.dns1123Subdomain().validate("apiextensions.k8s.io")"#, none.clone()),
        (r#"format.qualifiedName().validate("apiextensions.k8s.io/v1beta1")"#, none.clone()),
        (r#"format.dns1123LabelPrefix().validate("my-label-prefix-")"#, none.clone()),
        (r#"format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-")"#, none.clone()),
        (r#"format.dns1035LabelPrefix().validate("my-label-prefix-")"#, none.clone()),
        (r#"format.uri().validate("http://example.com")"#, none.clone()),
        (r#"format.uuid().validate("123e4567-e89b-12d3-a456-426614174000")"#, none.clone()),
        (r#"format.byte().validate("aGVsbG8=")"#, none.clone()),
        (r#"format.date().validate("2021-01-01")"#, none.clone()),
        (r#"format.datetime().validate("2021-01-01T00:00:00Z")"#, none.clone()),
        (r#"format.labelValue().validate("my-cool-label-Value")"#, none.clone()),
        (r#"format.dns1123Label().validate("contains a space")"#, json!([LABEL_MSG])),
        (r#"format.dns1123Subdomain().validate("contains a space")"#, json!([SUBDOMAIN_MSG])),
        (r#"format.dns1035Label().validate("contains a space")"#, json!([DNS1035_MSG])),
        (
            r#"format.qualifiedName().validate("contains a space")"#,
            json!(["name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
        ),
        (r#"format.dns1123LabelPrefix().validate("contains a space-")"#, json!([LABEL_MSG])),
        (r#"format.dns1123SubdomainPrefix().validate("contains a space-")"#, json!([SUBDOMAIN_MSG])),
        (r#"format.dns1035LabelPrefix().validate("contains a space-")"#, json!([DNS1035_MSG])),
        (r#"format.byte().validate("aGVsbG8")"#, json!(["invalid base64"])),
        (r#"format.date().validate("2020-01-32")"#, json!(["invalid date"])),
        (r#"format.datetime().validate("2020-01-32T00:00:00Z")"#, json!(["invalid datetime"])),
        (
            r#"format.labelValue().validate("my-cool-label-Value!!\n\n!!!")"#,
            json!(["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
        ),
    ]);
    all_true(&[
        r#"!format.named("unknown").hasValue()"#,
        r#"format.dns1123Label() != format.dns1123Subdomain()"#,
        r#"format.named("uuid").value() == format.uuid()"#,
        r#"type(format.uuid()) == kubernetes.NamedFormat"#,
    ]);
    for key in [
        "dns1123Label",
        "dns1123Subdomain",
        "dns1035Label",
        "qualifiedName",
        "dns1123LabelPrefix",
        "dns1123SubdomainPrefix",
        "dns1035LabelPrefix",
        "labelValue",
        "uri",
        "uuid",
        "byte",
        "date",
        "datetime",
    ] {
        all_true(&[
            &format!(r#"format.named("{key}").hasValue()"#),
            &format!(r#"format.named("{key}").value() == format.{key}()"#),
        ]);
    }
}

#[test]
fn regex_library_with_constant_and_dynamic_patterns() {
    values(&[
        (r#""abc 123".find("[0-9]+")"#, json!("123")),
        (r#""abc".find("[0-9]+")"#, json!("")),
        (r#""123 abc 456".findAll("[0-9]+")"#, json!(["123", "456"])),
        (r#""123 abc 456".findAll("[0-9]+", 1)"#, json!(["123"])),
        (r#""123 abc 456".findAll("[0-9]+", 0)"#, json!([])),
        // A pattern computed at run time takes the same path.
        (r#""abc 123".find("[0-9]" + "+")"#, json!("123")),
        (r#"["a1", "b2"].map(x, x.find("[0-9]"))"#, json!(["1", "2"])),
    ]);
    let err = eval(r#""abc".find("(" + "")"#).unwrap_err();
    assert!(
        err.starts_with("Illegal regex: error parsing regexp: "),
        "{err}"
    );
    // A constant bad pattern is refused when the rule is loaded, as a
    // program instantiation error with Go's plain text.
    assert_eq!(
        eval(r#""abc".findAll(")")"#),
        Err("error parsing regexp: unexpected ): `)`".to_owned())
    );
    let p = Program::compile(r#""abc".find("(")"#, &ANY, Environment::default()).unwrap_err();
    assert!(p.instantiation);
}

#[test]
fn lists_library() {
    values(&[
        ("[1, 2, 3].sum()", json!(6)),
        ("[1.5, 2.5].sum()", json!(4.0)),
        ("[].sum()", json!(0)),
        ("[3, 1, 2].min()", json!(1)),
        ("[3, 1, 2].max()", json!(3)),
        ("[1, 2, 3, 2].indexOf(2)", json!(1)),
        ("[1, 2, 3, 2].lastIndexOf(2)", json!(3)),
        ("[1, 2].indexOf(5)", json!(-1)),
        ("[1, 2, 2].isSorted()", json!(true)),
        ("[2, 1].isSorted()", json!(false)),
        (
            "optional.unwrap([optional.of(1), optional.ofNonZeroValue(0)])",
            json!([1]),
        ),
        (
            "[optional.of(1), optional.ofNonZeroValue(0)].unwrapOpt()",
            json!([1]),
        ),
        ("[1, 2].first()", json!(1)),
        ("[1, 2].last()", json!(2)),
        ("[].first().hasValue()", json!(false)),
    ]);
    errors(&[
        ("[].min()", "min called on empty list"),
        ("[].max()", "max called on empty list"),
    ]);
}

#[test]
fn lookup_respects_member_and_arity() {
    assert_eq!(lookup("size", false, 1).map(|f| f.name), Some("size"));
    assert_eq!(lookup("size", true, 0).map(|f| f.name), Some("size"));
    assert!(lookup("size", true, 1).is_none());
    assert!(lookup_any("size"));
    assert!(!lookup_any("nope"));
}

#[test]
fn every_row_names_its_overloads_and_versions() {
    for f in super::ALL {
        let ids: Vec<_> = f.overload_ids().collect();
        assert!(!ids.is_empty(), "{} lists no overload", f.name);
        // CRD rules exist from Kubernetes 1.23; nothing newer than this
        // build's newest library is declared, and no overload is older
        // than its function.
        for (id, v) in ids {
            assert!(
                (f.since..=crate::environment::LATEST).contains(&v),
                "{}: {id} since 1.{v}",
                f.name
            );
        }
        assert!(f.since >= 23, "{}: since 1.{}", f.name, f.since);
        assert!(
            !f.member.is_empty() || !f.global.is_empty(),
            "{} cannot be called",
            f.name
        );
    }
    let names: std::collections::HashSet<&str> = super::ALL.iter().map(|f| f.name).collect();
    assert_eq!(names.len(), super::ALL.len(), "a name has two rows");
    assert_eq!(lookup("lists.range", false, 1).map(|f| f.since), Some(34));
    assert_eq!(lookup("quantity", false, 1).map(|f| f.since), Some(28));
    let string = lookup("string", false, 1).expect("string()");
    assert!(string.overload_ids().any(|o| o == ("ip_to_string", 30)));
}

#[test]
fn includes_finds_an_element_or_compares_a_scalar() {
    // Kubernetes' lists library v1 (lists.go `includes`): a list holds the
    // element; any other target is compared with it.
    values(&[
        ("[1, 2, 3].includes(2)", json!(true)),
        ("[1, 2, 3].includes(4)", json!(false)),
        ("[1, 2, 3].includes(2.0)", json!(true)),
        ("[[1], [2]].includes([2])", json!(true)),
        ("['a'].includes(1)", json!(false)),
        ("'model-a'.includes('model-a')", json!(true)),
        ("'model-a'.includes('model-b')", json!(false)),
    ]);
}

#[test]
fn or_and_or_value_run_their_argument_only_when_needed() {
    // cel-go plans `or` and `orValue` as short circuits: an error in an
    // argument that is not needed does not surface.
    values(&[
        ("optional.of(1).orValue(1 / 0)", json!(1)),
        ("optional.of(1).or(optional.of(1 / 0)).value()", json!(1)),
        ("optional.none().orValue(2)", json!(2)),
        ("optional.none().or(optional.of(3)).value()", json!(3)),
    ]);
    errors(&[("optional.none().orValue(1 / 0)", "division by zero")]);
}
