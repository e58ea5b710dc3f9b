//! The timestamp and duration accessors (`getFullYear`, `getHours`, ...),
//! in UTC unless a time zone is given.

use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};

use crate::registry::{first, overload, Function};
use crate::types::Ty;
use crate::value::error::EvalError;
use crate::value::{TypeName, Value};

/// The part of a timestamp (or duration) an accessor reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Year,
    Month,
    DayOfMonth,
    Date,
    DayOfWeek,
    DayOfYear,
    Hours,
    Minutes,
    Seconds,
    Milliseconds,
}

const ACCESSOR: Function = Function {
    member: &[0, 1],
    result: Some(TypeName::Int),
    ..Function::BASE
};

/// `t.getX()` or `t.getX(zone)`.
fn timestamp_part<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::Timestamp | Ty::Dyn] | [Ty::Timestamp | Ty::Dyn, Ty::String | Ty::Dyn] => {
            Some(Ty::Int)
        }
        _ => None,
    }
}

/// As [`timestamp_part`], and `d.getX()` on durations.
fn timestamp_or_duration_part<'s>(a: &[Ty<'s>]) -> Option<Ty<'s>> {
    match a {
        [Ty::Timestamp | Ty::Duration | Ty::Dyn]
        | [Ty::Timestamp | Ty::Dyn, Ty::String | Ty::Dyn] => Some(Ty::Int),
        _ => None,
    }
}

pub static GET_FULL_YEAR: Function = Function {
    name: "getFullYear",
    overloads: &[("timestamp_to_year", 23), ("timestamp_to_year_with_tz", 23)],
    check: Some(timestamp_part),
    call: |a| part(a, Part::Year),
    ..ACCESSOR
};

pub static GET_MONTH: Function = Function {
    name: "getMonth",
    overloads: &[
        ("timestamp_to_month", 23),
        ("timestamp_to_month_with_tz", 23),
    ],
    check: Some(timestamp_part),
    call: |a| part(a, Part::Month),
    ..ACCESSOR
};

pub static GET_DAY_OF_MONTH: Function = Function {
    name: "getDayOfMonth",
    overloads: &[
        ("timestamp_to_day_of_month", 23),
        ("timestamp_to_day_of_month_with_tz", 23),
    ],
    check: Some(timestamp_part),
    call: |a| part(a, Part::DayOfMonth),
    ..ACCESSOR
};

pub static GET_DATE: Function = Function {
    name: "getDate",
    overloads: &[
        ("timestamp_to_day_of_month_1_based", 23),
        ("timestamp_to_day_of_month_1_based_with_tz", 23),
    ],
    check: Some(timestamp_part),
    call: |a| part(a, Part::Date),
    ..ACCESSOR
};

pub static GET_DAY_OF_WEEK: Function = Function {
    name: "getDayOfWeek",
    overloads: &[
        ("timestamp_to_day_of_week", 23),
        ("timestamp_to_day_of_week_with_tz", 23),
    ],
    check: Some(timestamp_part),
    call: |a| part(a, Part::DayOfWeek),
    ..ACCESSOR
};

pub static GET_DAY_OF_YEAR: Function = Function {
    name: "getDayOfYear",
    overloads: &[
        ("timestamp_to_day_of_year", 23),
        ("timestamp_to_day_of_year_with_tz", 23),
    ],
    check: Some(timestamp_part),
    call: |a| part(a, Part::DayOfYear),
    ..ACCESSOR
};

pub static GET_HOURS: Function = Function {
    name: "getHours",
    overloads: &[
        ("timestamp_to_hours", 23),
        ("timestamp_to_hours_with_tz", 23),
        ("duration_to_hours", 23),
    ],
    check: Some(timestamp_or_duration_part),
    call: |a| part(a, Part::Hours),
    ..ACCESSOR
};

pub static GET_MINUTES: Function = Function {
    name: "getMinutes",
    overloads: &[
        ("timestamp_to_minutes", 23),
        ("timestamp_to_minutes_with_tz", 23),
        ("duration_to_minutes", 23),
    ],
    check: Some(timestamp_or_duration_part),
    call: |a| part(a, Part::Minutes),
    ..ACCESSOR
};

pub static GET_SECONDS: Function = Function {
    name: "getSeconds",
    overloads: &[
        ("timestamp_to_seconds", 23),
        ("timestamp_to_seconds_tz", 23),
        ("duration_to_seconds", 23),
    ],
    check: Some(timestamp_or_duration_part),
    call: |a| part(a, Part::Seconds),
    ..ACCESSOR
};

pub static GET_MILLISECONDS: Function = Function {
    name: "getMilliseconds",
    overloads: &[
        ("timestamp_to_milliseconds", 23),
        ("timestamp_to_milliseconds_with_tz", 23),
        ("duration_to_milliseconds", 23),
    ],
    check: Some(timestamp_or_duration_part),
    call: |a| part(a, Part::Milliseconds),
    ..ACCESSOR
};

fn part<'a>(args: &[Value<'a>], part: Part) -> Result<Value<'a>, EvalError> {
    let a0 = first(args)?;
    if let (Value::Duration(d), 1) = (a0, args.len()) {
        return Ok(Value::Int(match part {
            Part::Hours => d.num_hours(),
            Part::Minutes => d.num_minutes(),
            Part::Seconds => d.num_seconds(),
            Part::Milliseconds => d.num_milliseconds(),
            _ => return Err(overload()),
        }));
    }
    let Value::Timestamp(t) = a0 else {
        return Err(overload());
    };
    let t = match args.get(1) {
        // Accessors read UTC unless told a zone (DefaultUTCTimeZone).
        None => t.with_timezone(&Utc).fixed_offset(),
        Some(Value::Str(tz)) => with_timezone(t, tz)?,
        Some(_) => return Err(overload()),
    };
    Ok(Value::Int(match part {
        Part::Year => t.year() as i64,
        Part::Month => t.month0() as i64,
        Part::DayOfMonth => t.day0() as i64,
        Part::Date => t.day() as i64,
        Part::DayOfWeek => t.weekday().num_days_from_sunday() as i64,
        Part::DayOfYear => t.ordinal0() as i64,
        Part::Hours => t.hour() as i64,
        Part::Minutes => t.minute() as i64,
        Part::Seconds => t.second() as i64,
        Part::Milliseconds => (t.nanosecond() / 1_000_000) as i64,
    }))
}

fn with_timezone(t: &DateTime<FixedOffset>, tz: &str) -> Result<DateTime<FixedOffset>, EvalError> {
    use chrono::Offset;
    // An IANA name ("America/New_York", "UTC"), or a fixed offset
    // ("+01:00", "-05:30", "01:00"), as cel-go accepts.
    let bad = || EvalError::new(format!("unknown time zone {tz}"));
    if let Ok(zone) = tz.parse::<chrono_tz::Tz>() {
        let local = t.with_timezone(&zone);
        let offset = local.offset().fix();
        return Ok(t.with_timezone(&offset));
    }
    // "Local" is the server's zone (UTC in a container); "" is UTC to Go.
    if tz == "Local" || tz.is_empty() {
        return Ok(t.with_timezone(&chrono::Utc).fixed_offset());
    }
    // A `[+-]HH:MM` offset; its numbers are read as Go's Atoi reads them.
    let Some((h, m)) = tz.split_once(':') else {
        return Err(bad());
    };
    let atoi = |part: &str| {
        part.parse::<i32>()
            .map_err(|_| EvalError::new(format!("strconv.Atoi: parsing {part:?}: invalid syntax")))
    };
    let (sign, h) = match h.as_bytes().first() {
        Some(b'-') => (-1, &h[1..]),
        Some(b'+') => (1, &h[1..]),
        _ => (1, h),
    };
    let secs = atoi(h)? * 3600 + atoi(m)? * 60;
    let off = chrono::FixedOffset::east_opt(sign * secs).ok_or_else(bad)?;
    Ok(t.with_timezone(&off))
}
