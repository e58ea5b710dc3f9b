//! Kubernetes' URL library: `url()`, `isURL()` and the accessors
//! `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath` and
//! `getQuery`. The API server's estimator gives the strings and map these
//! accessors return no size bound, so neither does ours.

use std::rc::Rc;

use crate::registry::{
    arg_size, first, is_string, overload, scaled, shape_size, sig, str_arg, unit_unbounded,
    Function,
};
use crate::shape::Shape;
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::url::GoUrl;
use crate::value::k8s::LibValue;
use crate::value::{Map, TypeName, Value};

fn is_url(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Lib(TypeName::Url))
}

fn url_arg<'v>(v: &'v Value<'_>) -> Result<&'v GoUrl, EvalError> {
    match v {
        Value::Lib(l) => match &**l {
            LibValue::Url(u) => Ok(u),
            _ => Err(overload()),
        },
        _ => Err(overload()),
    }
}

/// Parsing a URL string pays a tenth of its length, at run time and in the
/// static estimate alike.
const PARSER: Function = Function::BASE
    .global_arities(&[1])
    .costs(|a, _| scaled(arg_size(a, 0), 0.1))
    .estimates(|s| ((shape_size(s, 0) * 0.1).ceil(), Shape::sized(1.0)));

pub static URL: Function = PARSER
    .named("url", 24, "string_to_url")
    .returns(TypeName::Url)
    .checks(|a| sig(a, &[is_string]).then_some(Ty::Lib(TypeName::Url)))
    .calls(|a| {
        let u = GoUrl::from_cel(str_arg(first(a)?)?).map_err(EvalError::new)?;
        Ok(Value::Lib(Rc::new(LibValue::Url(u))))
    });

/// Whether the string is accepted as a request URI: the first of the two
/// tests `url()` makes.
pub static IS_URL: Function = PARSER
    .named("isURL", 24, "is_url_string")
    .returns(TypeName::Bool)
    .checks(|a| sig(a, &[is_string]).then_some(Ty::Bool))
    .calls(|a| {
        Ok(Value::Bool(
            GoUrl::parse_request_uri(str_arg(first(a)?)?).is_ok(),
        ))
    });

/// A string part of a URL, at unit cost and unbounded size.
const PART: Function = Function::BASE
    .member_arities(&[0])
    .returns(TypeName::String)
    .checks(|a| sig(a, &[is_url]).then_some(Ty::String))
    .estimates(unit_unbounded);

pub static GET_SCHEME: Function = PART
    .named("getScheme", 24, "url_get_scheme")
    .calls(|a| Ok(Value::string(url_arg(first(a)?)?.scheme.clone())));

pub static GET_HOST: Function = PART
    .named("getHost", 24, "url_get_host")
    .calls(|a| Ok(Value::string(url_arg(first(a)?)?.host.clone())));

pub static GET_HOSTNAME: Function = PART
    .named("getHostname", 24, "url_get_hostname")
    .calls(|a| Ok(Value::string(url_arg(first(a)?)?.hostname())));

pub static GET_PORT: Function = PART
    .named("getPort", 24, "url_get_port")
    .calls(|a| Ok(Value::string(url_arg(first(a)?)?.port())));

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
