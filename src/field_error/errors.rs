//! Field errors and the `Invalid` status, worded as the API server words
//! them (k8s.io/apimachinery `field.Error` and `errors.NewInvalid`), so that
//! kubectl users see the text they know.

use kube_core::response::{Status, StatusDetails, StatusSummary};

use crate::cel::go_quote;

/// The kind of a field error, with the API server's cause type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Invalid,
    /// A value of the wrong type (`Invalid value` in the text).
    TypeInvalid,
    /// A value outside an `enum`.
    NotSupported,
    Forbidden,
    Required,
    Duplicate,
    TooLong,
    TooMany,
}

impl ErrorType {
    /// The cause type sent in `status.details.causes[].reason`.
    pub fn cause(self) -> &'static str {
        match self {
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
        }
    }

    /// The rule's `reason` as written in the CRD; unknown or absent reasons
    /// mean `FieldValueInvalid`.
    pub fn from_reason(reason: Option<&str>) -> Self {
        match reason {
            Some("FieldValueForbidden") => ErrorType::Forbidden,
            Some("FieldValueRequired") => ErrorType::Required,
            Some("FieldValueDuplicate") => ErrorType::Duplicate,
            _ => ErrorType::Invalid,
        }
    }

    /// The words that start the error's text.
    fn words(self) -> &'static str {
        match self {
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
        }
    }

    /// Whether the text shows the bad value (`field.Error.ErrorBody`).
    fn shows_value(self) -> bool {
        !matches!(
            self,
            ErrorType::Forbidden | ErrorType::Required | ErrorType::TooLong
        )
    }
}

/// The bad value an error shows.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// A schema type name, shown quoted (`"object"`): what a failed CEL
    /// rule shows up to Kubernetes 1.34.
    Type(&'static str),
    /// The value as the API server renders it (see `openapi::render`).
    Shown(String),
    /// No value (`field.OmitValueType`): a failed rule on an object or a
    /// list from Kubernetes 1.35.
    Omitted,
}

/// One field error.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    /// The path, e.g. `spec.ports[2].port`; empty at the root.
    pub field: String,
    pub value: BadValue,
    pub detail: String,
}

impl FieldError {
    /// The error without its field: `Invalid value: "object": detail`.
    pub fn body(&self) -> String {
        let mut s = self.kind.words().to_owned();
        if self.kind.shows_value() {
            match &self.value {
                BadValue::Type(t) => {
                    s.push_str(": ");
                    s.push_str(&go_quote(t));
                }
                BadValue::Shown(v) => {
                    s.push_str(": ");
                    s.push_str(v);
                }
                BadValue::Omitted => {}
            }
        }
        // A duplicate error names the value only; it has no detail.
        if !self.detail.is_empty() && self.kind != ErrorType::Duplicate {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The path as the API server prints it (`<nil>` for the root).
    pub fn field_text(&self) -> &str {
        if self.field.is_empty() {
            "<nil>"
        } else {
            &self.field
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field_text(), self.body())
    }
}

/// Joins errors as the API server's aggregate does: one error as it is,
/// several as `[a, b]`, each distinct text once.
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut known = std::collections::HashSet::with_capacity(errors.len());
    for e in errors {
        let text = e.to_string();
        if known.insert(text.clone()) {
            seen.push(text);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// `Kind.group`, or `Kind` for the core group: how the API server names a
/// kind in its messages.
pub fn qualified(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    }
}

/// The `Invalid` status the API server returns for a custom resource that
/// fails validation: code 422, reason `Invalid`, one cause per error.
pub fn invalid_status(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Status {
    let qualified = qualified(group, kind);
    let message = if errors.is_empty() {
        format!("{qualified} {} is invalid", go_quote(name))
    } else {
        format!(
            "{qualified} {} is invalid: {}",
            go_quote(name),
            aggregate(errors)
        )
    };
    let causes = errors
        .iter()
        .map(|e| kube_core::response::StatusCause {
            reason: e.kind.cause().to_owned(),
            message: e.body(),
            field: e.field_text().to_owned(),
        })
        .collect();
    Status {
        status: Some(StatusSummary::Failure),
        code: 422,
        message,
        metadata: None,
        reason: "Invalid".to_owned(),
        details: Some(StatusDetails {
            name: name.to_owned(),
            group: group.to_owned(),
            kind: kind.to_owned(),
            uid: String::new(),
            causes,
            retry_after_seconds: 0,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(field: &str, detail: &str) -> FieldError {
        FieldError {
            kind: ErrorType::Invalid,
            field: field.into(),
            value: BadValue::Type("object"),
            detail: detail.into(),
        }
    }

    #[test]
    fn single_error_reads_like_the_api_server() {
        let s = invalid_status(
            "stable.example.com",
            "CronTab",
            "my-new-cron-object",
            &[invalid(
                "spec",
                "replicas should be smaller than or equal to maxReplicas.",
            )],
        );
        assert_eq!(
            s.message,
            "CronTab.stable.example.com \"my-new-cron-object\" is invalid: spec: Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas."
        );
        assert_eq!(s.code, 422);
        assert_eq!(s.reason, "Invalid");
        let d = s.details.unwrap();
        assert_eq!(d.causes[0].reason, "FieldValueInvalid");
        assert_eq!(d.causes[0].field, "spec");
        assert_eq!(
            d.causes[0].message,
            "Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas."
        );
    }

    #[test]
    fn several_errors_are_bracketed_and_deduplicated() {
        let e = [
            invalid("spec", "a"),
            invalid("spec", "b"),
            invalid("spec", "a"),
        ];
        assert_eq!(
            aggregate(&e),
            "[spec: Invalid value: \"object\": a, spec: Invalid value: \"object\": b]"
        );
    }

    #[test]
    fn reasons_change_the_wording() {
        let mut e = invalid("spec.x", "must be set");
        e.kind = ErrorType::from_reason(Some("FieldValueRequired"));
        assert_eq!(e.to_string(), "spec.x: Required value: must be set");
        e.kind = ErrorType::from_reason(Some("FieldValueForbidden"));
        assert_eq!(e.to_string(), "spec.x: Forbidden: must be set");
        e.kind = ErrorType::from_reason(Some("FieldValueDuplicate"));
        assert_eq!(e.to_string(), "spec.x: Duplicate value: \"object\"");
        e.kind = ErrorType::from_reason(Some("Bogus"));
        assert_eq!(e.kind, ErrorType::Invalid);
        e.field.clear();
        assert_eq!(
            e.to_string(),
            "<nil>: Invalid value: \"object\": must be set"
        );
    }
}
