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
    /// The same DFA as a byte table where it has few states (see [`Table`]).
    table: Option<Table>,
    /// The pattern's length in characters as written (the compiled regex
    /// is RE2's syntax translated), which prices the call.
    pattern_len: u32,
    /// Its factor of what `matches` charges (see [`Matcher::cost`]).
    pattern_factor: u64,
    /// What `matches` charges on strings of each size below
    /// [`COSTS_KEPT`]: the charge is a float product rounded up, as
    /// cel-go computes it, which costs more than a string's match.
    costs: Box<[u64]>,
}

/// The string sizes whose charges a matcher keeps (names, labels, most
/// values rules match).
const COSTS_KEPT: u64 = 64;

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
        let table = dfa.as_ref().and_then(|(dfa, start)| Table::of(dfa, *start));
        let pattern_factor = scaled(u64::from(pattern_len), 0.25);
        Matcher {
            regex,
            dfa,
            table,
            pattern_len,
            pattern_factor,
            costs: (0..COSTS_KEPT)
                .map(|size| scaled(1 + size, 0.1) * pattern_factor)
                .collect(),
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
        self.cost_of_size(str_size(s))
    }

    /// [`Matcher::cost`] of a string of `size` characters.
    #[inline]
    pub(crate) fn cost_of_size(&self, size: u64) -> u64 {
        match usize::try_from(size).ok().and_then(|at| self.costs.get(at)) {
            Some(&cost) => cost,
            None => scaled(1 + size, 0.1) * self.pattern_factor,
        }
    }

    /// Whether the pattern matches anywhere in `s`, as `Regex::is_match`.
    #[inline]
    pub(crate) fn is_match(&self, s: &str) -> bool {
        if let Some(found) = self
            .table
            .as_ref()
            .and_then(|table| table.run(s.as_bytes()))
        {
            return found;
        }
        self.is_match_untabled(s.as_bytes())
    }

    /// [`Matcher::is_match`] of a string's UTF-8 bytes (a table's string
    /// cells, sliced as bytes).
    pub(crate) fn is_match_bytes(&self, s: &[u8]) -> bool {
        if let Some(found) = self.table.as_ref().and_then(|table| table.run(s)) {
            return found;
        }
        self.is_match_untabled(s)
    }

    /// [`Matcher::is_match`] past the byte table: the DFA, else the regex,
    /// the one part that needs the bytes as text. Out of line, so that the
    /// table's loop inlines where names are matched.
    #[inline(never)]
    fn is_match_untabled(&self, s: &[u8]) -> bool {
        if let Some((dfa, start)) = &self.dfa {
            if let Some(found) = run(dfa, *start, s) {
                return found;
            }
        }
        // Bytes of a string (or sliced from one at its characters' ends).
        std::str::from_utf8(s).is_ok_and(|s| self.regex.is_match(s))
    }
}

/// The DFA over `s`, stopping at the first match; `None` where only the
/// regex answers (a start or quit state this loop does not handle).
#[inline]
fn run(dfa: &dense::DFA<Vec<u32>>, start: StateID, s: &[u8]) -> Option<bool> {
    let mut state = start;
    for &b in s {
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

/// At most this many states go into a [`Table`] (16 KiB of rows); the
/// patterns rules use for names and images have a handful.
const TABLE_STATES: usize = 64;

/// A small DFA as one row of 256 next states per state, each byte a
/// single indexed load (`next_state` looks the byte's class up and then
/// the transition: a third of a short name's match). The states that
/// decide (a match, no match possible, a quit) are numbered after the
/// others, so that one comparison per byte finds them.
#[derive(Debug)]
struct Table {
    /// Per state that goes on, its next states; state 0 is the start.
    rows: Vec<[u8; 256]>,
    /// What the states from `rows.len()` on decide.
    verdicts: Vec<Verdict>,
    /// Per state that goes on, whether the text ending there matches.
    at_end: Vec<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// A match ended before this byte.
    Match,
    /// Nothing can match from here.
    NoMatch,
    /// The DFA gave up (a quit byte): only the regex answers.
    Quit,
}

impl Table {
    /// The states reachable from `start`, when there are at most
    /// [`TABLE_STATES`] and `start` goes on.
    fn of(dfa: &dense::DFA<Vec<u32>>, start: StateID) -> Option<Table> {
        let verdict = |id: StateID| {
            if !dfa.is_special_state(id) {
                None
            } else if dfa.is_match_state(id) {
                Some(Verdict::Match)
            } else if dfa.is_dead_state(id) {
                Some(Verdict::NoMatch)
            } else if dfa.is_quit_state(id) {
                Some(Verdict::Quit)
            } else {
                // An accelerated state: special only for speed.
                None
            }
        };
        if verdict(start).is_some() {
            return None;
        }
        // The states that go on, from the start, and those that decide.
        let mut going = vec![start];
        let mut deciding: Vec<StateID> = Vec::new();
        let mut i = 0;
        while let Some(&id) = going.get(i) {
            for byte in 0..=255u8 {
                let to = dfa.next_state(id, byte);
                let known = if verdict(to).is_some() {
                    &mut deciding
                } else {
                    &mut going
                };
                if !known.contains(&to) {
                    known.push(to);
                }
            }
            if going.len() + deciding.len() > TABLE_STATES {
                return None;
            }
            i += 1;
        }
        let number = |id: StateID| -> Option<u8> {
            let at = match going.iter().position(|&g| g == id) {
                Some(at) => at,
                None => going.len() + deciding.iter().position(|&d| d == id)?,
            };
            u8::try_from(at).ok()
        };
        let mut rows = Vec::with_capacity(going.len());
        for &id in &going {
            let mut row = [0u8; 256];
            for (byte, next) in (0..=255u8).zip(row.iter_mut()) {
                *next = number(dfa.next_state(id, byte))?;
            }
            rows.push(row);
        }
        Some(Table {
            rows,
            verdicts: deciding
                .iter()
                .map(|&id| verdict(id))
                .collect::<Option<_>>()?,
            at_end: going
                .iter()
                .map(|&id| dfa.is_match_state(dfa.next_eoi_state(id)))
                .collect(),
        })
    }

    /// As [`run`] answers, on the table.
    #[inline(always)]
    fn run(&self, s: &[u8]) -> Option<bool> {
        // The rows as a local slice, and the state kept below their count
        // by the test that finds the deciding states: each byte's row is
        // then read without a bounds check of its own.
        let rows: &[[u8; 256]] = &self.rows;
        let going = rows.len();
        if going == 0 {
            return None;
        }
        let mut state = 0usize;
        for &b in s {
            let next = usize::from(rows[state][usize::from(b)]);
            if next >= going {
                return match self.verdicts.get(next - going)? {
                    Verdict::Match => Some(true),
                    Verdict::NoMatch => Some(false),
                    Verdict::Quit => None,
                };
            }
            state = next;
        }
        self.at_end.get(state).copied()
    }
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
        let mut tabled = 0;
        for p in patterns {
            let m = Matcher::new(Regex::new(p).expect("pattern"), 0);
            for s in inputs {
                assert_eq!(m.is_match(s), m.regex.is_match(s), "{p:?} on {s:?}");
                assert_eq!(
                    m.is_match_bytes(s.as_bytes()),
                    m.regex.is_match(s),
                    "{p:?} on {s:?}"
                );
                if m.dfa
                    .as_ref()
                    .and_then(|(d, start)| run(d, *start, s.as_bytes()))
                    .is_some()
                {
                    direct += 1;
                }
                if let Some(found) = m.table.as_ref().and_then(|t| t.run(s.as_bytes())) {
                    assert_eq!(found, m.regex.is_match(s), "table: {p:?} on {s:?}");
                    tabled += 1;
                }
            }
        }
        // Most answers came from the DFA, not the fallback.
        assert!(direct > patterns.len() * inputs.len() * 3 / 4, "{direct}");
        assert!(tabled > patterns.len() * inputs.len() / 2, "{tabled}");
    }

    /// The charges kept at load give what the library's `matches` cost
    /// gives, at every size kept and past them (some float products round
    /// up where an integer division would not).
    #[test]
    fn charges_as_the_library_does() {
        let regex = Regex::new("a").expect("pattern");
        for pattern_len in [0, 1, 4, 5, 29, 40, 1000] {
            let m = Matcher::new(regex.clone(), pattern_len);
            for n in (0..=130).chain([1000]) {
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

    /// The byte table answers exactly as the DFA it was built from, on
    /// texts that stop early, run long (where the DFA may accelerate) or
    /// end in a match state; past 64 states there is no table, and the
    /// DFA alone answers.
    #[test]
    fn the_table_answers_as_its_automaton_up_to_its_size() {
        let texts = [
            "",
            "a",
            "ab",
            "xxxxxxxxab",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxb",
            "aaab",
            "http-2",
            "-x",
            "é",
            "a\nb",
            "registry.example.com/payments/checkout:3.14.2",
        ];
        for p in [
            "ab",
            "^[a-z]([-a-z0-9]*[a-z0-9])?$",
            "a|bc$",
            "x*",
            "[^a]",
            "é+",
            "^$",
        ] {
            let m = Matcher::new(Regex::new(p).expect("pattern"), 0);
            let (dfa, start) = m.dfa.as_ref().expect("a small DFA");
            let table = m.table.as_ref().expect("a table");
            for t in texts {
                assert_eq!(
                    table.run(t.as_bytes()),
                    run(dfa, *start, t.as_bytes()),
                    "{p:?} on {t:?}"
                );
            }
        }
        // `^a{k}$` takes about k states: the table is built up to 64 and
        // not past them, and the answers do not change at the boundary.
        let mut tabled = Vec::new();
        for k in 55..=75 {
            let m = Matcher::new(Regex::new(&format!("^a{{{k}}}$")).expect("pattern"), 0);
            assert!(m.dfa.is_some(), "{k}");
            tabled.push(m.table.is_some());
            for n in [k - 1, k, k + 1] {
                let t = "a".repeat(n);
                assert_eq!(m.is_match(&t), n == k, "a{{{k}}} on {n} a's");
            }
        }
        assert!(
            tabled.first() == Some(&true) && tabled.last() == Some(&false),
            "{tabled:?}"
        );
    }

    #[test]
    fn a_large_automaton_stays_with_the_regex() {
        let m = Matcher::new(Regex::new("\\w{50}").expect("pattern"), 5);
        assert!(m.dfa.is_none());
        assert!(m.is_match(&"é".repeat(50)));
    }
}
