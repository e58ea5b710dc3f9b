//! The timestamp and duration accessors (`getFullYear`, `getHours`, ...),
//! in UTC unless a time zone is given.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDateTime, TimeDelta, Timelike};

use crate::registry::{first, overload, Check, Function};
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

const ACCESSOR: Function = Function::BASE
    .member_arities(&[0, 1])
    .returns(TypeName::Int);

/// `t.getX()` or `t.getX(zone)`.
fn timestamp_part(a: &[Ty<'_>]) -> bool {
    matches!(
        a,
        [Ty::Timestamp | Ty::Dyn] | [Ty::Timestamp | Ty::Dyn, Ty::String | Ty::Dyn]
    )
}

/// As [`timestamp_part`], and `d.getX()` on durations.
fn timestamp_or_duration_part(a: &[Ty<'_>]) -> bool {
    matches!(
        a,
        [Ty::Timestamp | Ty::Duration | Ty::Dyn] | [Ty::Timestamp | Ty::Dyn, Ty::String | Ty::Dyn]
    )
}

/// Declares the accessor rows: name, part read, signature, overload ids
/// (all in the base environment since 1.23).
macro_rules! accessors {
    ($($row:ident = $name:literal, $part:ident, $check:ident, [$($id:literal),*];)*) => {$(
        #[doc = concat!("`", $name, "()`.")]
        pub static $row: Function = Function {
            name: $name,
            since: 23,
            overloads: concat!($($id, " "),*),
            check: Check::Accepts($check),
            call: |a| part(a, Part::$part),
            ..ACCESSOR
        };
    )*};
}

accessors! {
    GET_FULL_YEAR = "getFullYear", Year, timestamp_part, ["timestamp_to_year", "timestamp_to_year_with_tz"];
    GET_MONTH = "getMonth", Month, timestamp_part, ["timestamp_to_month", "timestamp_to_month_with_tz"];
    GET_DAY_OF_MONTH = "getDayOfMonth", DayOfMonth, timestamp_part, ["timestamp_to_day_of_month", "timestamp_to_day_of_month_with_tz"];
    GET_DATE = "getDate", Date, timestamp_part, ["timestamp_to_day_of_month_1_based", "timestamp_to_day_of_month_1_based_with_tz"];
    GET_DAY_OF_WEEK = "getDayOfWeek", DayOfWeek, timestamp_part, ["timestamp_to_day_of_week", "timestamp_to_day_of_week_with_tz"];
    GET_DAY_OF_YEAR = "getDayOfYear", DayOfYear, timestamp_part, ["timestamp_to_day_of_year", "timestamp_to_day_of_year_with_tz"];
    GET_HOURS = "getHours", Hours, timestamp_or_duration_part, ["timestamp_to_hours", "timestamp_to_hours_with_tz", "duration_to_hours"];
    GET_MINUTES = "getMinutes", Minutes, timestamp_or_duration_part, ["timestamp_to_minutes", "timestamp_to_minutes_with_tz", "duration_to_minutes"];
    GET_SECONDS = "getSeconds", Seconds, timestamp_or_duration_part, ["timestamp_to_seconds", "timestamp_to_seconds_tz", "duration_to_seconds"];
    GET_MILLISECONDS = "getMilliseconds", Milliseconds, timestamp_or_duration_part, ["timestamp_to_milliseconds", "timestamp_to_milliseconds_with_tz", "duration_to_milliseconds"];
}

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
        None => t.naive_utc(),
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

/// The wall clock `t` shows in zone `tz`, for the getters.
fn with_timezone(t: &DateTime<FixedOffset>, tz: &str) -> Result<NaiveDateTime, EvalError> {
    // An IANA name ("America/New_York", "UTC"), or a fixed offset
    // ("+01:00", "-05:30", "01:00"), as cel-go accepts.
    let bad = || EvalError::new(format!("unknown time zone {tz}"));
    if let Ok(zone) = tz.parse::<chrono_tz::Tz>() {
        return Ok(t.with_timezone(&zone).naive_local());
    }
    // "Local" is the server's zone (UTC in a container); "" is UTC to Go.
    if tz == "Local" || tz.is_empty() {
        return Ok(t.naive_utc());
    }
    // `HH:MM`, each read by Go's Atoi (a sign allowed on both), combined
    // in Go's wrapping int arithmetic with no range check, as in the cel-go
    // of Kubernetes 1.30-1.37 (v0.30 bounds both parts): any offset shifts
    // the clock, even past a day.
    let Some((h, m)) = tz.split_once(':') else {
        return Err(bad());
    };
    let atoi = |part: &str| {
        part.parse::<i64>().map_err(|e| {
            use std::num::IntErrorKind::{NegOverflow, PosOverflow};
            let why = match e.kind() {
                PosOverflow | NegOverflow => "value out of range",
                _ => "invalid syntax",
            };
            EvalError::new(format!("strconv.Atoi: parsing {part:?}: {why}"))
        })
    };
    let (hr, min) = (atoi(h)?, atoi(m)?);
    let minutes = if tz.starts_with('-') {
        hr.wrapping_mul(60).wrapping_sub(min)
    } else {
        hr.wrapping_mul(60).wrapping_add(min)
    };
    // time.Duration(offset) * time.Minute, then Duration.Seconds() as a
    // float64 and int() of it, which truncates.
    let nanos = minutes.wrapping_mul(60_000_000_000);
    let secs = ((nanos / 1_000_000_000) as f64 + (nanos % 1_000_000_000) as f64 / 1e9) as i64;
    TimeDelta::try_seconds(secs)
        .and_then(|d| t.naive_utc().checked_add_signed(d))
        .ok_or_else(bad)
}
