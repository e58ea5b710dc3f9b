//! The deadline of the request whose rules or conversions run on this
//! thread, and the patterns it compiled.
//!
//! Evaluation runs on a blocking thread, one request at a time, so the
//! deadline is thread-local: the checks sit where unbounded uncharged work
//! can happen (before each rule, each converted object, each run-time
//! regex compile) without threading a clock through every call. Charged
//! work between two checks is bounded by the cost limits.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use regex::Regex;

/// Run-time patterns kept per request: a rule that compiles the same
/// pattern for every item of a list compiles it once. Few, because a
/// compiled pattern may take megabytes.
const KEPT_PATTERNS: usize = 8;

/// [`tick`] reads the clock once in this many calls.
const TICKS_PER_CHECK: u32 = 32;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static EXPIRED: Cell<bool> = const { Cell::new(false) };
    static TICKS: Cell<u32> = const { Cell::new(0) };
    static INLINE: Cell<bool> = const { Cell::new(false) };
    static PATTERNS: RefCell<Vec<(String, Regex)>> = const { RefCell::new(Vec::new()) };
}

/// The deadline of this thread's evaluation while it lives.
#[must_use = "the deadline holds only while the scope lives"]
pub struct Scope(());

/// Sets `deadline` for what runs on this thread until the scope drops.
pub fn enter(deadline: Instant) -> Scope {
    DEADLINE.set(Some(deadline));
    EXPIRED.set(false);
    INLINE.set(false);
    PATTERNS.with_borrow_mut(Vec::clear);
    Scope(())
}

/// Like [`enter`], for a first attempt on a thread that must not be held
/// long (an I/O thread): besides the deadline, the first run-time regex
/// compile counts as expired, so the caller can run the work again where
/// time is not an issue.
pub fn enter_inline(deadline: Instant) -> Scope {
    let scope = enter(deadline);
    INLINE.set(true);
    scope
}

impl Scope {
    /// True once the deadline passed (as seen by a check).
    pub fn expired(&self) -> bool {
        EXPIRED.get()
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        DEADLINE.set(None);
        EXPIRED.set(false);
        INLINE.set(false);
        PATTERNS.with_borrow_mut(Vec::clear);
    }
}

/// Checks the clock: true (and from now on) once the deadline passed.
/// Without a scope there is no deadline.
pub fn expired() -> bool {
    if EXPIRED.get() {
        return true;
    }
    match DEADLINE.get() {
        Some(deadline) if Instant::now() >= deadline => {
            EXPIRED.set(true);
            true
        }
        _ => false,
    }
}

/// [`expired`] for the frequent places (each loop, each rule): reads the
/// clock once every 32 calls, so that a review of a few dozen rules pays
/// for one clock read. Work between two reads is bounded by the cost limits.
#[inline]
pub fn tick() -> bool {
    let n = TICKS.get().wrapping_add(1);
    TICKS.set(n);
    if n % TICKS_PER_CHECK != 0 {
        return EXPIRED.get();
    }
    expired()
}

/// The error text of work stopped at the deadline.
pub const DEADLINE_MESSAGE: &str = "evaluation stopped: the request's deadline passed";

/// `pattern` compiled by `compile`, or the one this request compiled
/// before; fails once the deadline passed.
pub fn regex(
    pattern: &str,
    compile: impl FnOnce(&str) -> Result<Regex, String>,
) -> Result<Regex, String> {
    if let Some(re) = PATTERNS.with_borrow(|kept| {
        kept.iter()
            .find(|(p, _)| p == pattern)
            .map(|(_, re)| re.clone())
    }) {
        return Ok(re);
    }
    if INLINE.get() {
        EXPIRED.set(true);
    }
    if expired() {
        return Err(DEADLINE_MESSAGE.into());
    }
    let re = compile(pattern)?;
    if DEADLINE.get().is_some() {
        PATTERNS.with_borrow_mut(|kept| {
            if kept.len() == KEPT_PATTERNS {
                kept.remove(0);
            }
            kept.push((pattern.to_owned(), re.clone()));
        });
    }
    Ok(re)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn no_scope_no_deadline() {
        assert!(!expired());
    }

    #[test]
    fn a_passed_deadline_is_seen_and_stays_seen_until_the_scope_ends() {
        let scope = enter(Instant::now() + Duration::from_millis(20));
        assert!(!expired());
        std::thread::sleep(Duration::from_millis(30));
        assert!(expired());
        assert!(scope.expired());
        assert!(regex("a+", |p| Regex::new(p).map_err(|e| e.to_string())).is_err());
        drop(scope);
        assert!(!expired());
    }

    #[test]
    fn ticks_see_a_passed_deadline_within_a_few_dozen_calls() {
        let _scope = enter(Instant::now());
        let seen = (0..TICKS_PER_CHECK).position(|_| tick());
        assert!(seen.is_some(), "no tick saw the deadline");
        // Once seen, every tick sees it.
        assert!((0..5).all(|_| tick()));
    }

    #[test]
    fn an_inline_attempt_stops_at_its_first_regex_compile() {
        let scope = enter_inline(Instant::now() + Duration::from_secs(60));
        let compiled = regex("a+", |p| Regex::new(p).map_err(|e| e.to_string()));
        assert!(compiled.is_err());
        assert!(scope.expired());
        drop(scope);
        let _scope = enter(Instant::now() + Duration::from_secs(60));
        assert!(regex("a+", |p| Regex::new(p).map_err(|e| e.to_string())).is_ok());
    }

    #[test]
    fn a_pattern_is_compiled_once_per_request() {
        let _scope = enter(Instant::now() + Duration::from_secs(60));
        let mut compiled = 0;
        for _ in 0..5 {
            regex("x[0-9]+", |p| {
                compiled += 1;
                Regex::new(p).map_err(|e| e.to_string())
            })
            .expect("compiles");
        }
        assert_eq!(compiled, 1);
        // More patterns than are kept: the oldest goes first.
        for i in 0..KEPT_PATTERNS {
            regex(&format!("p{i}"), |p| {
                Regex::new(p).map_err(|e| e.to_string())
            })
            .expect("ok");
        }
        regex("x[0-9]+", |p| {
            compiled += 1;
            Regex::new(p).map_err(|e| e.to_string())
        })
        .expect("compiles");
        assert_eq!(compiled, 2);
    }
}
