//! The Kubernetes version celhook answers as (`--kubernetes-version`):
//! which CEL libraries a rule may use, the texts of failed rules and of the
//! schema check, the formats it enforces, and the built-in kinds' schemas.
//! An API server compiles an expression being written (a new CRD, a
//! changed rule) against its compatibility version, one minor behind
//! itself, so that a rollback can still run it; expressions it already
//! stores run with everything its own minor knows.

use std::fmt;
use std::str::FromStr;

/// A Kubernetes minor celhook answers as, 1.30 to 1.37. The README's
/// "Kubernetes versions" table says what changes with it (libraries, and
/// the texts and checks below); `docs/known-differences.md` what does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeVersion(u8);

impl KubeVersion {
    pub const OLDEST: KubeVersion = KubeVersion(30);
    pub const NEWEST: KubeVersion = KubeVersion(37);

    /// The minor (`34` for 1.34).
    pub fn minor(self) -> u8 {
        self.0
    }

    /// The library version of expressions being written: the
    /// compatibility version, one minor behind (1.30 fixed it at 1.29,
    /// later versions compute it).
    pub fn written(self) -> crate::cel::environment::Version {
        (self.0 - 1).into()
    }

    /// The library version of expressions the API server stores and runs.
    pub fn stored(self) -> crate::cel::environment::Version {
        self.0.into()
    }

    /// From 1.35 a failed rule shows the value of a scalar node, and no
    /// value for an object or a list, where earlier versions show the
    /// node's schema type (k/k PR #132798).
    pub fn failed_rules_show_values(self) -> bool {
        self.0 >= 35
    }

    /// From 1.34 a field error renders a map, a list or null as JSON;
    /// earlier versions print Go's `%#v` of the decoded value (k/k PR
    /// #132314).
    pub fn values_as_json(self) -> bool {
        self.0 >= 34
    }

    /// `maxLength` says "may not be more than N bytes" from 1.32 ("may
    /// not be longer than N" before).
    pub fn too_long_in_bytes(self) -> bool {
        self.0 >= 32
    }

    /// From 1.34 a limit of one reads "1 byte" and "1 item".
    pub fn singular_limits(self) -> bool {
        self.0 >= 34
    }

    /// From 1.34 a missing apiVersion or kind of an embedded resource is a
    /// bare `Required value` (up to 1.33 `Required value: must not be
    /// empty`).
    pub fn bare_required_type_meta(self) -> bool {
        self.0 >= 34
    }

    /// From 1.35 the formats `k8s-short-name` and `k8s-long-name` are
    /// enforced (introduced at compatibility version 1.34, which is 1.35's).
    pub fn checks_k8s_name_formats(self) -> bool {
        self.0 >= 35
    }

    /// From 1.36 `int32`, `int64`, `float` and `double` are kept on
    /// integer and number fields and their ranges enforced ("Checked
    /// value must be of type ..."), and formats of the other types dropped.
    pub fn checks_numeric_formats(self) -> bool {
        self.0 >= 36
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        KubeVersion::NEWEST
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.0)
    }
}

impl FromStr for KubeVersion {
    type Err = String;

    /// `1.34`, `v1.34` or `1.34.2` (the patch is ignored).
    fn from_str(s: &str) -> Result<Self, String> {
        let bare = s.strip_prefix('v').unwrap_or(s);
        let mut parts = bare.split('.');
        let minor = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("1"), Some(minor), patch, None)
                if patch.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
            {
                minor.parse::<u8>().ok()
            }
            _ => None,
        };
        match minor {
            Some(m) if (Self::OLDEST.0..=Self::NEWEST.0).contains(&m) => Ok(KubeVersion(m)),
            _ => Err(format!(
                "{s:?} is not a Kubernetes version celhook answers as: give one of {} to {} (e.g. 1.34)",
                Self::OLDEST,
                Self::NEWEST
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_say_which_libraries_apply() {
        for (text, minor) in [("1.34", 34), ("v1.30", 30), ("1.32.2", 32)] {
            assert_eq!(
                text.parse::<KubeVersion>().map(KubeVersion::minor),
                Ok(minor)
            );
        }
        for bad in ["1.29", "1.38", "2.30", "1", "1.x", "1.34.", ""] {
            let e = bad.parse::<KubeVersion>().expect_err(bad);
            assert!(e.contains("give one of 1.30 to 1.37"), "{e}");
        }
        let v: KubeVersion = "1.34".parse().unwrap();
        assert_eq!((v.written(), v.stored()), (33, 34));
        assert_eq!(KubeVersion::OLDEST.written(), 29);
        assert_eq!(KubeVersion::default().to_string(), "1.37");
        let texts = |m: &str| {
            let v: KubeVersion = m.parse().unwrap();
            [
                v.too_long_in_bytes(),
                v.values_as_json(),
                v.failed_rules_show_values(),
                v.checks_numeric_formats(),
            ]
        };
        assert_eq!(texts("1.31"), [false; 4]);
        assert_eq!(texts("1.32"), [true, false, false, false]);
        assert_eq!(texts("1.34"), [true, true, false, false]);
        assert_eq!(texts("1.35"), [true, true, true, false]);
        assert_eq!(texts("1.36"), [true; 4]);
    }
}
