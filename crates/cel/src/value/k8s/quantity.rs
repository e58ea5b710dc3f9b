//! Kubernetes resource quantities (`resource.Quantity` of
//! k8s.io/apimachinery) as the CEL quantity library sees them: the same
//! parser (decimal SI, binary SI and exponent suffixes, rounding up to
//! nano-units, the binary-SI cap), exact comparison and arithmetic, and the
//! same split between the int64 fast path and arbitrary precision, which
//! decides what `asInteger()`/`isInteger()` answer (e.g. `1000m` is not an
//! integer for the API server). Hand-written: no crate models these rules.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, Sign};
use num_traits::{Signed, ToPrimitive, Zero};

const ERR_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";

/// The smallest unit kept: values are rounded up (away from zero) to it.
const NANO: i32 = -9;

/// The widest exponent gap `add`/`sub` align exactly (digits of the result).
const MAX_ALIGN: i64 = 4096;

/// A quantity: `value × 10^scale`.
#[derive(Clone, Debug)]
pub struct Quantity {
    amount: Amount,
    /// The suffix family the value prints in.
    format: Notation,
}

#[derive(Clone, Debug)]
enum Amount {
    /// The int64 fast path (`int64Amount`).
    Small { value: i64, scale: i32 },
    /// Arbitrary precision (`inf.Dec`); never converts back to an integer.
    Big { unscaled: BigInt, scale: i32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notation {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

struct Parts<'s> {
    positive: bool,
    /// Sign, integer and fraction digits (what `inf.Dec` is parsed from).
    value: &'s str,
    num: &'s str,
    denom: &'s str,
    suffix: &'s str,
}

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

/// The end of the run of bytes from `from` that pass `f`.
fn run_end(b: &[u8], from: usize, f: impl Fn(u8) -> bool) -> usize {
    from + b[from..].iter().take_while(|c| f(**c)).count()
}

/// Splits a quantity into sign, number and suffix, as apimachinery's
/// `parseQuantityString` does (leading zeros of the integer part dropped).
fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut p = Parts {
        positive: true,
        value: "",
        num: "",
        denom: "",
        suffix: "",
    };
    let mut pos = 0;
    match b.first() {
        Some(b'-') => {
            p.positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        p.num = "0";
        p.value = "0";
        return Ok(p);
    }
    // Go returns as soon as the string ends; reading on gives the same
    // parts, as every run below is then empty.
    let i = run_end(b, pos, is_digit);
    p.num = if i == pos { "0" } else { &s[pos..i] };
    pos = i;
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let i = run_end(b, pos, is_digit);
        p.denom = &s[pos..i];
        pos = i;
    }
    p.value = &s[..pos];
    // The suffix: letters, then an optionally signed exponent.
    let mut i = run_end(b, pos, |c| b"eEinumkKMGTP".contains(&c));
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    if run_end(b, i, is_digit) < end {
        return Err(ERR_FORMAT);
    }
    p.suffix = &s[pos..];
    Ok(p)
}

/// The base, exponent and format a suffix stands for.
fn interpret(suffix: &str) -> Option<(u32, i32, Notation)> {
    let dec = |e| Some((10, e, Notation::DecimalSi));
    let bin = |e| Some((2, e, Notation::BinarySi));
    match suffix {
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "" => dec(0),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            if rest.is_empty() {
                return None;
            }
            // Go parses an int64 and truncates it to int32.
            let e: i64 = rest.parse().ok()?;
            Some((10, e as i32, Notation::DecimalExponent))
        }
    }
}

fn pow10(n: u32) -> BigInt {
    BigInt::from(10u8).pow(n)
}

fn checked_scale_i64(value: i64, scale: i32) -> Option<i64> {
    if value == 0 {
        return Some(0);
    }
    // Anything non-zero overflows within 19 steps, so this stays short.
    let mut v = value;
    for _ in 0..scale {
        v = v.checked_mul(10)?;
    }
    Some(v)
}

impl Quantity {
    /// Parses a quantity string with `resource.ParseQuantity`'s rules and
    /// error texts.
    pub fn parse(s: &str) -> Result<Quantity, &'static str> {
        if s.is_empty() {
            return Err(ERR_FORMAT);
        }
        if s == "0" {
            return Ok(Quantity {
                amount: Amount::Small { value: 0, scale: 0 },
                format: Notation::DecimalSi,
            });
        }
        let p = split(s)?;
        let (base, exponent, format) = interpret(p.suffix).ok_or(ERR_SUFFIX)?;
        let (mut scale, precision, mantissa): (i32, i32, i64) = match format {
            Notation::DecimalSi | Notation::DecimalExponent => {
                (exponent, 18 - (p.num.len() + p.denom.len()) as i32, 1)
            }
            Notation::BinarySi if exponent >= 0 && p.denom.is_empty() => (
                0,
                15 - p.num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1,
                1i64 << exponent,
            ),
            Notation::BinarySi => (0, -1, 1),
        };
        if precision >= 0 {
            // Go's int32 scale wraps here (`1.5e-2147483648`).
            scale = scale.wrapping_sub(p.denom.len() as i32);
            if scale >= NANO {
                let shifted = format!("{}{}", p.num, p.denom);
                let value: i64 = shifted.parse().map_err(|_| ERR_NUMERIC)?;
                if let Some(result) = value.checked_mul(mantissa) {
                    let value = if p.positive { result } else { -result };
                    return Ok(Quantity {
                        amount: Amount::Small { value, scale },
                        format,
                    });
                }
            }
        }
        // Arbitrary precision.
        let (int_part, frac) = p.value.split_once('.').unwrap_or((p.value, ""));
        let all_digits = format!("{int_part}{frac}");
        let mut unscaled: BigInt = match all_digits.as_str() {
            "" | "+" | "-" => return Err(ERR_NUMERIC),
            d => d.parse().map_err(|_| ERR_NUMERIC)?,
        };
        let mut scale = -(frac.len() as i32);
        if base == 10 {
            scale = scale.saturating_add(exponent);
        } else {
            unscaled *= BigInt::from(1u8) << exponent.max(0) as usize;
        }
        let negative = unscaled.sign() == Sign::Minus;
        let mut abs = unscaled.abs();
        // Non-zero values round up to a whole number of nano-units. A shift
        // longer than the number leaves one nano-unit (no huge power).
        if !abs.is_zero() && scale < NANO {
            let shift = i64::from(NANO) - i64::from(scale);
            if shift > digits(&abs) {
                abs = BigInt::from(1u8);
            } else {
                let div = pow10(shift as u32);
                let (q, r) = (&abs / &div, &abs % &div);
                abs = if r.is_zero() { q } else { q + 1 };
            }
            scale = NANO;
        }
        if format == Notation::BinarySi {
            let max = BigInt::from(i64::MAX);
            if cmp_scaled(&abs, scale, &max, 0) == Ordering::Greater {
                abs = max;
                scale = 0;
            }
        }
        // A binary quantity below one prints as a decimal one.
        let format = if format == Notation::BinarySi
            && !abs.is_zero()
            && cmp_scaled(&abs, scale, &BigInt::from(1u8), 0) == Ordering::Less
        {
            Notation::DecimalSi
        } else {
            format
        };
        let unscaled = if negative { -abs } else { abs };
        Ok(Quantity {
            amount: Amount::Big { unscaled, scale },
            format,
        })
    }

    /// An integer quantity (`resource.NewQuantity` with the exponent
    /// format, as the library's `add(int)`/`sub(int)` make it).
    pub fn from_i64(value: i64) -> Quantity {
        Quantity {
            amount: Amount::Small { value, scale: 0 },
            format: Notation::DecimalExponent,
        }
    }

    fn is_zero(&self) -> bool {
        self.sign() == 0
    }

    fn big(&self) -> (BigInt, i32) {
        match &self.amount {
            Amount::Small { value, scale } => (BigInt::from(*value), *scale),
            Amount::Big { unscaled, scale } => (unscaled.clone(), *scale),
        }
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i64 {
        match &self.amount {
            Amount::Small { value, .. } => value.signum(),
            Amount::Big { unscaled, .. } => match unscaled.sign() {
                Sign::Minus => -1,
                Sign::NoSign => 0,
                Sign::Plus => 1,
            },
        }
    }

    /// The value as an int64 when the fast path holds an integer that fits
    /// (`Quantity.AsInt64`): a negative scale or arbitrary precision is
    /// never an integer.
    pub fn as_i64(&self) -> Option<i64> {
        match &self.amount {
            Amount::Small { value, scale } if *scale >= 0 => checked_scale_i64(*value, *scale),
            _ => None,
        }
    }

    /// `AsApproximateFloat64`: the unscaled value times a power of ten.
    pub fn approximate_f64(&self) -> f64 {
        let (base, exp) = match &self.amount {
            Amount::Small { value, scale } => (*value as f64, *scale),
            Amount::Big { unscaled, scale } => (unscaled.to_f64().unwrap_or(f64::NAN), *scale),
        };
        if exp == 0 {
            return base;
        }
        // `1eN` parses to the correctly rounded power, like Go's math.Pow10.
        base * format!("1e{exp}").parse::<f64>().unwrap_or(f64::NAN)
    }

    /// `self + other`, staying on the int64 path while it can; a zero
    /// receiver takes the other's format.
    pub fn add(&self, other: &Quantity) -> Quantity {
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        if let (
            Amount::Small {
                value: a,
                scale: sa,
            },
            Amount::Small {
                value: b,
                scale: sb,
            },
        ) = (&self.amount, &other.amount)
        {
            if let Some((value, scale)) = small_add(*a, *sa, *b, *sb) {
                return Quantity {
                    amount: Amount::Small { value, scale },
                    format,
                };
            }
        }
        let (a, sa) = self.big();
        let (b, sb) = other.big();
        // Aligning exponents more than MAX_ALIGN apart would build a number
        // of that many digits (a zero may carry any exponent: it is never
        // rounded at parse). A zero adds nothing. A non-zero term whose top
        // digit sits that far below the other's last is under its precision
        // by far, and is dropped. (The API server computes the exact, huge
        // sum.) What is kept stays in arbitrary precision, as Go's sum does.
        let gap = i64::from(sa) - i64::from(sb);
        if gap.abs() > MAX_ALIGN {
            let far_below = |lo: &BigInt, gap: i64| gap - digits(lo) > MAX_ALIGN;
            let keep_a = b.is_zero() || (!a.is_zero() && gap > 0 && far_below(&b, gap));
            let keep_b = a.is_zero() || (gap < 0 && far_below(&a, -gap));
            if keep_a || keep_b {
                let (unscaled, scale) = if keep_a { (a, sa) } else { (b, sb) };
                return Quantity {
                    amount: Amount::Big { unscaled, scale },
                    format,
                };
            }
        }
        // The shifts are at most MAX_ALIGN past the operands' own digits.
        let scale = sa.min(sb);
        let shift = |s: i32| (i64::from(s) - i64::from(scale)) as u32;
        let unscaled = a * pow10(shift(sa)) + b * pow10(shift(sb));
        Quantity {
            amount: Amount::Big { unscaled, scale },
            format,
        }
    }

    /// `self - other`.
    pub fn sub(&self, other: &Quantity) -> Quantity {
        let neg = match &other.amount {
            // Go negates the int64 with wrap-around.
            Amount::Small { value, scale } => Amount::Small {
                value: value.wrapping_neg(),
                scale: *scale,
            },
            Amount::Big { unscaled, scale } => Amount::Big {
                unscaled: -unscaled,
                scale: *scale,
            },
        };
        self.add(&Quantity {
            amount: neg,
            format: other.format,
        })
    }
}

/// `int64Amount.Add`: exact when both fit after aligning to the smaller
/// scale, `None` on overflow.
fn small_add(a: i64, sa: i32, b: i64, sb: i32) -> Option<(i64, i32)> {
    if b == 0 {
        return Some((a, sa));
    }
    if a == 0 {
        return Some((b, sb));
    }
    if sa == sb {
        return Some((a.checked_add(b)?, sa));
    }
    // Go subtracts the int32 scales with wrap-around; a wrapped, negative
    // difference scales by nothing.
    if sa > sb {
        Some((
            checked_scale_i64(a, sa.wrapping_sub(sb))?.checked_add(b)?,
            sb,
        ))
    } else {
        Some((
            a.checked_add(checked_scale_i64(b, sb.wrapping_sub(sa))?)?,
            sa,
        ))
    }
}

/// Number of decimal digits of `|v|` (1 for zero).
fn digits(v: &BigInt) -> i64 {
    v.magnitude().to_string().len() as i64
}

/// Exact comparison of `a×10^sa` and `b×10^sb`. Magnitudes are compared
/// first, so exponents far apart never build huge powers of ten.
fn cmp_scaled(a: &BigInt, sa: i32, b: &BigInt, sb: i32) -> Ordering {
    let (sign_a, sign_b) = (a.sign(), b.sign());
    if sign_a != sign_b || sign_a == Sign::NoSign {
        return sign_a.cmp(&sign_b);
    }
    let mag_a = digits(a) + i64::from(sa);
    let mag_b = digits(b) + i64::from(sb);
    if mag_a != mag_b {
        let o = mag_a.cmp(&mag_b);
        return if sign_a == Sign::Minus {
            o.reverse()
        } else {
            o
        };
    }
    // Same magnitude: the scales differ by at most the digit counts.
    let scale = sa.min(sb);
    let a = a * pow10((sa - scale) as u32);
    let b = b * pow10((sb - scale) as u32);
    a.cmp(&b)
}

impl fmt::Display for Quantity {
    /// The canonical form (`Quantity.String`): binary suffixes for binary
    /// quantities that are whole and at least 1Ki, otherwise the smallest
    /// decimal suffix (or `eN` exponent) that keeps the number whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        let (v, scale) = self.big();
        let mut format = self.format;
        // Binary quantities are at most int64 in size (capped at parse);
        // a huge exponent from arithmetic prints in decimal.
        if format == Notation::BinarySi && scale.unsigned_abs() > 64 {
            format = Notation::DecimalSi;
        }
        if format == Notation::BinarySi {
            let whole = scale >= 0 || (&v % pow10((-scale) as u32)).is_zero();
            let small = cmp_scaled(&v.abs(), scale, &BigInt::from(1024), 0) == Ordering::Less;
            if small || !whole {
                format = Notation::DecimalSi;
            }
        }
        if format == Notation::BinarySi {
            let mut n = if scale >= 0 {
                v * pow10(scale as u32)
            } else {
                v / pow10((-scale) as u32)
            };
            let base = BigInt::from(1024);
            let mut exp = 0usize;
            while n.abs() >= base && (&n % &base).is_zero() {
                n /= &base;
                exp += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .get(exp)
                .copied()
                .unwrap_or("");
            return write!(f, "{n}{suffix}");
        }
        let ten = BigInt::from(10);
        let (mut n, mut exp) = (v, scale);
        // Go's exponent is an int32 that wraps. An int64 amount takes one
        // step to a multiple of three; a big one steps until it is one.
        while n.abs() >= ten && (&n % &ten).is_zero() {
            n /= &ten;
            exp = exp.wrapping_add(1);
        }
        if matches!(self.amount, Amount::Small { .. }) {
            match exp % 3 {
                1 | -2 => (n, exp) = (n * &ten, exp.wrapping_sub(1)),
                2 | -1 => (n, exp) = (n * BigInt::from(100), exp.wrapping_sub(2)),
                _ => {}
            }
        } else {
            while exp % 3 != 0 {
                n *= &ten;
                exp = exp.wrapping_sub(1);
            }
        }
        if format == Notation::DecimalExponent {
            return if exp == 0 {
                write!(f, "{n}")
            } else {
                write!(f, "{n}e{exp}")
            };
        }
        // Go prints no suffix when the exponent has none.
        let suffix = match exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        };
        write!(f, "{n}{suffix}")
    }
}

/// Exact comparison.
impl Ord for Quantity {
    fn cmp(&self, other: &Quantity) -> Ordering {
        let (a, sa) = self.big();
        let (b, sb) = other.big();
        cmp_scaled(&a, sa, &b, sb)
    }
}

eq_by_cmp!(Quantity);

#[cfg(test)]
mod tests;
