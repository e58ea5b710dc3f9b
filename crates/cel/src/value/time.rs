//! Timestamps and durations as cel-go reads and prints them (Go's
//! RFC 3339 and duration syntax).

use chrono::{DateTime, Datelike, FixedOffset, TimeDelta};

use crate::value::error::EvalError;

/// Parses an RFC 3339 timestamp as strictly as cel-go (Go's time.RFC3339):
/// upper-case `T` and `Z`, no leap seconds, years 1 to 9999.
pub fn parse_timestamp(s: &str) -> Option<DateTime<FixedOffset>> {
    parse_timestamp_unbounded(s).filter(in_range)
}

/// As [`parse_timestamp`], without the year range: `None` for text that is
/// not a timestamp at all. Go also takes a comma before the fraction and
/// more than nine fractional digits (dropping the excess).
pub fn parse_timestamp_unbounded(s: &str) -> Option<DateTime<FixedOffset>> {
    let s = &normalize_fraction(s)?;
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape || &s[17..19] > "59" {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 9 {
            return None;
        }
        rest = &frac[n..];
    }
    let zone_ok = rest == "Z"
        || (rest.len() == 6
            && rest.is_ascii()
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':'
            && rest[1..3].bytes().all(|c| c.is_ascii_digit())
            && rest[4..6].bytes().all(|c| c.is_ascii_digit()));
    if !zone_ok {
        return None;
    }
    let year: i32 = s[0..4].parse().ok()?;
    if year == 0 {
        // chrono reads year 0; cel-go calls it out of range.
        let shifted = format!("0001{}", &s[4..]);
        return DateTime::parse_from_rfc3339(&shifted)
            .ok()
            .and_then(|t| t.with_year(0));
    }
    DateTime::parse_from_rfc3339(s).ok()
}

/// `,5` as `.5`, and a fraction cut to nine digits.
fn normalize_fraction(s: &str) -> Option<String> {
    // Byte 19 must start a character: `2025-01-01T00:00:0\u{200a}...` is
    // not a timestamp (and must not be split inside a character).
    if s.len() < 20 || !s.is_char_boundary(19) {
        return None;
    }
    let (head, rest) = s.split_at(19);
    let rest = match rest.strip_prefix(',') {
        Some(r) => format!(".{r}"),
        None => rest.to_owned(),
    };
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n > 9 {
            return Some(format!("{head}.{}{}", &frac[..9], &frac[n..]));
        }
    }
    Some(format!("{head}{rest}"))
}

/// cel-go's timestamps run from year 1 to year 9999.
pub fn in_range(t: &DateTime<FixedOffset>) -> bool {
    (1..=9999).contains(&t.naive_utc().year())
}

/// Prints a timestamp as cel-go does: RFC 3339 with the fraction's trailing
/// zeros dropped, `Z` for UTC, the written offset otherwise.
pub fn format_timestamp(t: &DateTime<FixedOffset>) -> String {
    let secs = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    let frac = if nanos == 0 {
        String::new()
    } else {
        let f = format!("{nanos:09}");
        format!(".{}", f.trim_end_matches('0'))
    };
    let zone = if t.offset().local_minus_utc() == 0 {
        "Z".to_owned()
    } else {
        t.format("%:z").to_string()
    };
    format!("{secs}{frac}{zone}")
}

/// Parses a Go duration string (`1h30m`, `-1.5s`, `300ms`, `2us`).
pub fn parse_duration(s: &str) -> Result<TimeDelta, EvalError> {
    let bad = || EvalError::new(format!("invalid duration: {s:?}"));
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(TimeDelta::zero());
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (num, tail) = rest.split_at(num_end);
        if num.is_empty() {
            return Err(bad());
        }
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let nanos_per: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| bad())?
        };
        total += whole * nanos_per;
        if !frac_part.is_empty() {
            let digits: i128 = frac_part.parse().map_err(|_| bad())?;
            let scale = 10i128.pow(frac_part.len() as u32);
            total += digits * nanos_per / scale;
        }
        rest = tail;
    }
    if neg {
        total = -total;
    }
    i64::try_from(total)
        .ok()
        .map(TimeDelta::nanoseconds)
        .ok_or_else(bad)
}

/// Formats a duration as cel-go prints one: seconds with up to nine
/// fractional digits, e.g. `90s`, `1.5s`.
pub fn format_duration(d: TimeDelta) -> String {
    // cel-go prints the seconds as a float64 in its shortest form.
    let nanos = d.num_nanoseconds().unwrap_or(i64::MAX);
    format!("{}s", nanos as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("1h30m").unwrap(), TimeDelta::minutes(90));
        assert_eq!(
            parse_duration("1.5s").unwrap(),
            TimeDelta::milliseconds(1500)
        );
        assert_eq!(
            parse_duration("-300ms").unwrap(),
            TimeDelta::milliseconds(-300)
        );
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("1x").is_err());
        assert_eq!(format_duration(TimeDelta::milliseconds(1500)), "1.5s");
        assert_eq!(format_duration(TimeDelta::seconds(90)), "90s");
    }
}
