//! The formats the API server enforces on custom resources (those
//! apiextensions keeps in a schema for the version answered as; any other
//! is stripped and ignored): string formats checked as kube-openapi's
//! format registry checks them, and from 1.36 the numeric ones.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::cel::value::k8s::format::{is_dns_label_name, is_dns_subdomain_name};
use crate::kube_version::KubeVersion;

/// A kept format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    DateTime,
    Duration,
    /// isbn, isbn10, isbn13, creditcard, ssn: kept by the API server;
    /// celhook does not check them (see docs/known-differences.md).
    Unchecked,
    /// From 1.35 (compatibility version 1.34).
    K8sShortName,
    K8sLongName,
    /// Numeric formats, kept from 1.36 on integer and number fields: they
    /// check no string, but bound the numbers (`Format::range`).
    Int32,
    Int64,
    Float,
    Double,
}

impl Format {
    /// The format as the API server of `version` keeps it on a field of
    /// the single type `ty` (`None` for none or several, as
    /// int-or-string); `None` for a stripped one. Names are compared
    /// without `-`, as the registry does. Up to 1.35 a string format is
    /// kept on any type (kube-openapi then reports a number as a bad
    /// `date`); from 1.36 only on strings, and integers and numbers keep
    /// their own formats.
    pub fn kept(name: &str, ty: Option<&str>, version: KubeVersion) -> Option<Format> {
        if version.checks_numeric_formats() {
            match (ty, name) {
                (None | Some("string"), _) => {}
                (Some("integer"), "int32") => return Some(Format::Int32),
                (Some("integer"), "int64") => return Some(Format::Int64),
                (Some("number"), "float") => return Some(Format::Float),
                (Some("number"), "double") => return Some(Format::Double),
                _ => return None,
            }
        }
        let key: String = name.chars().filter(|c| *c != '-').collect();
        Some(match key.as_str() {
            "bsonobjectid" => Format::BsonObjectId,
            "uri" => Format::Uri,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "cidr" => Format::Cidr,
            "mac" => Format::Mac,
            "uuid" => Format::Uuid,
            "uuid3" => Format::Uuid3,
            "uuid4" => Format::Uuid4,
            "uuid5" => Format::Uuid5,
            "hexcolor" => Format::HexColor,
            "rgbcolor" => Format::RgbColor,
            "byte" => Format::Byte,
            "password" => Format::Password,
            "date" => Format::Date,
            "datetime" => Format::DateTime,
            "duration" => Format::Duration,
            "isbn" | "isbn10" | "isbn13" | "creditcard" | "ssn" => Format::Unchecked,
            "k8sshortname" if version.checks_k8s_name_formats() => Format::K8sShortName,
            "k8slongname" if version.checks_k8s_name_formats() => Format::K8sLongName,
            _ => return None,
        })
    }

    /// The numeric range a kept numeric format bounds values to:
    /// `(type, format)` as kube-openapi names them in "Checked value must
    /// be of type integer with format int32". Plain `integer` fields are
    /// bounded to int64 (`"default format"`, an empty format).
    pub fn range(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            Format::Int32 => ("integer", "int32"),
            Format::Int64 => ("integer", "int64"),
            Format::Float => ("number", "float"),
            Format::Double => ("number", "double"),
            _ => return None,
        })
    }

    /// True when `s` is valid in this format.
    pub fn valid(self, s: &str) -> bool {
        match self {
            Format::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            Format::Uri => request_uri(s),
            Format::Email => email(s),
            Format::Hostname => hostname(s),
            Format::Ipv4 => s.parse::<Ipv4Addr>().is_ok() || sloppy_ipv4(s),
            Format::Ipv6 => s.contains(':') && s.parse::<Ipv6Addr>().is_ok(),
            Format::Cidr => cidr(s),
            Format::Mac => mac(s),
            Format::Uuid => uuid(s, None),
            Format::Uuid3 => uuid(s, Some(b'3')),
            Format::Uuid4 => uuid(s, Some(b'4')),
            Format::Uuid5 => uuid(s, Some(b'5')),
            Format::HexColor => {
                let h = s.strip_prefix('#').unwrap_or(s);
                matches!(h.len(), 3 | 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
            }
            Format::RgbColor => rgb(s),
            Format::Byte => base64(s),
            Format::Password | Format::Unchecked => true,
            // A DNS label and a DNS subdomain, as kube-openapi's
            // registry checks them.
            Format::K8sShortName => is_dns_label_name(s),
            Format::K8sLongName => is_dns_subdomain_name(s),
            // Numeric formats check numbers, never strings.
            Format::Int32 | Format::Int64 | Format::Float | Format::Double => true,
            Format::Date => date(s),
            Format::DateTime => date_time(s),
            Format::Duration => duration(s),
        }
    }
}

/// Go's `net.ParseIP` accepts leading zeros in IPv4 octets (the API
/// server parses "sloppily"), which Rust's parser refuses.
fn sloppy_ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) && {
                p.parse::<u16>().is_ok_and(|n| n <= 255)
            }
        })
}

fn cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if ip.contains(':') {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    } else {
        (ip.parse::<Ipv4Addr>().is_ok() || sloppy_ipv4(ip)) && bits <= 32
    }
}

fn mac(s: &str) -> bool {
    // Go's net.ParseMAC: 6, 8 or 20 octets, separated by `:` or `-` in
    // pairs, or by `.` in groups of four hex digits.
    let pairs = |sep: char| {
        let parts: Vec<&str> = s.split(sep).collect();
        matches!(parts.len(), 6 | 8 | 20)
            && parts
                .iter()
                .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let quads = {
        let parts: Vec<&str> = s.split('.').collect();
        matches!(parts.len(), 3 | 4 | 10)
            && parts
                .iter()
                .all(|p| p.len() == 4 && p.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    pairs(':') || pairs('-') || quads
}

fn uuid(s: &str, version: Option<u8>) -> bool {
    // Dashes optional, case-insensitive, as the registry's patterns.
    let hex: Vec<u8> = s.bytes().filter(|b| *b != b'-').collect();
    let dashed = s.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| s.as_bytes()[i] == b'-')
        && s.bytes().filter(|b| *b == b'-').count() == 4;
    let plain = s.len() == 32;
    if !(dashed || plain) || hex.len() != 32 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            hex[12] == v
                && (v == b'3' || matches!(hex[16].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b'))
        }
    }
}

fn rgb(s: &str) -> bool {
    let Some(inner) = s.strip_prefix("rgb(").and_then(|r| r.strip_suffix(')')) else {
        return false;
    };
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.parse::<u16>().is_ok_and(|n| n <= 255))
}

fn base64(s: &str) -> bool {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
}

fn date(s: &str) -> bool {
    crate::cel::value::time::parse_full_date(s).is_some()
}

/// kube-openapi's date-time: a date, `t`, then `hh:mm:ss[.frac]` and `z`
/// or an offset, compared lower-cased.
fn date_time(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let Some((day, time)) = lower.split_once('t') else {
        return false;
    };
    if !date(day) {
        return false;
    }
    let b = time.as_bytes();
    let two = |i: usize| b.get(i..i + 2).filter(|d| d.iter().all(u8::is_ascii_digit));
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') {
        return false;
    }
    if h > b"23".as_slice() || m > b"59".as_slice() || sec > b"59".as_slice() {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &frac[digits..];
    }
    match rest.as_bytes() {
        b"z" => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-') && [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit())
        }
        _ => false,
    }
}

/// A duration as kube-openapi reads one: Go's `time.ParseDuration`
/// (`1h30m`, `-1.5s`), or whole numbers with worded units (`3 days`,
/// `1h 30m`). The same parser types the value for CEL, so a value passes
/// this check exactly when a rule sees it as a duration.
fn duration(s: &str) -> bool {
    crate::cel::value::time::parse_format_duration(s).is_some()
}

fn hostname(s: &str) -> bool {
    s.len() <= 255
        && !s.is_empty()
        && s.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

fn email(s: &str) -> bool {
    // net/mail's addr-spec, for the common forms: local@domain, or
    // `Name <local@domain>`.
    let addr = match (s.rfind('<'), s.strip_suffix('>')) {
        (Some(i), Some(_)) => &s[i + 1..s.len() - 1],
        _ => s,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !local.contains(char::is_whitespace)
        && !domain.contains(char::is_whitespace)
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

/// Go's `url.ParseRequestURI`: an absolute URI (`scheme:...`) or an
/// absolute path.
fn request_uri(s: &str) -> bool {
    if s.starts_with('/') {
        return !s.contains(char::is_whitespace);
    }
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_refuse_as_the_registry() {
        let cases: &[(&str, &str, bool)] = &[
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567e89b12d3a456426614174000", true),
            ("uuid", "abc", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("date", "2024-02-29", true),
            ("date", "2024-13-01", false),
            ("date-time", "2024-02-29T10:20:30Z", true),
            ("date-time", "2024-02-29t10:20:30.5+01:00", true),
            ("date-time", "2024-02-29 10:20:30Z", false),
            ("date-time", "yesterday", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("hostname", "a.example.com", true),
            ("hostname", "-a.example.com", false),
            ("mac", "01:23:45:67:89:ab", true),
            ("mac", "01:23:45", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("duration", "1h 30m", true),
            ("duration", "2 Weeks", true),
            ("duration", "2 hrs", false),
            ("duration", "99999999999999999999h", false),
            ("uri", "https://example.com/x", true),
            ("uri", "/path", true),
            ("uri", "relative/path", false),
            ("email", "a@example.com", true),
            ("email", "nobody", false),
            ("hexcolor", "#ff00AA", true),
            ("rgbcolor", "rgb(1, 2, 300)", false),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
        ];
        let newest = KubeVersion::NEWEST;
        for (format, value, ok) in cases {
            let f = Format::kept(format, Some("string"), newest).expect("kept");
            assert_eq!(f.valid(value), *ok, "{format} {value}");
        }
        for stripped in ["int32", "int64", "double", "quantity"] {
            assert!(
                Format::kept(stripped, Some("string"), newest).is_none(),
                "{stripped}"
            );
        }
    }

    #[test]
    fn which_formats_are_kept_depends_on_the_version_and_the_type() {
        let at = |m: &str| m.parse::<KubeVersion>().unwrap();
        // The Kubernetes names are enforced from 1.35 (compatibility 1.34).
        assert!(Format::kept("k8s-short-name", Some("string"), at("1.34")).is_none());
        let short = Format::kept("k8s-short-name", Some("string"), at("1.35")).expect("kept");
        let long = Format::kept("k8s-long-name", None, at("1.35")).expect("kept");
        for (value, short_ok, long_ok) in [
            ("a", true, true),
            ("a-", false, false),
            ("a.b", false, true),
            ("a.-", false, false),
            ("A", false, false),
            (&"a".repeat(64) as &str, false, true),
        ] {
            assert_eq!(
                (short.valid(value), long.valid(value)),
                (short_ok, long_ok),
                "{value}"
            );
        }
        // Numeric formats from 1.36, on their own types only; a string
        // format on another type is kept before 1.36 and dropped after.
        assert!(Format::kept("int32", Some("integer"), at("1.35")).is_none());
        assert_eq!(
            Format::kept("int32", Some("integer"), at("1.36")),
            Some(Format::Int32)
        );
        assert_eq!(
            Format::kept("double", Some("number"), at("1.36")),
            Some(Format::Double)
        );
        assert!(Format::kept("int32", Some("number"), at("1.36")).is_none());
        assert_eq!(
            Format::kept("date", Some("integer"), at("1.35")),
            Some(Format::Date)
        );
        assert!(Format::kept("date", Some("integer"), at("1.36")).is_none());
        assert!(Format::kept("date", Some("object"), at("1.36")).is_none());
        // int-or-string has two types: string formats stay.
        assert_eq!(Format::kept("date", None, at("1.36")), Some(Format::Date));
    }
}
