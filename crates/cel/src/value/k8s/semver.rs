//! Semantic versions for the CEL `semver` library: the parser and ordering
//! of github.com/blang/semver/v4 (which the API server uses) with its error
//! texts, plus the library's optional normalisation (`v` prefix, leading
//! zeros, missing minor/patch). The `semver` crate words its errors
//! differently and is stricter in places, so this is a small port.

use std::cmp::Ordering;
use std::fmt;

use crate::text::go_quote;

/// A pre-release identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Str(String),
}

/// A parsed version (build metadata kept for display, ignored in order).
#[derive(Clone, Debug)]
pub struct Semver {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pre: Vec<Pre>,
    build: Vec<String>,
}

fn only(s: &str, f: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(f)
}

fn numeric(s: &str) -> bool {
    only(s, |b| b.is_ascii_digit())
}

fn alphanumeric(s: &str) -> bool {
    only(s, |b| b.is_ascii_alphanumeric() || b == b'-')
}

fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` with its error text.
fn parse_u64(s: &str) -> Result<u64, String> {
    if s.is_empty() || !numeric(s) {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(s)
        )
    })
}

fn number(part: &str, what: &str, cap: &str) -> Result<u64, String> {
    if !numeric(part) {
        return Err(format!(
            "Invalid character(s) found in {what} number {}",
            go_quote(part)
        ));
    }
    if leading_zero(part) {
        return Err(format!(
            "{cap} number must not contain leading zeroes {}",
            go_quote(part)
        ));
    }
    parse_u64(part)
}

impl Semver {
    /// `semver.Parse`.
    pub fn parse(s: &str) -> Result<Semver, String> {
        if s.is_empty() {
            return Err("Version string empty".into());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        let [major, minor, rest] = parts.as_slice() else {
            return Err("No Major.Minor.Patch elements found".into());
        };
        let major = number(major, "major", "Major")?;
        let minor = number(minor, "minor", "Minor")?;
        let mut patch_str = *rest;
        let mut build = Vec::new();
        let mut pre_ids = Vec::new();
        if let Some(i) = patch_str.find('+') {
            build = patch_str[i + 1..].split('.').collect();
            patch_str = &patch_str[..i];
        }
        if let Some(i) = patch_str.find('-') {
            pre_ids = patch_str[i + 1..].split('.').collect();
            patch_str = &patch_str[..i];
        }
        let patch = number(patch_str, "patch", "Patch")?;
        let mut pre = Vec::with_capacity(pre_ids.len());
        for id in pre_ids {
            if id.is_empty() {
                return Err("Prerelease is empty".into());
            }
            if numeric(id) {
                if leading_zero(id) {
                    return Err(format!(
                        "Numeric PreRelease version must not contain leading zeroes {}",
                        go_quote(id)
                    ));
                }
                pre.push(Pre::Num(parse_u64(id)?));
            } else if alphanumeric(id) {
                pre.push(Pre::Str(id.to_owned()));
            } else {
                return Err(format!(
                    "Invalid character(s) found in prerelease {}",
                    go_quote(id)
                ));
            }
        }
        let mut meta = Vec::with_capacity(build.len());
        for b in build {
            if b.is_empty() {
                return Err("Build meta data is empty".into());
            }
            if !alphanumeric(b) {
                return Err(format!(
                    "Invalid character(s) found in build meta data {}",
                    go_quote(b)
                ));
            }
            meta.push(b.to_owned());
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
            build: meta,
        })
    }

    /// `semver(s, true)`: drops a `v` prefix and leading zeros, fills in a
    /// missing minor or patch with 0, then parses strictly.
    pub fn parse_normalized(s: &str) -> Result<Semver, String> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s
            .splitn(3, '.')
            .map(|p| {
                if p.len() > 1 {
                    let t = p.trim_start_matches('0');
                    if t.is_empty() || !t.as_bytes()[0].is_ascii_digit() {
                        return format!("0{t}");
                    }
                    return t.to_owned();
                }
                p.to_owned()
            })
            .collect();
        if parts.len() < 3 {
            if parts
                .last()
                .is_some_and(|p| p.contains('+') || p.contains('-'))
            {
                return Err("short version cannot contain PreRelease/Build meta data".into());
            }
            while parts.len() < 3 {
                parts.push("0".into());
            }
        }
        Semver::parse(&parts.join("."))
    }
}

impl fmt::Display for Semver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, p) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            match p {
                Pre::Num(n) => write!(f, "{n}")?,
                Pre::Str(s) => f.write_str(s)?,
            }
        }
        for (i, b) in self.build.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            f.write_str(b)?;
        }
        Ok(())
    }
}

/// Semantic version precedence (build metadata ignored).
impl Ord for Semver {
    fn cmp(&self, other: &Semver) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = match (a, b) {
                (Pre::Num(x), Pre::Num(y)) => x.cmp(y),
                (Pre::Num(_), Pre::Str(_)) => Ordering::Less,
                (Pre::Str(_), Pre::Num(_)) => Ordering::Greater,
                (Pre::Str(x), Pre::Str(y)) => x.cmp(y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

eq_by_cmp!(Semver);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_like_blang_semver() {
        assert_eq!(
            Semver::parse("1.2.3-beta.1+build.1").unwrap().to_string(),
            "1.2.3-beta.1+build.1"
        );
        for (text, refusal) in [
            ("v1.0", "No Major.Minor.Patch elements found"),
            (
                "01.1.1",
                "Major number must not contain leading zeroes \"01\"",
            ),
            ("1.x.1", "Invalid character(s) found in minor number \"x\""),
            (
                "1.0.0-01",
                "Numeric PreRelease version must not contain leading zeroes \"01\"",
            ),
        ] {
            assert_eq!(Semver::parse(text).unwrap_err(), refusal);
        }
        assert!(Semver::parse("1.0.0 ").is_err());
        assert!(Semver::parse("").is_err());
    }

    #[test]
    fn normalises_short_and_prefixed_versions() {
        let n = |s: &str| Semver::parse_normalized(s).map(|v| v.to_string());
        assert_eq!(n("v01.01").as_deref(), Ok("1.1.0"));
        assert_eq!(n("1").as_deref(), Ok("1.0.0"));
        assert_eq!(n("01.01.01").as_deref(), Ok("1.1.1"));
        assert!(n("").is_err());
        assert!(n(" 1.0.0").is_err());
        assert_eq!(
            n("1.0-alpha").unwrap_err(),
            "short version cannot contain PreRelease/Build meta data"
        );
    }

    #[test]
    fn orders_pre_releases() {
        let v = |s: &str| Semver::parse(s).unwrap();
        assert!(v("1.0.0-alpha").cmp(&v("1.0.0")).is_lt());
        assert!(v("1.0.0-alpha").cmp(&v("1.0.0-alpha.1")).is_lt());
        assert!(v("1.0.0-1").cmp(&v("1.0.0-alpha")).is_lt());
        assert!(v("1.0.0+a").cmp(&v("1.0.0+b")).is_eq());
    }
}
