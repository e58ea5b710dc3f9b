//! Kubernetes' URL library: `url()`, `isURL()` and the accessors
//! `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath` and
//! `getQuery`. The API server's estimator gives the strings and map these
//! accessors return no size bound, so neither does ours.

use std::rc::Rc;

use super::PARSER;
use crate::registry::{
    first, lib_arg, lib_value, overload, sig, str_arg, unit_unbounded, Function,
};
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::url::GoUrl;
use crate::value::k8s::LibValue;
use crate::value::{Map, TypeName, Value};

fn is_url(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Lib(TypeName::Url))
}

fn url_arg<'v>(v: &'v Value<'_>) -> Result<&'v GoUrl, EvalError> {
    match lib_arg(v)? {
        LibValue::Url(u) => Ok(u),
        _ => Err(overload()),
    }
}

pub static URL: Function = PARSER
    .named("url", 24, "string_to_url")
    .returns(TypeName::Url)
    .calls(|a| {
        let u = GoUrl::from_cel(str_arg(first(a)?)?).map_err(EvalError::new)?;
        Ok(lib_value(LibValue::Url(u)))
    });

/// Whether the string is accepted as a request URI: the first of the two
/// tests `url()` makes.
pub static IS_URL: Function = PARSER
    .named("isURL", 24, "is_url_string")
    .returns(TypeName::Bool)
    .calls(|a| {
        Ok(Value::Bool(
            GoUrl::parse_request_uri(str_arg(first(a)?)?).is_ok(),
        ))
    });

/// A part of a URL, at unit cost and unbounded size.
const PART: Function = Function::BASE
    .member_arities(&[0])
    .returns(TypeName::String)
    .accepts(|a| sig(a, &[is_url]))
    .estimates(unit_unbounded);

/// A string part of the target URL.
fn part<'a>(a: &[Value<'a>], part: fn(&GoUrl) -> &str) -> Result<Value<'a>, EvalError> {
    Ok(Value::string(part(url_arg(first(a)?)?)))
}

pub static GET_SCHEME: Function = PART
    .named("getScheme", 24, "url_get_scheme")
    .calls(|a| part(a, |u| &u.scheme));

pub static GET_HOST: Function = PART
    .named("getHost", 24, "url_get_host")
    .calls(|a| part(a, |u| &u.host));

pub static GET_HOSTNAME: Function = PART
    .named("getHostname", 24, "url_get_hostname")
    .calls(|a| part(a, GoUrl::hostname));

pub static GET_PORT: Function = PART
    .named("getPort", 24, "url_get_port")
    .calls(|a| part(a, GoUrl::port));

pub static GET_ESCAPED_PATH: Function = PART
    .named("getEscapedPath", 24, "url_get_escaped_path")
    .calls(|a| Ok(Value::string(url_arg(first(a)?)?.escaped_path())));

/// The query parameters as a map from each name to its values.
pub static GET_QUERY: Function = PART
    .named("getQuery", 24, "url_get_query")
    .returns(TypeName::Map)
    .checks(|a| {
        sig(a, &[is_url]).then(|| {
            Ty::Map(
                Box::new(Ty::String),
                Box::new(Ty::List(Box::new(Ty::String))),
            )
        })
    })
    .calls(|a| {
        let entries = url_arg(first(a)?)?
            .query()
            .into_iter()
            .map(|(k, vs)| {
                let values = vs.into_iter().map(Value::string).collect();
                (Value::string(k), Value::list(values))
            })
            .collect();
        Ok(Value::Map(Map::Owned(Rc::new(entries))))
    });
