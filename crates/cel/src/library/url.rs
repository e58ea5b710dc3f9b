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
const PARSER: Function = Function {
    global: &[1],
    cost: |a, _| scaled(arg_size(a, 0), 0.1),
    estimate: |s| ((shape_size(s, 0) * 0.1).ceil(), Shape::sized(1.0)),
    ..Function::BASE
};

pub static URL: Function = Function {
    name: "url",
    overloads: &[("string_to_url", 24)],
    result: Some(TypeName::Url),
    check: Some(|a| sig(a, &[is_string]).then_some(Ty::Lib(TypeName::Url))),
    call: |a| {
        let u = GoUrl::from_cel(str_arg(first(a)?)?).map_err(EvalError::new)?;
        Ok(Value::Lib(Rc::new(LibValue::Url(u))))
    },
    ..PARSER
};

/// Whether the string is accepted as a request URI: the first of the two
/// tests `url()` makes.
pub static IS_URL: Function = Function {
    name: "isURL",
    overloads: &[("is_url_string", 24)],
    result: Some(TypeName::Bool),
    check: Some(|a| sig(a, &[is_string]).then_some(Ty::Bool)),
    call: |a| {
        Ok(Value::Bool(
            GoUrl::parse_request_uri(str_arg(first(a)?)?).is_ok(),
        ))
    },
    ..PARSER
};

/// A string part of a URL, at unit cost and unbounded size.
const PART: Function = Function {
    member: &[0],
    result: Some(TypeName::String),
    check: Some(|a| sig(a, &[is_url]).then_some(Ty::String)),
    estimate: unit_unbounded,
    ..Function::BASE
};

pub static GET_SCHEME: Function = Function {
    name: "getScheme",
    overloads: &[("url_get_scheme", 24)],
    call: |a| Ok(Value::string(url_arg(first(a)?)?.scheme.clone())),
    ..PART
};

pub static GET_HOST: Function = Function {
    name: "getHost",
    overloads: &[("url_get_host", 24)],
    call: |a| Ok(Value::string(url_arg(first(a)?)?.host.clone())),
    ..PART
};

pub static GET_HOSTNAME: Function = Function {
    name: "getHostname",
    overloads: &[("url_get_hostname", 24)],
    call: |a| Ok(Value::string(url_arg(first(a)?)?.hostname())),
    ..PART
};

pub static GET_PORT: Function = Function {
    name: "getPort",
    overloads: &[("url_get_port", 24)],
    call: |a| Ok(Value::string(url_arg(first(a)?)?.port())),
    ..PART
};

pub static GET_ESCAPED_PATH: Function = Function {
    name: "getEscapedPath",
    overloads: &[("url_get_escaped_path", 24)],
    call: |a| Ok(Value::string(url_arg(first(a)?)?.escaped_path())),
    ..PART
};

/// The query parameters as a map from each name to its values.
pub static GET_QUERY: Function = Function {
    name: "getQuery",
    overloads: &[("url_get_query", 24)],
    result: Some(TypeName::Map),
    check: Some(|a| {
        sig(a, &[is_url]).then(|| {
            Ty::Map(
                Box::new(Ty::String),
                Box::new(Ty::List(Box::new(Ty::String))),
            )
        })
    }),
    call: |a| {
        let entries = url_arg(first(a)?)?
            .query()
            .into_iter()
            .map(|(k, vs)| {
                let values = vs.into_iter().map(Value::string).collect();
                (Value::string(k), Value::list(values))
            })
            .collect();
        Ok(Value::Map(Map::Owned(Rc::new(entries))))
    },
    ..PART
};
