//! `matches` with a constant pattern, compiled once at load.
//!
//! The `regex` crate's `is_match` spends most of its time on a short
//! string (a port name, a label) in setting up its search: a pooled
//! cache, the choice of engine, the start state. Where the pattern's
//! fully built DFA is small, this runs it directly, a table lookup per
//! byte. Written here rather than taken whole from `regex` because the
//! crate offers no entry point without that set-up; `regex-automata`
//! (which `regex` is built on) supplies the DFA.

use regex::Regex;
use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::Anchored;

use crate::registry::scaled;
use crate::value::str_size;

/// Past this size a pattern runs on the `regex` crate alone: a large DFA
/// (Unicode classes, long alternations) costs memory for every rule;
/// ordinary ones take under a KiB (`^[a-z]([-a-z0-9]*[a-z0-9])?$`: 320 bytes).
const DFA_LIMIT: usize = 16 << 10;

/// A compiled constant pattern: the regex, and its DFA where small.
#[derive(Debug)]
pub(crate) struct Matcher {
    regex: Regex,
    /// The DFA where small, and its start state: every search starts at
    /// the text's first byte, unanchored, so the state is found once here
    /// rather than on each call (a third of a short name's match).
    dfa: Option<(dense::DFA<Vec<u32>>, StateID)>,
    /// The pattern's length in characters as written (the compiled regex
    /// is RE2's syntax translated), which prices the call.
    pattern_len: u32,
    /// Its factor of what `matches` charges (see [`Matcher::cost`]).
    pattern_factor: u64,
}

impl Matcher {
    /// `regex` compiled from a pattern of `pattern_len` characters.
    pub(crate) fn new(regex: Regex, pattern_len: u32) -> Matcher {
        // The same syntax defaults `Regex::new` parses the pattern with.
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Unanchored)
                    .dfa_size_limit(Some(DFA_LIMIT))
                    .determinize_size_limit(Some(4 * DFA_LIMIT)),
            )
            .build(regex.as_str())
            .ok()
            .and_then(|dfa| {
                let config = start::Config::new().anchored(Anchored::No);
                let state = dfa.start_state(&config).ok()?;
                // A special start state (a match of the empty string, a
                // dead or quit state) is left to the regex, as before.
                (!dfa.is_special_state(state) || dfa.is_accel_state(state)).then_some((dfa, state))
            });
        Matcher {
            regex,
            dfa,
            pattern_len,
            pattern_factor: scaled(u64::from(pattern_len), 0.25),
        }
    }

    /// The pattern's length in characters as written.
    pub(crate) fn pattern_len(&self) -> u32 {
        self.pattern_len
    }

    /// What `matches` charges on `s` (cel-go's tenth of the string's size
    /// times a quarter of the pattern's, both rounded up).
    #[inline]
    pub(crate) fn cost(&self, s: &str) -> u64 {
        scaled(1 + str_size(s), 0.1) * self.pattern_factor
    }

    /// Whether the pattern matches anywhere in `s`, as `Regex::is_match`.
    #[inline]
    pub(crate) fn is_match(&self, s: &str) -> bool {
        match &self.dfa {
            Some((dfa, start)) => run(dfa, *start, s).unwrap_or_else(|| self.regex.is_match(s)),
            None => self.regex.is_match(s),
        }
    }
}

/// The DFA over `s`, stopping at the first match; `None` where only the
/// regex answers (a start or quit state this loop does not handle).
#[inline]
fn run(dfa: &dense::DFA<Vec<u32>>, start: StateID, s: &str) -> Option<bool> {
    let mut state = start;
    for &b in s.as_bytes() {
        state = dfa.next_state(state, b);
        if dfa.is_special_state(state) {
            // Matches show one byte late: a match state here means a match
            // ended before this byte.
            if dfa.is_match_state(state) {
                return Some(true);
            }
            if dfa.is_dead_state(state) {
                return Some(false);
            }
            if dfa.is_quit_state(state) {
                return None;
            }
        }
    }
    Some(dfa.is_match_state(dfa.next_eoi_state(state)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DFA path answers as the regex does, on patterns of each kind
    /// the rules use (anchored, unanchored, classes, alternation, empty
    /// matches, non-ASCII) and on strings that match, do not, or stop
    /// early.
    #[test]
    fn answers_as_the_regex() {
        let patterns = [
            "^[a-z]([-a-z0-9]*[a-z0-9])?$",
            "^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+:[A-Za-z0-9._-]+$",
            "ab",
            "a|bc$",
            "",
            "^$",
            "x*",
            "é+",
            "^.$",
            "[^a]",
            "(?i)abc",
            "\\d{3}",
        ];
        let inputs = [
            "",
            "a",
            "ab",
            "xab",
            "http",
            "http-",
            "-http",
            "a1-b2",
            "é",
            "éé",
            "ÿ",
            "bc",
            "bcd",
            "ABC",
            "xaBcx",
            "123",
            "12",
            "registry.example.com/payments/checkout:3.14.2",
            "\n",
            "a\nb",
        ];
        let mut direct = 0;
        for p in patterns {
            let m = Matcher::new(Regex::new(p).expect("pattern"), 0);
            for s in inputs {
                assert_eq!(m.is_match(s), m.regex.is_match(s), "{p:?} on {s:?}");
                if m.dfa
                    .as_ref()
                    .and_then(|(d, start)| run(d, *start, s))
                    .is_some()
                {
                    direct += 1;
                }
            }
        }
        // Most answers came from the DFA, not the fallback.
        assert!(direct > patterns.len() * inputs.len() * 3 / 4, "{direct}");
    }

    /// The pattern's factor kept at load gives what the library's
    /// `matches` cost gives, at sizes whose float products round up.
    #[test]
    fn charges_as_the_library_does() {
        let regex = Regex::new("a").expect("pattern");
        for pattern_len in [0, 1, 4, 5, 29, 40, 1000] {
            let m = Matcher::new(regex.clone(), pattern_len);
            for n in [0, 1, 9, 10, 29, 30, 99, 1000] {
                for s in ["x".repeat(n), "é".repeat(n)] {
                    let v = crate::value::Value::Str(crate::value::Str::Borrowed(&s));
                    let library = crate::library::core::matches_cost(&v, pattern_len as usize);
                    assert_eq!(
                        m.cost(&s),
                        library,
                        "{n} characters, pattern of {pattern_len}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_large_automaton_stays_with_the_regex() {
        let m = Matcher::new(Regex::new("\\w{50}").expect("pattern"), 5);
        assert!(m.dfa.is_none());
        assert!(m.is_match(&"é".repeat(50)));
    }
}
