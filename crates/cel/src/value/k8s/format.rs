//! The named formats of the CEL `format` library (`format.dns1123Label()`,
//! `format.named("uuid")`, ...) and their `validate` functions, returning
//! the exact messages of k8s.io/apimachinery's validation helpers. The
//! patterns are simple enough to check by hand, which avoids a regex engine
//! (and its compile cost) per format.

use super::url::GoUrl;

/// A named format: its name (as the API server compares formats) and its
/// validation function (empty list: valid).
#[derive(Debug)]
pub struct NamedFormat {
    /// The key of `format.named(key)` / `format.<key>()`.
    pub key: &'static str,
    /// The format's name.
    pub name: &'static str,
    pub validate: fn(&str) -> Vec<String>,
    /// The regex size the API server charges `validate` for.
    pub max_regex_size: usize,
}

/// The regex size the static estimate assumes for any named format.
pub const MAX_NAME_FORMAT_REGEX_SIZE: usize = 128;

static FORMATS: [NamedFormat; 13] = [
    NamedFormat {
        key: "dns1123Label",
        name: "DNS1123Label",
        validate: |s| dns1123_label(s),
        max_regex_size: 30,
    },
    NamedFormat {
        key: "dns1123Subdomain",
        name: "DNS1123Subdomain",
        validate: |s| dns1123_subdomain(s, "characters"),
        max_regex_size: 60,
    },
    NamedFormat {
        key: "dns1035Label",
        name: "DNS1035Label",
        validate: |s| dns1035_label(s),
        max_regex_size: 30,
    },
    NamedFormat {
        key: "qualifiedName",
        name: "QualifiedName",
        validate: qualified_name,
        max_regex_size: 60,
    },
    NamedFormat {
        key: "dns1123LabelPrefix",
        name: "DNS1123LabelPrefix",
        validate: |s| dns1123_label(&mask_trailing_dash(s)),
        max_regex_size: 30,
    },
    NamedFormat {
        key: "dns1123SubdomainPrefix",
        name: "DNS1123SubdomainPrefix",
        validate: |s| dns1123_subdomain(&mask_trailing_dash(s), "characters"),
        max_regex_size: 60,
    },
    NamedFormat {
        key: "dns1035LabelPrefix",
        name: "DNS1035LabelPrefix",
        validate: |s| dns1035_label(&mask_trailing_dash(s)),
        max_regex_size: 30,
    },
    NamedFormat {
        key: "labelValue",
        name: "LabelValue",
        validate: label_value,
        max_regex_size: 40,
    },
    NamedFormat {
        key: "uri",
        name: "URI",
        validate: |s| match GoUrl::parse_request_uri(s) {
            Ok(_) => Vec::new(),
            Err(e) => vec![e],
        },
        max_regex_size: 1103,
    },
    // kube-openapi strfmt's formats, entries alike but for their test,
    // message and pattern size: a yes or no with one message each. Kept as
    // entries: `validate` is a plain fn, so each needs its own closure.
    NamedFormat {
        key: "uuid",
        name: "uuid",
        validate: |s| check(is_uuid(s), "does not match the UUID format"),
        max_regex_size: UUID_PATTERN_LEN,
    },
    NamedFormat {
        key: "byte",
        name: "byte",
        validate: |s| check(is_base64(s), "invalid base64"),
        max_regex_size: 84,
    },
    NamedFormat {
        key: "date",
        name: "date",
        validate: |s| check(is_date(s), "invalid date"),
        max_regex_size: DATE_TIME_PATTERN_LEN,
    },
    NamedFormat {
        key: "datetime",
        name: "datetime",
        validate: |s| check(is_datetime(s), "invalid datetime"),
        max_regex_size: DATE_TIME_PATTERN_LEN,
    },
];

/// Lengths of kube-openapi strfmt's UUID and date-time patterns, which the
/// API server uses as those formats' regex sizes.
const UUID_PATTERN_LEN: usize =
    "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$".len();
const DATE_TIME_PATTERN_LEN: usize =
    "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$".len();

/// The format named `key`, if any.
pub fn by_key(key: &str) -> Option<&'static NamedFormat> {
    FORMATS.iter().find(|f| f.key == key)
}

fn check(ok: bool, msg: &str) -> Vec<String> {
    if ok {
        Vec::new()
    } else {
        vec![msg.to_owned()]
    }
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`: message, examples, and the pattern.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// The apiserver's `maskTrailingDash`: note that it drops two characters
/// before appending `a` (so `abc-` is checked as `aba`).
fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        // Byte-based like Go; a multi-byte character before the dash makes
        // the name invalid either way.
        let cut = s.len() - 2;
        let head = s.get(..cut).unwrap_or("\u{0}");
        return format!("{head}a");
    }
    s.to_owned()
}

/// `[first]([mid]*[last])?` with the given character classes.
fn matches_label(
    s: &str,
    first: fn(u8) -> bool,
    mid: fn(u8) -> bool,
    last: fn(u8) -> bool,
) -> bool {
    let b = s.as_bytes();
    match b {
        [] => false,
        [c] => first(*c),
        [f, middle @ .., l] => first(*f) && middle.iter().all(|c| mid(*c)) && last(*l),
    }
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn lower_alnum_dash(c: u8) -> bool {
    lower_alnum(c) || c == b'-'
}

fn is_dns1123_label(s: &str) -> bool {
    matches_label(s, lower_alnum, lower_alnum_dash, lower_alnum)
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns1123_label)
}

/// apimachinery's `MaxLenError`, worded in the unit its caller names
/// (`bytes` or `characters`: a byte length either way).
fn max_len(errs: &mut Vec<String>, s: &str, max: usize, unit: &str) {
    if s.len() > max {
        errs.push(format!("must be no more than {max} {unit}"));
    }
}

/// apimachinery's `NameIsDNSLabel` (a namespace's name).
pub fn is_dns_label_name(s: &str) -> bool {
    s.len() <= 63 && is_dns1123_label(s)
}

/// apimachinery's `NameIsDNSSubdomain` (a service account's name).
pub fn is_dns_subdomain_name(s: &str) -> bool {
    s.len() <= 253 && is_dns1123_subdomain(s)
}

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    max_len(&mut errs, s, 63, "characters");
    if !is_dns1123_label(s) {
        if is_dns1123_subdomain(s) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`, its length limit worded in `unit`: `bytes` as
/// `content.IsDNS1123Subdomain` words it (a qualified name's prefix),
/// `characters` for the named format.
pub fn dns1123_subdomain(s: &str, unit: &str) -> Vec<String> {
    let mut errs = Vec::new();
    max_len(&mut errs, s, 253, unit);
    if !is_dns1123_subdomain(s) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    max_len(&mut errs, s, 63, "characters");
    if !matches_label(s, |c| c.is_ascii_lowercase(), lower_alnum_dash, lower_alnum) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

fn is_label_key_name(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    matches_label(
        s,
        alnum,
        |c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'),
        alnum,
    )
}

/// `content.IsLabelKey` (the qualified-name check): also what celhook
/// checks of label keys in selectors and of matchCondition names.
pub fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                for m in dns1123_subdomain(prefix, "bytes") {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_owned());
    }
    if !is_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `content.IsLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    max_len(&mut errs, s, 63, "bytes");
    if !(s.is_empty() || is_label_key_name(s)) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// kube-openapi strfmt's UUID pattern: 8-4-4-4-12 hex digits, any case,
/// each hyphen optional.
fn is_uuid(s: &str) -> bool {
    let mut rest = s.as_bytes();
    for (i, n) in [8usize, 4, 4, 4, 12].into_iter().enumerate() {
        if i > 0 {
            if let [b'-', tail @ ..] = rest {
                rest = tail;
            }
        }
        if rest.len() < n || !rest[..n].iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        rest = &rest[n..];
    }
    rest.is_empty()
}

/// govalidator's `IsBase64` pattern: whole groups of four standard-alphabet
/// characters, at least one, the last padded with `=` or `==` (no check of
/// the padding bits, unlike a decoder; empty is not base64).
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() % 4 != 0 {
        return false;
    }
    let alpha = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    match b {
        [head @ .., b'=', b'='] | [head @ .., b'='] => head.iter().all(alpha),
        all => all.iter().all(alpha),
    }
}

/// Go's `time.Parse("2006-01-02", s)`: four-digit year, two-digit month and
/// day, a real calendar date.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    match (digits(0..4), digits(5..7), digits(8..10)) {
        (Some(y), Some(m), Some(d)) => chrono::NaiveDate::from_ymd_opt(y as i32, m, d).is_some(),
        _ => false,
    }
}

/// strfmt's `IsDateTime`: a date, a `t`, then `HH:MM:SS[.frac]` and `z` or
/// a numeric offset (case-insensitive).
fn is_datetime(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let t = parts[1].as_bytes();
    let two = |i: usize| -> Option<&[u8]> {
        let p = t.get(i..i + 2)?;
        p.iter().all(u8::is_ascii_digit).then_some(p)
    };
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if t.get(2) != Some(&b':') || t.get(5) != Some(&b':') {
        return false;
    }
    // `(.[0-9]+)?` then the zone; the fraction's first character may be
    // anything, so try the zone right after the seconds too.
    let zone_ok = |zone: &[u8]| {
        zone == b"z"
            || (zone.len() == 6
                && matches!(zone[0], b'+' | b'-')
                && zone[1..3].iter().all(u8::is_ascii_digit)
                && zone[3] == b':'
                && zone[4..6].iter().all(u8::is_ascii_digit))
    };
    let rest = t.get(8..).unwrap_or_default();
    let with_fraction = rest.len() > 1 && {
        let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        digits > 0 && zone_ok(&rest[1 + digits..])
    };
    let zone_ok = with_fraction || zone_ok(rest);
    zone_ok && h <= b"23".as_slice() && m <= b"59".as_slice() && sec <= b"59".as_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(key: &str, s: &str) -> Vec<String> {
        (by_key(key).expect("format").validate)(s)
    }

    #[test]
    fn prefix_formats_mask_the_trailing_dash() {
        assert!(v("dns1123LabelPrefix", "my-label-prefix-").is_empty());
        assert!(v("dns1123SubdomainPrefix", "mysubdomain.prefix.-").is_empty());
        assert!(v("dns1035LabelPrefix", "my-label-prefix-").is_empty());
    }

    #[test]
    fn label_with_dots_says_so() {
        assert_eq!(v("dns1123Label", "a.b"), vec!["must not contain dots"]);
        assert_eq!(v("dns1123Label", &"a".repeat(64)).len(), 1);
        assert_eq!(
            v("dns1123Label", &"a".repeat(64))[0],
            "must be no more than 63 characters"
        );
    }

    #[test]
    fn qualified_names_check_prefix_and_name() {
        assert!(v("qualifiedName", "apiextensions.k8s.io/v1beta1").is_empty());
        assert_eq!(
            v("qualifiedName", "/a"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(v("qualifiedName", "a/b/c").len(), 1);
        assert!(v("qualifiedName", "a/b/c")[0].starts_with("a valid label key must consist"));
    }

    #[test]
    fn strfmt_formats() {
        assert!(v("uuid", "123e4567-e89b-12d3-a456-426614174000").is_empty());
        assert!(v("uuid", "123e4567e89b12d3a456426614174000").is_empty());
        assert!(v("uuid", "123E4567-e89b12d3-a456-426614174000").is_empty());
        assert!(!v("uuid", "123e4567-e89b-12d3-a456-4266141740001").is_empty());
        assert!(v("byte", "aGk=").is_empty());
        assert!(v("byte", "aQ==").is_empty());
        assert_eq!(v("byte", ""), vec!["invalid base64"]);
        assert_eq!(v("byte", "a=b="), vec!["invalid base64"]);
        assert_eq!(v("uuid", "nope"), vec!["does not match the UUID format"]);
        assert!(v("date", "2020-01-01").is_empty());
        assert_eq!(v("date", "2020-01-32"), vec!["invalid date"]);
        assert!(v("datetime", "2020-01-01T00:00:00Z").is_empty());
        assert!(v("datetime", "2020-01-01T00:00:00.123+01:00").is_empty());
        assert_eq!(
            v("datetime", "2020-01-32T00:00:00Z"),
            vec!["invalid datetime"]
        );
        assert_eq!(
            v("datetime", "2020-01-01T24:00:00Z"),
            vec!["invalid datetime"]
        );
        assert_eq!(v("byte", "aGVsbG8"), vec!["invalid base64"]);
    }
}
