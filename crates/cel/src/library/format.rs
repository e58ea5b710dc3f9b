//! Kubernetes' format library: `format.named(key)`, the zero-argument
//! constants `format.dns1123Label()` ... `format.datetime()`, and
//! `validate`, which answers the list of validation errors, or none.

use std::rc::Rc;

use crate::registry::{
    arg, arg_size, first, is_string, lib_arg, lib_value, overload, scaled, shape_scaled, sig,
    str_arg, unit_scalar, Function,
};
use crate::shape::{Compared, Shape};
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::k8s::format::{self, NamedFormat, MAX_NAME_FORMAT_REGEX_SIZE};
use crate::value::k8s::LibValue;
use crate::value::{TypeName, Value};

fn is_named_format(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Lib(TypeName::NamedFormat))
}

fn format_value(nf: &'static NamedFormat) -> Value<'static> {
    lib_value(LibValue::Format(nf))
}

fn format_arg(v: &Value<'_>) -> Result<&'static NamedFormat, EvalError> {
    match lib_arg(v)? {
        LibValue::Format(nf) => Ok(nf),
        _ => Err(overload()),
    }
}

/// An unknown name is `optional.none()`, not an error.
pub static NAMED: Function = Function::BASE
    .named("format.named", 31, "format-named")
    .global_arities(&[1])
    .returns(TypeName::Optional)
    .checks(|a| {
        sig(a, &[is_string]).then(|| Ty::Optional(Box::new(Ty::Lib(TypeName::NamedFormat))))
    })
    .calls(|a| {
        let nf = format::by_key(str_arg(first(a)?)?);
        Ok(Value::Optional(nf.map(|nf| Rc::new(format_value(nf)))))
    })
    .estimates(|_| {
        let mut shape = Shape::sized(1.0);
        shape.compared = Compared::Format;
        (1.0, shape)
    });

/// The API server charges the string's traversal times the format's
/// regex size; the static estimate assumes the largest regex of any
/// format.
pub static VALIDATE: Function = Function::BASE
    .named("validate", 31, "format-validate")
    .member_arities(&[1])
    .returns(TypeName::Optional)
    .checks(|a| {
        sig(a, &[is_named_format, is_string])
            .then(|| Ty::Optional(Box::new(Ty::List(Box::new(Ty::String)))))
    })
    .calls(|a| {
        let nf = format_arg(first(a)?)?;
        let errors = (nf.validate)(str_arg(arg(a, 1)?)?);
        Ok(Value::Optional(if errors.is_empty() {
            None
        } else {
            let list = errors.into_iter().map(Value::string).collect();
            Some(Rc::new(Value::list(list)))
        }))
    })
    .costs(|a, _| {
        let regex = a.first().and_then(|v| format_arg(v).ok());
        let regex = regex.map_or(1, |nf| nf.max_regex_size);
        scaled(1 + arg_size(a, 1), 0.1) * scaled(regex as u64, 0.25)
    })
    .estimates(|s| {
        let regex = MAX_NAME_FORMAT_REGEX_SIZE as f64 * 0.25;
        (shape_scaled(s, 1, 0.1) * regex, Shape::sized(1.0))
    });

/// The format `key` as a value; every key the constants name exists.
fn constant<'a>(key: &str) -> Result<Value<'a>, EvalError> {
    format::by_key(key).map(format_value).ok_or_else(overload)
}

/// `format.<key>()`: no arguments, a named format.
const CONSTANT: Function = Function::BASE
    .global_arities(&[0])
    .returns(TypeName::NamedFormat)
    .accepts(|a| a.is_empty())
    .estimates(unit_scalar);

/// Declares the rows of the `format.<key>()` constants.
macro_rules! constants {
    ($($row:ident = $key:literal;)*) => {$(
        #[doc = concat!("`format.", $key, "()`.")]
        pub static $row: Function = Function {
            name: concat!("format.", $key),
            since: 31,
            overloads: concat!("format.", $key),
            call: |_| constant($key),
            ..CONSTANT
        };
    )*};
}

constants! {
    DNS1123_LABEL = "dns1123Label"; DNS1123_SUBDOMAIN = "dns1123Subdomain";
    DNS1035_LABEL = "dns1035Label"; QUALIFIED_NAME = "qualifiedName";
    DNS1123_LABEL_PREFIX = "dns1123LabelPrefix"; DNS1123_SUBDOMAIN_PREFIX = "dns1123SubdomainPrefix";
    DNS1035_LABEL_PREFIX = "dns1035LabelPrefix"; LABEL_VALUE = "labelValue";
    URI = "uri"; UUID = "uuid"; BYTE = "byte"; DATE = "date"; DATETIME = "datetime";
}
