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

/// A full date, `YYYY-MM-DD`, as Go's `time.Parse("2006-01-02")` reads
/// one: exactly four, two and two digits (chrono's `%Y` alone would take a
/// sign and any number of digits).
pub fn parse_full_date(s: &str) -> Option<chrono::NaiveDate> {
    let b = s.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    if !shaped {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().ok();
    chrono::NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)
}

/// Parses a Go duration string (`1h30m`, `-1.5s`, `300ms`, `2us`) exactly as
/// Go's `time.ParseDuration`, which cel-go calls: the same accepted forms,
/// the same overflow errors, and the same float step for fractions, so a
/// fraction rounds as it does in the API server.
pub fn parse_duration(s: &str) -> Result<TimeDelta, EvalError> {
    // Go's bound: the magnitude may reach 2^63 only for a negative duration.
    const LIMIT: u64 = 1 << 63;
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
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let (whole, after_int) = leading_int(rest).ok_or_else(bad)?;
        let had_int = after_int.len() != rest.len();
        rest = after_int;
        let (mut frac, mut scale, mut had_frac) = (0u64, 1f64, false);
        if let Some(after_dot) = rest.strip_prefix('.') {
            let (f, sc, after_frac) = leading_fraction(after_dot);
            (frac, scale, had_frac) = (f, sc, after_frac.len() != after_dot.len());
            rest = after_frac;
        }
        if !had_int && !had_frac {
            return Err(bad());
        }
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let (unit, tail) = rest.split_at(unit_end);
        let nanos_per: u64 = match unit {
            "ns" => 1,
            // Go accepts both the micro sign and the Greek mu.
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        if whole > LIMIT / nanos_per {
            return Err(bad());
        }
        let mut part = whole * nanos_per;
        if frac > 0 {
            // Go converts through float64 here; a cast of a value below 2^64
            // truncates as Go's does.
            part += (frac as f64 * (nanos_per as f64 / scale)) as u64;
            if part > LIMIT {
                return Err(bad());
            }
        }
        // Go adds in uint64 and checks after: 2^63 + 2^63 wraps to 0.
        total = total.wrapping_add(part);
        if total > LIMIT {
            return Err(bad());
        }
        rest = tail;
    }
    if neg {
        // -2^63 is the one magnitude that fits only when negative.
        return Ok(TimeDelta::nanoseconds(0i64.wrapping_sub_unsigned(total)));
    }
    i64::try_from(total)
        .ok()
        .map(TimeDelta::nanoseconds)
        .ok_or_else(bad)
}

/// Parses a string of the OpenAPI `duration` format as the API server types
/// it for CEL (kube-openapi's `strfmt.ParseDuration`, unchanged in every
/// release through 1.37): a Go duration, or else every whole number followed
/// by a worded unit anywhere in the text, summed (`3 days`, `1h 30m`, `in 2
/// weeks`); other text around them is ignored. Hand-written rather than a
/// regex: the one pattern is a flat scan.
pub fn parse_format_duration(s: &str) -> Option<TimeDelta> {
    if let Ok(d) = parse_duration(s) {
        return Some(d);
    }
    // The units, each a group whose last entry also matches as a prefix
    // (`minutes` is `min`); the first entry names the size.
    const UNITS: [(&[&str], i64); 8] = [
        (&["ns", "nano"], 1),
        (&["us", "\u{b5}s", "micro"], 1_000),
        (&["ms", "milli"], 1_000_000),
        (&["s", "sec"], 1_000_000_000),
        (&["m", "min"], 60_000_000_000),
        (&["h", "hr", "hour"], 3_600_000_000_000),
        (&["d", "day"], 86_400_000_000_000),
        (&["w", "wk", "week"], 604_800_000_000_000),
    ];
    // Go's `\s`: tab, newline, form feed, carriage return and space.
    let space = |c: char| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ');
    let letter = |c: char| c.is_ascii_alphabetic() || c == '\u{b5}';
    let (mut total, mut matched) = (0i64, false);
    let mut rest = s;
    // Each match of `(\d+)\s*([A-Za-zµ]+)`, leftmost first: a run of digits
    // followed by letters (spaces between), or else passed over whole.
    while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
        rest = &rest[at..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let after = rest[digits..].trim_start_matches(space);
        let letters = after.len() - after.trim_start_matches(letter).len();
        if letters == 0 {
            rest = &rest[digits..];
            continue;
        }
        // Go's Atoi: past i64 fails the whole parse, not a wrap.
        let factor: i64 = rest[..digits].parse().ok()?;
        let unit = after[..letters].to_ascii_lowercase();
        for (variants, nanos) in UNITS {
            for (i, variant) in variants.iter().enumerate() {
                let last = i + 1 == variants.len();
                if (last && unit.starts_with(variant)) || unit == *variant {
                    matched = true;
                    // Go's int64 arithmetic wraps here, silently.
                    total = total.wrapping_add(factor.wrapping_mul(nanos));
                }
            }
        }
        rest = &after[letters..];
    }
    matched.then(|| TimeDelta::nanoseconds(total))
}

/// The digits that lead `s` as a number, or `None` past 2^63 (Go's
/// `leadingInt`).
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let mut x: u64 = 0;
    for b in s[..end].bytes() {
        x = x.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        if x > 1 << 63 {
            return None;
        }
    }
    Some((x, &s[end..]))
}

/// The fraction digits that lead `s`: their value and 10^(digits kept).
/// Digits past what fits are skipped, not an error (Go's
/// `leadingFraction`).
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let (mut x, mut scale, mut full) = (0u64, 1f64, false);
    for b in s[..end].bytes() {
        if full {
            continue;
        }
        match x
            .checked_mul(10)
            .and_then(|y| y.checked_add(u64::from(b - b'0')))
            .filter(|y| *y <= 1 << 63 && x <= (i64::MAX as u64) / 10)
        {
            Some(y) => {
                x = y;
                scale *= 10.0;
            }
            None => full = true,
        }
    }
    (x, scale, &s[end..])
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
        assert_eq!(parse_duration("1.s").unwrap(), TimeDelta::seconds(1));
        assert_eq!(parse_duration(".5s").unwrap(), TimeDelta::milliseconds(500));
        assert!(parse_duration(".s").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert_eq!(format_duration(TimeDelta::seconds(90)), "90s");
    }

    #[test]
    fn duration_overflow_is_an_error_not_a_panic() {
        // Found by the admission_review fuzz target: digits that overflow
        // any integer, in the whole part or in the product with the unit.
        for s in [
            "99999999999999999999999999999999999999999h",
            "9999999999999999999h",
            "2562048h",
            "9223372036854775808ns",
            "5000000h1h",
            "1.9999999999999999999999999999999999999999999999h9223372036h",
        ] {
            assert!(parse_duration(s).is_err(), "{s}");
        }
        assert_eq!(
            parse_duration("-9223372036854775808ns").unwrap(),
            TimeDelta::nanoseconds(i64::MIN)
        );
        assert_eq!(
            parse_duration("9223372036854775807ns").unwrap(),
            TimeDelta::nanoseconds(i64::MAX)
        );
        assert_eq!(
            parse_duration("2562047h").unwrap(),
            TimeDelta::hours(2_562_047)
        );
        assert_eq!(
            parse_duration("9223372036854775808ns9223372036854775808ns").unwrap(),
            TimeDelta::zero()
        );
    }

    #[test]
    fn long_fractions_keep_the_digits_that_fit() {
        // Go skips fraction digits once 10^n no longer fits, and goes
        // through float64, so these are the API server's answers.
        assert_eq!(
            parse_duration("1.0000000000000000000000000000000000001s").unwrap(),
            TimeDelta::seconds(1)
        );
        // Exact arithmetic would give 1199.999999999 s; Go's float64 step
        // (19 digits kept, then f * (unit / 10^19)) rounds up to 1200 s.
        assert_eq!(
            parse_duration("0.333333333333333333333333h").unwrap(),
            TimeDelta::seconds(1200)
        );
        assert_eq!(parse_duration("1.5h").unwrap(), TimeDelta::minutes(90));
    }

    #[test]
    fn format_durations_take_worded_units_as_kube_openapi() {
        let d = |s| parse_format_duration(s);
        assert_eq!(d("1.5h"), Some(TimeDelta::minutes(90)));
        assert_eq!(d("3 days"), Some(TimeDelta::days(3)));
        assert_eq!(d("1d"), Some(TimeDelta::days(1)));
        assert_eq!(d(" 1h 30m "), Some(TimeDelta::minutes(90)));
        assert_eq!(d("2 Weeks 1 DAY"), Some(TimeDelta::days(15)));
        assert_eq!(d("5 minutes"), Some(TimeDelta::minutes(5)));
        assert_eq!(d("10 secs"), Some(TimeDelta::seconds(10)));
        assert_eq!(d("7 millis"), Some(TimeDelta::milliseconds(7)));
        assert_eq!(d("3 \u{b5}s"), Some(TimeDelta::microseconds(3)));
        // Text around the matches is ignored, and so is what precedes a
        // number: `-1 day` is a day, `1.5 days` five.
        assert_eq!(d("in 3 days"), Some(TimeDelta::days(3)));
        assert_eq!(d("1s invalid"), Some(TimeDelta::seconds(1)));
        assert_eq!(d("-1 day"), Some(TimeDelta::days(1)));
        assert_eq!(d("1.5 days"), Some(TimeDelta::days(5)));
        assert_eq!(d("1 2h"), Some(TimeDelta::hours(2)));
        // An unknown unit beside a known one is skipped; alone it fails.
        assert_eq!(d("1 day 2 fortnights"), Some(TimeDelta::days(1)));
        assert_eq!(d("2 hrs"), None);
        assert_eq!(d("2 fortnights"), None);
        assert_eq!(d("day"), None);
        assert_eq!(d("12"), None);
        assert_eq!(d(""), None);
        assert_eq!(d("   "), None);
        // Atoi past i64 fails the parse even beside a good match.
        assert_eq!(d("1 day 99999999999999999999 days"), None);
        // Past i64 in the product wraps, as Go's does.
        assert_eq!(
            d("9223372036854775807 ns 1 ns"),
            Some(TimeDelta::nanoseconds(i64::MIN))
        );
    }

    #[test]
    fn full_dates_take_go_s_fixed_widths() {
        let d = |y, m, day| chrono::NaiveDate::from_ymd_opt(y, m, day);
        assert_eq!(parse_full_date("2024-02-29"), d(2024, 2, 29));
        assert_eq!(parse_full_date("0000-01-01"), d(0, 1, 1));
        for bad in [
            "2023-02-29",
            "+262142-12-31",
            "+12345-1-1",
            "2024-1-01",
            "2024-01-1",
            "24-01-01",
            "2024/01/01",
            "",
        ] {
            assert_eq!(parse_full_date(bad), None, "{bad}");
        }
    }
}
