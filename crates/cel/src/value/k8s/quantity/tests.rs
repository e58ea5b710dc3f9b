use super::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn parses_suffixes_exactly() {
    assert_eq!(q("12Mi").as_i64(), Some(12 * 1024 * 1024));
    assert_eq!(q("50k").as_i64(), Some(50_000));
    assert_eq!(q("1e3").as_i64(), Some(1000));
    assert_eq!(q("1E").as_i64(), Some(1_000_000_000_000_000_000));
    assert_eq!(q("-0.5k").as_i64(), Some(-500));
    assert_eq!(q("0.5Ki").to_string(), "512");
    assert_eq!(q("1.5").to_string(), "1500m");
    assert!(q("200M").cmp(&q("0.2G")).is_eq());
}

#[test]
fn reports_apimachinery_errors() {
    assert_eq!(Quantity::parse("10Mo").unwrap_err(), ERR_FORMAT);
    assert_eq!(Quantity::parse("10Mm").unwrap_err(), ERR_SUFFIX);
    assert_eq!(Quantity::parse("").unwrap_err(), ERR_FORMAT);
    assert_eq!(Quantity::parse("1.2.3").unwrap_err(), ERR_FORMAT);
    assert_eq!(Quantity::parse("1e").unwrap_err(), ERR_SUFFIX);
}

#[test]
fn integer_answers_follow_the_int64_path() {
    // A negative scale is never an integer, even when whole.
    assert_eq!(q("1000m").as_i64(), None);
    assert_eq!(q("1500m").as_i64(), None);
    assert_eq!(q("9999999999999999999999999999999999999G").as_i64(), None);
    assert_eq!(q("50").as_i64(), Some(50));
}

#[test]
fn prints_canonical_forms() {
    for (input, want) in [
        ("1Ki", "1Ki"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("-1024Mi", "-1Gi"),
        ("1536Mi", "1536Mi"),
        ("1025", "1025"),
        ("0.5", "500m"),
        ("1.08", "1080m"),
        ("1e9", "1e9"),
        ("80e-3", "80e-3"),
        ("1000000000000000000", "1E"),
        ("10000000000000000000", "10E"),
        ("9999999999999999999.1", "9999999999999999999100m"),
        ("-1.0000000000000000001E", "-1000000000000000000100m"),
        ("10000000000000000000000m", "10E"),
        ("0", "0"),
        ("-0", "0"),
    ] {
        assert_eq!(q(input).to_string(), want, "{input}");
    }
    // Arithmetic with an int takes the exponent format only from zero.
    assert_eq!(q("50k").add(&Quantity::from_i64(20)).to_string(), "50020");
    assert_eq!(q("0").add(&Quantity::from_i64(20)).to_string(), "20");
    assert_eq!(q("1Ki").sub(&q("1Ki")).add(&q("2Ki")).to_string(), "2Ki");
}

#[test]
fn int64_path_matches_apimachinery() {
    let cases = [
        ("-999999999999999999", Some(-999_999_999_999_999_999)),
        ("999999999999999999.0", None),
        ("9999999999999999999", None),
        ("1E", Some(1_000_000_000_000_000_000)),
        ("-1.0E", Some(-1_000_000_000_000_000_000)),
        ("1000000000000000000", None),
        ("1.000000000000000001E", None),
        ("10E", None),
    ];
    for (input, want) in cases {
        assert_eq!(q(input).as_i64(), want, "{input}");
    }
}

#[test]
fn rounds_up_to_nano_units() {
    assert!(q("0.0000000001").cmp(&q("1n")).is_eq());
    assert!(q("-0.0000000001").cmp(&q("-1n")).is_eq());
}

#[test]
fn huge_exponents_stay_cheap() {
    let tiny = q("1e-2000000000");
    assert!(tiny.cmp(&q("1n")).is_eq());
    let huge = q("1e2000000000");
    assert!(huge.cmp(&q("1E")).is_gt());
    assert!(q("-1e2000000000").cmp(&q("-1E")).is_lt());
    assert_eq!(huge.as_i64(), None);
    assert_eq!(q("0e2000000000").as_i64(), Some(0));
    assert!(huge.add(&q("1")).cmp(&huge).is_eq());
    // Canonical exponents are multiples of three.
    assert_eq!(huge.to_string(), "100e1999999998");
    assert!(huge.approximate_f64().is_infinite());
}

#[test]
fn int32_scales_wrap_as_go_does() {
    // Found by an audit: each of these overflowed an i32 (a panic with
    // overflow checks on). Go's int32 arithmetic wraps instead.
    // The denominator's digits wrap the scale from the bottom to the top.
    let wrapped = q("1.5e-2147483648");
    assert!(wrapped.cmp(&q("15e2147483647")).is_eq());
    assert!(Quantity::parse("1.5e2147483648").is_ok());
    // Scales 2^32 - 1 apart: the wrapped difference scales by nothing,
    // so Go's sum of 1e2147483647 and 1n is 2n.
    assert!(q("1e2147483647").add(&q("1n")).cmp(&q("2n")).is_eq());
    assert!(q("1n").add(&q("1e2147483647")).cmp(&q("2n")).is_eq());
    // A term of more digits than the exponents' gap is not dropped: the
    // sum is exact, and larger than either.
    let long = q(&"1".repeat(5000));
    let sum = long.add(&q("1e4097"));
    assert!(sum.cmp(&long).is_gt());
    assert!(q("1e4097").add(&long).cmp(&sum).is_eq());
    assert!(sum.cmp(&q("1e4097")).is_gt());
    // One far below the other's last digit is.
    assert!(q("1e5000").add(&q("1")).cmp(&q("1e5000")).is_eq());
    assert!(q("1").add(&q("1e5000")).cmp(&q("1e5000")).is_eq());
    // A zero in arbitrary precision makes the sum so, as in Go: not an
    // integer to `asInteger`.
    let fine_zero = q("0.0000000000000000000");
    assert_eq!(q("5").add(&fine_zero).as_i64(), None);
    assert_eq!(fine_zero.add(&q("5")).as_i64(), None);
    assert_eq!(q("5").sub(&fine_zero).as_i64(), None);
    assert!(q("5").add(&fine_zero).cmp(&q("5")).is_eq());
    // A zero keeps any exponent; adding it changes nothing, at once.
    let zero = q("0.000000000000000000e-2147483648");
    assert!(q("1").add(&zero).cmp(&q("1")).is_eq());
    assert!(zero.add(&q("1")).cmp(&q("1")).is_eq());
    let zero_up = q("0.000000000000000000e2147483647");
    assert!(zero_up
        .add(&q("0.000000000000000000e-20"))
        .cmp(&q("0"))
        .is_eq());
    // Printing strips the zero into a wrapped exponent, then takes one
    // step back to a multiple of three, as AsCanonicalBytes does.
    assert_eq!(q("10e2147483647").to_string(), "10e2147483647");
}

#[test]
fn caps_binary_si_at_int64_max() {
    assert!(q("100000Ei").cmp(&Quantity::from_i64(i64::MAX)).is_eq());
    assert!(q("100000E").cmp(&Quantity::from_i64(i64::MAX)).is_gt());
}

#[test]
fn arithmetic_is_exact() {
    assert!(q("50k").add(&q("20")).cmp(&q("50.02k")).is_eq());
    assert!(q("50k").sub(&q("20")).cmp(&q("49.98k")).is_eq());
    let big = q("9999999999999999999999999999999999999");
    assert!(big.add(&q("1")).cmp(&big.add(&q("2"))).is_lt());
    assert_eq!(q("50.703k").approximate_f64(), 50703.0);
}
