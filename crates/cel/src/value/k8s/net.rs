//! IP addresses and CIDR prefixes for the CEL `ip`/`cidr` libraries, with
//! Go's `net/netip` parsing rules and error texts (which the API server
//! passes through) and the API server's extra refusals: zones and
//! IPv4-mapped IPv6 addresses. The parser is hand-written because the
//! messages must be Go's; the address types are std's.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::text::go_quote;

/// An IPv4 or IPv6 address (never zoned, never IPv4-mapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ip {
    V4(Ipv4Addr),
    V6(Ipv6Addr),
}

/// A parsed address that may still carry what the API server refuses.
pub(crate) struct Parsed {
    pub ip: Ip,
    pub zone: bool,
}

/// Go's `parseAddrError` text.
fn addr_error(input: &str, msg: &str, at: Option<&str>) -> String {
    match at {
        Some(at) if !at.is_empty() => format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(input),
            go_quote(at)
        ),
        _ => format!("ParseAddr({}): {msg}", go_quote(input)),
    }
}

/// `netip.ParseAddr`.
pub(crate) fn parse_addr(s: &str) -> Result<Parsed, String> {
    for b in s.bytes() {
        match b {
            b'.' => {
                let mut f = [0u8; 4];
                parse_v4_fields(s, s, &mut f)?;
                return Ok(Parsed {
                    ip: Ip::V4(Ipv4Addr::from(f)),
                    zone: false,
                });
            }
            b':' => return parse_v6(s),
            b'%' => return Err(addr_error(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", None))
}

/// Parses dotted IPv4 `part` (all of `input`, or its tail) into `out`.
fn parse_v4_fields(input: &str, part: &str, out: &mut [u8]) -> Result<(), String> {
    let b = part.as_bytes();
    let (mut val, mut pos, mut dig_len) = (0u32, 0usize, 0);
    for i in 0..b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            if dig_len == 1 && val == 0 {
                return Err(addr_error(
                    input,
                    "IPv4 field has octet with leading zero",
                    None,
                ));
            }
            val = val * 10 + u32::from(c - b'0');
            dig_len += 1;
            if val > 255 {
                return Err(addr_error(input, "IPv4 field has value >255", None));
            }
        } else if c == b'.' {
            if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                return Err(addr_error(
                    input,
                    "IPv4 field must have at least one digit",
                    Some(&part[i..]),
                ));
            }
            if pos == 3 {
                return Err(addr_error(input, "IPv4 address too long", None));
            }
            out[pos] = val as u8;
            pos += 1;
            val = 0;
            dig_len = 0;
        } else {
            return Err(addr_error(input, "unexpected character", Some(&part[i..])));
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", None));
    }
    out[3] = val as u8;
    Ok(())
}

fn parse_v6(input: &str) -> Result<Parsed, String> {
    let mut s = input;
    let mut zone = false;
    if let Some(i) = s.find('%') {
        if i + 1 == s.len() {
            return Err(addr_error(input, "zone must be a non-empty string", None));
        }
        s = &s[..i];
        zone = true;
    }
    let done = |ip: [u8; 16]| {
        Ok(Parsed {
            ip: Ip::V6(Ipv6Addr::from(ip)),
            zone,
        })
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return done(ip);
        }
    }
    let mut i = 0;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < b.len() {
            let d = match b[off] {
                c @ b'0'..=b'9' => c - b'0',
                c @ b'a'..=b'f' => c - b'a' + 10,
                c @ b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(d);
            if off > 3 {
                return Err(addr_error(
                    input,
                    "each group must have 4 or less digits",
                    Some(s),
                ));
            }
            if acc > 0xffff {
                return Err(addr_error(input, "IPv6 field has value >=2^16", Some(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(
                input,
                "each colon-separated field must have at least one digit",
                Some(s),
            ));
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return Err(addr_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(s),
                ));
            }
            if i + 4 > 16 {
                return Err(addr_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(s),
                ));
            }
            parse_v4_fields(input, s, &mut ip[i..i + 4])?;
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(addr_error(
                input,
                "unexpected character, want colon",
                Some(s),
            ));
        } else if s.len() == 1 {
            return Err(addr_error(
                input,
                "colon must be followed by more characters",
                Some(s),
            ));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(addr_error(input, "multiple :: in address", Some(s)));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", Some(s)));
    }
    if i < 16 {
        let Some(e) = ellipsis else {
            return Err(addr_error(input, "address string too short", None));
        };
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in &mut ip[e..e + n] {
            *b = 0;
        }
    } else if ellipsis.is_some() {
        return Err(addr_error(
            input,
            "the :: must expand to at least one field of zeros",
            Some(s),
        ));
    }
    done(ip)
}

fn is_4in6(ip: &Ip) -> bool {
    matches!(ip, Ip::V6(a) if a.to_ipv4_mapped().is_some())
}

impl Ip {
    /// `ip(string)`: Go's parser, then no zones and no IPv4-mapped IPv6.
    pub fn parse(s: &str) -> Result<Ip, String> {
        let p = parse_addr(s).map_err(|e| {
            format!(
                "IP Address {} parse error during conversion from string: {e}",
                go_quote(s)
            )
        })?;
        if p.zone {
            return Err(format!(
                "IP address {} with zone value is not allowed",
                go_quote(s)
            ));
        }
        if is_4in6(&p.ip) {
            return Err(format!(
                "IPv4-mapped IPv6 address {} is not allowed",
                go_quote(s)
            ));
        }
        Ok(p.ip)
    }

    /// 4 or 6.
    pub fn family(&self) -> i64 {
        match self {
            Ip::V4(_) => 4,
            Ip::V6(_) => 6,
        }
    }

    pub fn is_unspecified(&self) -> bool {
        match self {
            Ip::V4(a) => a.is_unspecified(),
            Ip::V6(a) => a.is_unspecified(),
        }
    }

    pub fn is_loopback(&self) -> bool {
        match self {
            Ip::V4(a) => a.octets()[0] == 127,
            Ip::V6(a) => a.is_loopback(),
        }
    }

    fn is_multicast(&self) -> bool {
        match self {
            Ip::V4(a) => a.octets()[0] & 0xf0 == 0xe0,
            Ip::V6(a) => a.octets()[0] == 0xff,
        }
    }

    /// 224.0.0.0/24 and ff02::/16.
    pub fn is_link_local_multicast(&self) -> bool {
        match self {
            Ip::V4(a) => a.octets()[..3] == [224, 0, 0],
            Ip::V6(a) => a.segments()[0] == 0xff02,
        }
    }

    /// 169.254.0.0/16 and fe80::/10.
    pub fn is_link_local_unicast(&self) -> bool {
        match self {
            Ip::V4(a) => a.octets()[..2] == [169, 254],
            Ip::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
        }
    }

    /// Go's definition: private and ULA addresses count as global unicast.
    pub fn is_global_unicast(&self) -> bool {
        if let Ip::V4(a) = self {
            if a.is_unspecified() || a.is_broadcast() {
                return false;
            }
        }
        !self.is_unspecified()
            && !self.is_loopback()
            && !self.is_multicast()
            && !self.is_link_local_unicast()
    }

    fn bits(&self) -> u8 {
        match self {
            Ip::V4(_) => 32,
            Ip::V6(_) => 128,
        }
    }

    fn as_u128(&self) -> u128 {
        match self {
            Ip::V4(a) => u128::from(u32::from(*a)),
            Ip::V6(a) => u128::from(*a),
        }
    }

    fn with_u128(&self, v: u128) -> Ip {
        match self {
            Ip::V4(_) => Ip::V4(Ipv4Addr::from(v as u32)),
            Ip::V6(_) => Ip::V6(Ipv6Addr::from(v)),
        }
    }

    /// The address with all but the first `bits` bits cleared.
    fn masked(&self, bits: u8) -> Ip {
        let width = u32::from(self.bits());
        let host = width - u32::from(bits);
        let mask: u128 = if host >= 128 {
            0
        } else {
            (!0u128 << host)
                & if width == 128 {
                    !0
                } else {
                    (1u128 << width) - 1
                }
        };
        self.with_u128(self.as_u128() & mask)
    }
}

impl fmt::Display for Ip {
    /// Go's `Addr.String`: dotted quads, or RFC 5952 IPv6 text (lower-case,
    /// the longest run of two or more zero groups shortened to `::`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ip::V4(a) => write!(f, "{a}"),
            Ip::V6(a) => {
                let seg = a.segments();
                let (mut best, mut best_len) = (usize::MAX, 0);
                let mut i = 0;
                while i < 8 {
                    if seg[i] == 0 {
                        let start = i;
                        while i < 8 && seg[i] == 0 {
                            i += 1;
                        }
                        if i - start >= 2 && i - start > best_len {
                            best = start;
                            best_len = i - start;
                        }
                    } else {
                        i += 1;
                    }
                }
                let mut i = 0;
                while i < 8 {
                    if i == best {
                        f.write_str("::")?;
                        i += best_len;
                        continue;
                    }
                    if i > 0 && i != best + best_len {
                        f.write_str(":")?;
                    }
                    write!(f, "{:x}", seg[i])?;
                    i += 1;
                }
                Ok(())
            }
        }
    }
}

/// A CIDR prefix: an address (host bits kept as written) and a length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: Ip,
    bits: u8,
}

impl Cidr {
    /// `cidr(string)`: Go's `netip.ParsePrefix`, no IPv4-mapped IPv6. The
    /// API server wraps the parse error twice, so its prefix repeats.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        const WRAP: &str = "network address parse error during conversion from string: ";
        let prefix_err =
            |msg: &str| format!("{WRAP}{WRAP}netip.ParsePrefix({}): {msg}", go_quote(s));
        let Some(slash) = s.rfind('/') else {
            return Err(prefix_err("no '/'"));
        };
        let p = parse_addr(&s[..slash]).map_err(|e| prefix_err(&e))?;
        if p.zone {
            return Err(prefix_err("IPv6 zones cannot be present in a prefix"));
        }
        let bits_str = &s[slash + 1..];
        let bad_bits = || prefix_err(&format!("bad bits after slash: {}", go_quote(bits_str)));
        let b = bits_str.as_bytes();
        if b.len() > 1 && !(b'1'..=b'9').contains(&b[0]) {
            return Err(bad_bits());
        }
        if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
            return Err(bad_bits());
        }
        let bits: u32 = bits_str.parse().map_err(|_| bad_bits())?;
        if bits > u32::from(p.ip.bits()) {
            return Err(prefix_err("prefix length out of range"));
        }
        if is_4in6(&p.ip) {
            return Err(format!(
                "{WRAP}IPv4-mapped IPv6 address {} is not allowed",
                go_quote(s)
            ));
        }
        Ok(Cidr {
            addr: p.ip,
            bits: bits as u8,
        })
    }

    /// The address as written (host bits included).
    pub fn ip(&self) -> Ip {
        self.addr
    }

    pub fn prefix_length(&self) -> i64 {
        i64::from(self.bits)
    }

    /// The prefix with its host bits cleared.
    pub fn masked(&self) -> Cidr {
        Cidr {
            addr: self.addr.masked(self.bits),
            bits: self.bits,
        }
    }

    /// The address is of the same family and inside the prefix.
    pub fn contains(&self, ip: &Ip) -> bool {
        ip.bits() == self.addr.bits() && ip.masked(self.bits) == self.addr.masked(self.bits)
    }

    /// `other` overlaps this prefix and is at least as long.
    pub fn contains_cidr(&self, other: &Cidr) -> bool {
        if self.addr.bits() != other.addr.bits() || self.bits > other.bits {
            return false;
        }
        self.addr.masked(self.bits) == other.addr.masked(self.bits)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_ipv6_like_go() {
        for (text, go) in [
            ("2001:DB8::68", "2001:db8::68"),
            ("::1.2.3.4", "::102:304"),
            ("1:0:0:1:0:0:0:1", "1:0:0:1::1"),
            ("1:0:1:1:1:1:1:1", "1:0:1:1:1:1:1:1"),
            ("::", "::"),
        ] {
            assert_eq!(Ip::parse(text).map(|ip| ip.to_string()).as_deref(), Ok(go));
        }
    }

    #[test]
    fn refuses_what_kubernetes_refuses() {
        for (text, refusal) in [
            ("fe80::1%eth0", "IP address \"fe80::1%eth0\" with zone value is not allowed"),
            ("::ffff:1.2.3.4", "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"),
            ("01.2.3.4", "IP Address \"01.2.3.4\" parse error during conversion from string: ParseAddr(\"01.2.3.4\"): IPv4 field has octet with leading zero"),
        ] {
            assert_eq!(Ip::parse(text).unwrap_err(), refusal);
        }
        assert_eq!(
            Cidr::parse("::ffff:1.2.3.4/120").unwrap_err(),
            "network address parse error during conversion from string: IPv4-mapped IPv6 address \"::ffff:1.2.3.4/120\" is not allowed"
        );
        assert!(Cidr::parse("1.2.3.4/33")
            .unwrap_err()
            .ends_with("prefix length out of range"));
        assert!(Cidr::parse("1.2.3.4/024")
            .unwrap_err()
            .ends_with("bad bits after slash: \"024\""));
    }

    #[test]
    fn masks_and_contains() {
        let c = Cidr::parse("192.168.0.1/24").unwrap();
        assert_eq!(c.masked().to_string(), "192.168.0.0/24");
        assert!(c.contains(&Ip::parse("192.168.0.200").unwrap()));
        assert!(!c.contains(&Ip::parse("::1").unwrap()));
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains(&Ip::parse("8.8.8.8").unwrap()));
        assert!(all.contains_cidr(&c));
        assert!(!c.contains_cidr(&all));
    }
}
