//! The function library: every function CRD rules can call, one registry
//! row each (see `registry.rs`), grouped by the library that defines it.
//! Adding a function is adding its row to one of these files and to
//! [`ALL`]; environments (`environment.rs`) choose among them.

pub mod authz;
pub mod conversions;
pub mod core;
pub mod format;
pub mod jsonpatch;
pub mod lists;
pub mod network;
pub mod optional;
pub mod quantity;
pub mod regex;
pub mod semver;
pub mod sets;
pub mod string_format;
pub mod strings;
pub mod time;
pub mod url;

#[cfg(test)]
mod tests;

use crate::registry::{
    is_string, sig, tenth_of_target, tenth_of_target_scalar, unit_scalar, Func, Function,
};

/// A global function that parses its string argument (`quantity()`,
/// `isURL()`, `cidr()`, ...): a tenth of the string's length, at run time
/// and in the static estimate alike.
const PARSER: Function = Function::BASE
    .global_arities(&[1])
    .accepts(|a| sig(a, &[is_string]))
    .costs(tenth_of_target)
    .estimates(tenth_of_target_scalar);

/// A method of one library value (`ip.family()`, `v.major()`, ...): no
/// argument besides the target, unit cost, a scalar result. Each family
/// adds the type it takes.
const METHOD: Function = Function::BASE.member_arities(&[0]).estimates(unit_scalar);

/// Every function a call can name, in no particular order. Negation is
/// not among them: the checker reaches it from the `-` operator.
pub static ALL: &[Func] = &[
    // The base environment.
    &core::SIZE,
    &core::CONTAINS,
    &core::STARTS_WITH,
    &core::ENDS_WITH,
    &core::MATCHES,
    &conversions::INT,
    &conversions::UINT,
    &conversions::DOUBLE,
    &conversions::STRING,
    &conversions::BYTES,
    &conversions::BOOL,
    &conversions::DYN,
    &conversions::TYPE,
    &conversions::DURATION,
    &conversions::TIMESTAMP,
    &time::GET_FULL_YEAR,
    &time::GET_MONTH,
    &time::GET_DAY_OF_MONTH,
    &time::GET_DATE,
    &time::GET_DAY_OF_WEEK,
    &time::GET_DAY_OF_YEAR,
    &time::GET_HOURS,
    &time::GET_MINUTES,
    &time::GET_SECONDS,
    &time::GET_MILLISECONDS,
    // cel-go's strings extension.
    &strings::CHAR_AT,
    &strings::INDEX_OF,
    &strings::LAST_INDEX_OF,
    &strings::LOWER_ASCII,
    &strings::UPPER_ASCII,
    &strings::REPLACE,
    &strings::SPLIT,
    &strings::SUBSTRING,
    &strings::TRIM,
    &strings::JOIN,
    &strings::REVERSE,
    &strings::QUOTE,
    &string_format::FORMAT,
    // Lists: Kubernetes' library and cel-go's extension.
    &lists::IS_SORTED,
    &lists::SUM,
    &lists::MIN,
    &lists::MAX,
    &lists::INCLUDES,
    &lists::SLICE,
    &lists::FLATTEN,
    &lists::DISTINCT,
    &lists::SORT,
    &lists::FIRST,
    &lists::LAST,
    &lists::RANGE,
    &sets::CONTAINS,
    &sets::EQUIVALENT,
    &sets::INTERSECTS,
    &optional::OF,
    &optional::NONE,
    &optional::OF_NON_ZERO_VALUE,
    &optional::HAS_VALUE,
    &optional::VALUE,
    &optional::OR_VALUE,
    &optional::OR,
    &optional::UNWRAP,
    &optional::UNWRAP_OPT,
    &regex::FIND,
    &regex::FIND_ALL,
    // Kubernetes' libraries.
    &quantity::QUANTITY,
    &quantity::IS_QUANTITY,
    &quantity::SIGN,
    &quantity::AS_APPROXIMATE_FLOAT,
    &quantity::AS_INTEGER,
    &quantity::IS_INTEGER,
    &quantity::IS_GREATER_THAN,
    &quantity::IS_LESS_THAN,
    &quantity::COMPARE_TO,
    &quantity::ADD,
    &quantity::SUB,
    &network::IP,
    &network::IS_IP,
    &network::IS_CANONICAL,
    &network::FAMILY,
    &network::IS_UNSPECIFIED,
    &network::IS_LOOPBACK,
    &network::IS_LINK_LOCAL_MULTICAST,
    &network::IS_LINK_LOCAL_UNICAST,
    &network::IS_GLOBAL_UNICAST,
    &network::CIDR,
    &network::IS_CIDR,
    &network::CONTAINS_IP,
    &network::CONTAINS_CIDR,
    &network::PREFIX_LENGTH,
    &network::MASKED,
    &url::URL,
    &url::IS_URL,
    &url::GET_SCHEME,
    &url::GET_HOST,
    &url::GET_HOSTNAME,
    &url::GET_PORT,
    &url::GET_ESCAPED_PATH,
    &url::GET_QUERY,
    &semver::SEMVER,
    &semver::IS_SEMVER,
    &semver::MAJOR,
    &semver::MINOR,
    &semver::PATCH,
    &format::NAMED,
    &format::VALIDATE,
    &format::DNS1123_LABEL,
    &format::DNS1123_SUBDOMAIN,
    &format::DNS1035_LABEL,
    &format::QUALIFIED_NAME,
    &format::DNS1123_LABEL_PREFIX,
    &format::DNS1123_SUBDOMAIN_PREFIX,
    &format::DNS1035_LABEL_PREFIX,
    &format::LABEL_VALUE,
    &format::URI,
    &format::UUID,
    &format::BYTE,
    &format::DATE,
    &format::DATETIME,
    // MutatingAdmissionPolicy expressions only.
    &jsonpatch::ESCAPE_KEY,
    // Reached only through an `authorizer` variable.
    &authz::PATH,
    &authz::GROUP,
    &authz::SERVICE_ACCOUNT,
    &authz::RESOURCE,
    &authz::SUBRESOURCE,
    &authz::NAMESPACE,
    &authz::NAME,
    &authz::FIELD_SELECTOR,
    &authz::LABEL_SELECTOR,
    &authz::CHECK,
    &authz::ALLOWED,
    &authz::REASON,
    &authz::ERRORED,
    &authz::ERROR,
];
