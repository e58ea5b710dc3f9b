//! Finding the bytes of a string that end it or need care: `"`, `\` and
//! control characters. Eight bytes at a time for short strings, a vector
//! search for long ones; the parser and the writer both use it.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The bytes of `w` that are `"`, `\` or a control character, as their
/// high bits (a byte after the first such one may be marked falsely;
/// only the first mark is used).
#[inline(always)]
pub(crate) fn specials(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let zero_in = |x: u64| x.wrapping_sub(ONES) & !x;
    (zero_in(quote) | zero_in(backslash) | (w.wrapping_sub(ONES * 0x20) & !w)) & HIGH
}

/// [`specials`] of the word at `at`; `None` past the last whole word.
#[inline(always)]
fn word_marks(b: &[u8], at: usize) -> Option<u64> {
    let chunk = b.get(at..at + 8)?;
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    Some(specials(u64::from_le_bytes(word)))
}

/// [`special`] past the first word: a few more words, then
/// [`scan_long`].
fn scan_more(b: &[u8], mut i: usize) -> usize {
    for _ in 0..4 {
        match word_marks(b, i) {
            Some(0) => i += 8,
            Some(marks) => return i + (marks.trailing_zeros() / 8) as usize,
            None => return scan_bytes(b, i),
        }
    }
    scan_long(b, i)
}

/// [`special`] byte by byte, for the last few bytes of the text.
fn scan_bytes(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            break;
        }
        i += 1;
    }
    i
}

/// [`special`] of a long string (an annotation holding a whole
/// object, a certificate): the quote or backslash found by `memchr`'s
/// vector search, then the bytes before it checked for control
/// characters 64 at a time.
#[inline(never)]
fn scan_long(b: &[u8], i: usize) -> usize {
    let rest = &b[i..];
    let stop = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    let text = &rest[..stop];
    let mut blocks = text.chunks_exact(64);
    let mut at = 0;
    for block in blocks.by_ref() {
        if has_control(block) {
            return i + at + first_control(block).unwrap_or(0);
        }
        at += 64;
    }
    match first_control(blocks.remainder()) {
        Some(p) => i + at + p,
        None => i + stop,
    }
}

/// Whether a block of 64 bytes holds a control byte: the minimum of each
/// of 16 lanes over its four rows, a fixed shape the compiler turns into
/// four vector minimums and one compare (a fold over the block's bytes
/// was a byte at a time in part).
#[inline(always)]
fn has_control(block: &[u8]) -> bool {
    let mut low = [u8::MAX; 16];
    for row in block.chunks_exact(16) {
        for (m, &c) in low.iter_mut().zip(row) {
            *m = (*m).min(c);
        }
    }
    low.iter().fold(u8::MAX, |m, &c| m.min(c)) < 0x20
}

/// The index of the first control byte of `block`, if any.
fn first_control(block: &[u8]) -> Option<usize> {
    block.iter().position(|&c| c < 0x20)
}

/// The index of the first `"`, `\` or control byte of `b` at or after
/// `i` (`b.len()` if none): the first two words inline (most keys and
/// values end in them), the rest in [`scan_more`]; near the text's end,
/// one word, then byte by byte.
#[inline(always)]
pub(crate) fn special(b: &[u8], i: usize) -> usize {
    // A second load costs less than the call to `scan_more`.
    if let Some(chunk) = b.get(i..i + 16) {
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&chunk[..8]);
        hi.copy_from_slice(&chunk[8..]);
        let (lo, hi) = (
            specials(u64::from_le_bytes(lo)),
            specials(u64::from_le_bytes(hi)),
        );
        if lo != 0 {
            return i + (lo.trailing_zeros() / 8) as usize;
        }
        if hi != 0 {
            return i + 8 + (hi.trailing_zeros() / 8) as usize;
        }
        return scan_more(b, i + 16);
    }
    match word_marks(b, i) {
        Some(0) => scan_more(b, i + 8),
        Some(marks) => i + (marks.trailing_zeros() / 8) as usize,
        None => scan_bytes(b, i),
    }
}
