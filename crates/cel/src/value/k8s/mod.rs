//! The value types of the Kubernetes CEL libraries (k8s.io/apiserver
//! `pkg/cel/library`): quantities, IPs and CIDRs, URLs, semvers and named
//! formats, each in its own file, and the one value enum that holds them.

use super::TypeName;

/// `PartialOrd`, `PartialEq` and `Eq` from the type's `Ord`: library values
/// are equal when they compare equal (`200M == 0.2G`; semvers whatever
/// their build metadata), so `==` and the comparison functions agree.
macro_rules! eq_by_cmp {
    ($t:ty) => {
        impl PartialOrd for $t {
            fn partial_cmp(&self, other: &$t) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl PartialEq for $t {
            fn eq(&self, other: &$t) -> bool {
                self.cmp(other).is_eq()
            }
        }

        impl Eq for $t {}
    };
}

pub mod authz;
pub mod format;
pub mod net;
pub mod quantity;
pub mod semver;
pub mod url;

use authz::AuthzValue;
use format::NamedFormat;
use net::{Cidr, Ip};
use quantity::Quantity;
use semver::Semver;
use url::GoUrl;

/// A value of one of the library types (opaque to CEL: only the library's
/// functions, equality and `type()` apply).
#[derive(Debug, Clone)]
pub enum LibValue {
    Quantity(Quantity),
    Ip(Ip),
    Cidr(Cidr),
    Url(GoUrl),
    Semver(Semver),
    Format(&'static NamedFormat),
    Authz(AuthzValue),
}

impl LibValue {
    /// The CEL type of the value.
    pub fn type_name(&self) -> TypeName {
        match self {
            LibValue::Quantity(_) => TypeName::Quantity,
            LibValue::Ip(_) => TypeName::Ip,
            LibValue::Cidr(_) => TypeName::Cidr,
            LibValue::Url(_) => TypeName::Url,
            LibValue::Semver(_) => TypeName::Semver,
            LibValue::Format(_) => TypeName::NamedFormat,
            LibValue::Authz(a) => match a {
                AuthzValue::Authorizer(_) => TypeName::Authorizer,
                AuthzValue::Path(..) => TypeName::PathCheck,
                AuthzValue::Group(..) => TypeName::GroupCheck,
                AuthzValue::Resource(..) => TypeName::ResourceCheck,
                AuthzValue::Decision(_) => TypeName::Decision,
            },
        }
    }

    /// The Go type the API server's values have (`%T`), which cel-go names
    /// in some runtime errors.
    pub fn go_type_name(&self) -> &'static str {
        match self {
            LibValue::Quantity(_) => "cel.Quantity",
            LibValue::Ip(_) => "cel.IP",
            LibValue::Cidr(_) => "cel.CIDR",
            LibValue::Url(_) => "cel.URL",
            LibValue::Semver(_) => "cel.Semver",
            LibValue::Format(_) => "cel.Format",
            LibValue::Authz(a) => match a {
                AuthzValue::Authorizer(_) => "library.authorizerVal",
                AuthzValue::Path(..) => "library.pathCheckVal",
                AuthzValue::Group(..) => "library.groupCheckVal",
                AuthzValue::Resource(..) => "library.resourceCheckVal",
                AuthzValue::Decision(_) => "library.decisionVal",
            },
        }
    }

    /// Equality as each library type defines it; values of different
    /// library types are unequal. `None` for the authorizer library's
    /// values, which cel-go cannot compare (no such overload).
    pub fn equals(&self, other: &LibValue) -> Option<bool> {
        Some(match (self, other) {
            (LibValue::Authz(_), _) | (_, LibValue::Authz(_)) => return None,
            (LibValue::Quantity(a), LibValue::Quantity(b)) => a.cmp(b).is_eq(),
            (LibValue::Ip(a), LibValue::Ip(b)) => a == b,
            (LibValue::Cidr(a), LibValue::Cidr(b)) => a == b,
            // The API server compares URLs by their string form.
            (LibValue::Url(a), LibValue::Url(b)) => a.to_string() == b.to_string(),
            (LibValue::Semver(a), LibValue::Semver(b)) => a.cmp(b).is_eq(),
            (LibValue::Format(a), LibValue::Format(b)) => a.name == b.name,
            _ => false,
        })
    }

    /// The text `string(x)` and JSON output give (quantities, URLs and
    /// semvers have no `string()` overload in CEL; this is for display).
    pub fn display(&self) -> String {
        match self {
            LibValue::Quantity(q) => q.to_string(),
            LibValue::Ip(ip) => ip.to_string(),
            LibValue::Cidr(c) => c.to_string(),
            LibValue::Url(u) => u.to_string(),
            LibValue::Semver(v) => v.to_string(),
            LibValue::Format(f) => f.name.to_owned(),
            LibValue::Authz(_) => self.type_name().name().to_owned(),
        }
    }
}

/// The CEL name of a library type given as a qualified identifier
/// (`net.IP`, `kubernetes.Quantity`, ...), for type literals.
pub fn type_by_name(name: &str) -> Option<TypeName> {
    Some(match name {
        "kubernetes.Quantity" => TypeName::Quantity,
        "net.IP" => TypeName::Ip,
        "net.CIDR" => TypeName::Cidr,
        "kubernetes.URL" => TypeName::Url,
        "kubernetes.Semver" => TypeName::Semver,
        "kubernetes.NamedFormat" => TypeName::NamedFormat,
        "kubernetes.authorization.Authorizer" => TypeName::Authorizer,
        "kubernetes.authorization.PathCheck" => TypeName::PathCheck,
        "kubernetes.authorization.GroupCheck" => TypeName::GroupCheck,
        "kubernetes.authorization.ResourceCheck" => TypeName::ResourceCheck,
        "kubernetes.authorization.Decision" => TypeName::Decision,
        _ => return None,
    })
}
