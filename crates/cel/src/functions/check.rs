//! The checker's view of a call: the result type of a function over its
//! argument types, or `None` for cel-go's "found no matching overload".

use super::Func;
use crate::types::Ty;
use crate::value::TypeName;

/// Checks a library call's argument types (target first for member calls)
/// and gives its result type. `None`: no overload matches. Functions whose
/// signatures the table does not list are accepted with a dynamic result.
pub(crate) fn function<'s>(f: Func, args: &[Ty<'s>]) -> Option<Ty<'s>> {
    use Func as F;
    use Ty::*;
    let all = |want: &[fn(&Ty<'_>) -> bool]| -> bool {
        want.len() == args.len() && want.iter().zip(args).all(|(ok, a)| a.is_dyn() || ok(a))
    };
    let string = |t: &Ty<'_>| matches!(t, String);
    let int = |t: &Ty<'_>| matches!(t, Int);
    let list = |t: &Ty<'_>| matches!(t, List(_));
    let result = f.result_ty().map(Ty::of_name);
    match f {
        F::Size => matches!(args, [String | Bytes | List(_) | Map(..) | Dyn]).then_some(Int),
        F::Contains | F::StartsWith | F::EndsWith | F::Matches => {
            all(&[string, string]).then_some(Bool)
        }
        F::CharAt => all(&[string, int]).then_some(String),
        F::IndexOf | F::LastIndexOf => match args {
            [List(e), x] if e.unifies(x) => Some(Int),
            [String | Dyn, ..] if all(&[string, string]) || all(&[string, string, int]) => {
                Some(Int)
            }
            [Dyn, _] => Some(Int),
            _ => None,
        },
        F::LowerAscii | F::UpperAscii | F::Trim => all(&[string]).then_some(String),
        F::Replace => (all(&[string, string, string]) || all(&[string, string, string, int]))
            .then_some(String),
        F::Split => {
            (all(&[string, string]) || all(&[string, string, int])).then(|| List(Box::new(String)))
        }
        F::Substring => (all(&[string, int]) || all(&[string, int, int])).then_some(String),
        F::Join => (all(&[list]) || all(&[list, string])).then_some(String),
        F::ToInt => matches!(
            args,
            [Int | Uint | Double | String | Timestamp | Duration | Dyn]
        )
        .then_some(Int),
        F::ToUint => matches!(args, [Int | Uint | Double | String | Dyn]).then_some(Uint),
        F::ToDouble => matches!(args, [Int | Uint | Double | String | Dyn]).then_some(Double),
        F::ToString => matches!(
            args,
            [Int | Uint
                | Double
                | String
                | Bool
                | Bytes
                | Timestamp
                | Duration
                | Dyn
                | Lib(TypeName::Ip | TypeName::Cidr)]
        )
        .then_some(String),
        F::Lib(l) => super::kubernetes::check(l, args),
        F::ToBytes => matches!(args, [String | Bytes | Dyn]).then_some(Bytes),
        F::ToBool => matches!(args, [String | Bool | Dyn]).then_some(Bool),
        F::ToDuration => matches!(args, [String | Duration | Dyn]).then_some(Duration),
        F::ToTimestamp => matches!(args, [String | Timestamp | Int | Dyn]).then_some(Timestamp),
        F::GetFullYear
        | F::GetMonth
        | F::GetDayOfMonth
        | F::GetDate
        | F::GetDayOfWeek
        | F::GetDayOfYear => match args {
            [Timestamp | Dyn] | [Timestamp | Dyn, String | Dyn] => Some(Int),
            _ => None,
        },
        F::GetHours | F::GetMinutes | F::GetSeconds | F::GetMilliseconds => match args {
            [Timestamp | Duration | Dyn] | [Timestamp | Dyn, String | Dyn] => Some(Int),
            _ => None,
        },
        F::Dyn => Some(Dyn),
        F::TypeOf => Some(Type),
        F::IsSorted => matches!(args, [List(_) | Dyn]).then_some(Bool),
        F::Sum => match args {
            [List(e)] if matches!(**e, Int | Uint | Double | Duration | Dyn) => Some((**e).clone()),
            [Dyn] => Some(Dyn),
            _ => None,
        },
        F::Min | F::Max => match args {
            [List(e)]
                if matches!(
                    **e,
                    Int | Uint | Double | String | Bytes | Bool | Duration | Timestamp | Dyn
                ) =>
            {
                Some((**e).clone())
            }
            [Dyn] => Some(Dyn),
            _ => None,
        },
        F::OptOf | F::OptOfNonZero => args.first().map(|a| Optional(Box::new(a.clone()))),
        F::OptValue => match args {
            [Optional(t)] => Some((**t).clone()),
            [Dyn] => Some(Dyn),
            _ => None,
        },
        F::HasValue => matches!(args, [Optional(_) | Dyn]).then_some(Bool),
        F::OrValue => match args {
            [Optional(t), v] if t.unifies(v) => Some(t.join(v)),
            [Dyn, v] => Some(v.clone()),
            _ => None,
        },
        F::Distinct | F::Sort | F::Reverse if matches!(args, [List(_)]) => Some(args[0].clone()),
        // Kubernetes' string library (version 2) has no reverse.
        F::Reverse if matches!(args, [String]) => None,
        F::First | F::Last => match args {
            [List(e)] => Some(Optional(e.clone())),
            [Dyn] => Some(Optional(Box::new(Dyn))),
            _ => None,
        },
        _ => Some(result.unwrap_or(Dyn)),
    }
}
