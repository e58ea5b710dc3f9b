//! URLs for the CEL `url` library, parsed with the rules of Go's `net/url`
//! (`ParseRequestURI` to accept, `Parse` to take apart) so that what is
//! accepted, what the getters return and the error texts match the API
//! server. The `url` crate follows the WHATWG standard instead (it
//! normalises hosts and paths and accepts relative forms differently), so
//! this is a small hand-written port.

use std::fmt;

use crate::text::go_quote;

/// A parsed URL (the fields of Go's `url.URL` the library reads).
#[derive(Clone, Debug, Default)]
pub struct GoUrl {
    pub scheme: String,
    opaque: String,
    /// The raw userinfo, when an `@` was present.
    user: Option<String>,
    /// The host with percent-escapes decoded (Go's `URL.Host`).
    pub host: String,
    /// The path as written (escaped).
    raw_path: String,
    force_query: bool,
    raw_query: String,
    fragment: Option<String>,
    omit_host: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// RFC 3986's sub-delimiters and `:`: what Go leaves unescaped in a host
/// and accepts as validly encoded, each with a few bytes more.
fn is_sub_delim_or_colon(c: u8) -> bool {
    matches!(
        c,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':'
    )
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && (is_sub_delim_or_colon(c) || matches!(c, b'[' | b']' | b'<' | b'>' | b'"'))
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Mode::Path => c == b'?',
                Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
                Mode::QueryComponent => true,
                Mode::Fragment => false,
                Mode::Host | Mode::Zone => true,
            }
        }
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn unhex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Go's `unescape`: decodes `%XX`, checks escapes and host characters.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let ok = i + 2 < b.len() && unhex(b[i + 1]).is_some() && unhex(b[i + 2]).is_some();
                if !ok {
                    let end = (i + 3).min(b.len());
                    let esc = String::from_utf8_lossy(&b[i..end]);
                    return Err(format!("invalid URL escape {}", go_quote(&esc)));
                }
                if mode == Mode::Host && unhex(b[i + 1]).unwrap_or(0) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                i += 3;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&s[i..i + 1])
                    ));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push(unhex(b[i + 1]).unwrap_or(0) << 4 | unhex(b[i + 2]).unwrap_or(0));
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `validEncoded`: its bytes beyond the sub-delimiters differ from
/// the host set of [`should_escape`] (`@` and `%` allowed, no `<`, `>`).
fn valid_encoded(s: &str, mode: Mode) -> bool {
    s.bytes().all(|c| {
        is_sub_delim_or_colon(c)
            || matches!(c, b'@' | b'[' | b']' | b'%')
            || !should_escape(c, mode)
    })
}

fn valid_optional_port(port: &str) -> bool {
    match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
    }
}

fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `parseHost` (as of the Go releases that validate bracketed hosts:
/// only an IPv6 address may sit in brackets, and for http(s) the port
/// starts at the first colon).
fn parse_host(scheme: &str, host: &str) -> Result<String, String> {
    match host.rfind('[') {
        Some(i) if i > 0 => return Err("invalid IP-literal".into()),
        Some(_) => {
            let Some(close) = host.rfind(']') else {
                return Err("missing ']' in host".into());
            };
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port) {
                return Err(format!("invalid port {} after host", go_quote(colon_port)));
            }
            let port = unescape(colon_port, Mode::Host)?;
            let hostname = &host[1..close];
            let unescaped = match hostname.find("%25") {
                Some(z) => {
                    unescape(&hostname[..z], Mode::Host)? + &unescape(&hostname[z..], Mode::Zone)?
                }
                None => unescape(hostname, Mode::Host)?,
            };
            let parsed =
                super::net::parse_addr(&unescaped).map_err(|e| format!("invalid host: {e}"))?;
            if matches!(parsed.ip, super::net::Ip::V4(_)) {
                return Err("invalid IP-literal".into());
            }
            return Ok(format!("[{unescaped}]{port}"));
        }
        None => {}
    }
    if let Some(first) = host.find(':') {
        let last = host.rfind(':').unwrap_or(first);
        let i = if scheme == "http" || scheme == "https" {
            first
        } else {
            last
        };
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_userinfo(s: &str) -> bool {
    s.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

/// Go's `parse(rawURL, viaRequest)` without the fragment.
fn parse(raw: &str, via_request: bool) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut u = GoUrl::default();
    if raw == "*" {
        u.raw_path = "*".into();
        return Ok(u);
    }
    let (scheme, mut rest) = get_scheme(raw)?;
    u.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        u.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        u.raw_query = q.to_owned();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            u.opaque = rest.to_owned();
            return Ok(u);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!u.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//")
    {
        let mut authority = &rest[2..];
        rest = "";
        if let Some(i) = authority.find('/') {
            rest = &authority[i..];
            authority = &authority[..i];
        }
        match authority.rfind('@') {
            None => u.host = parse_host(&u.scheme, authority)?,
            Some(i) => {
                u.host = parse_host(&u.scheme, &authority[i + 1..])?;
                let userinfo = &authority[..i];
                if !valid_userinfo(userinfo) {
                    return Err("net/url: invalid userinfo".into());
                }
                let (name, pass) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                unescape(name, Mode::UserPassword)?;
                unescape(pass, Mode::UserPassword)?;
                u.user = Some(userinfo.to_owned());
            }
        }
    } else if !u.scheme.is_empty() && rest.starts_with('/') {
        u.omit_host = true;
    }
    unescape(rest, Mode::Path)?;
    u.raw_path = rest.to_owned();
    Ok(u)
}

fn parse_error(raw: &str, err: String) -> String {
    format!("parse {}: {err}", go_quote(raw))
}

impl GoUrl {
    /// `url.ParseRequestURI`: an absolute URI or an absolute path.
    pub fn parse_request_uri(s: &str) -> Result<GoUrl, String> {
        parse(s, true).map_err(|e| parse_error(s, e))
    }

    /// `url.Parse` (fragment split off first).
    pub fn parse(s: &str) -> Result<GoUrl, String> {
        let (rest, frag) = match s.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (s, None),
        };
        let mut u = parse(rest, false).map_err(|e| parse_error(rest, e))?;
        if let Some(f) = frag.filter(|f| !f.is_empty()) {
            unescape(f, Mode::Fragment).map_err(|e| parse_error(s, e))?;
            u.fragment = Some(f.to_owned());
        }
        Ok(u)
    }

    /// `url(string)`: accepted as a request URI, then taken apart as a URL,
    /// with the API server's error prefix.
    pub fn from_cel(s: &str) -> Result<GoUrl, String> {
        let wrap = |e: String| format!("URL parse error during conversion from string: {e}");
        GoUrl::parse_request_uri(s).map_err(wrap)?;
        GoUrl::parse(s).map_err(wrap)
    }

    /// The host without the port (and without IPv6 brackets).
    pub fn hostname(&self) -> &str {
        split_host_port(&self.host).0
    }

    /// The port, or "" when there is none.
    pub fn port(&self) -> &str {
        split_host_port(&self.host).1
    }

    /// The path escaped as Go's `EscapedPath` does: as written when that is
    /// a valid encoding, else re-escaped.
    pub fn escaped_path(&self) -> String {
        if valid_encoded(&self.raw_path, Mode::Path) || self.raw_path == "*" {
            return self.raw_path.clone();
        }
        match unescape(&self.raw_path, Mode::Path) {
            Ok(p) => escape(&p, Mode::Path),
            Err(_) => self.raw_path.clone(),
        }
    }

    /// The query parameters in order of first appearance (Go's
    /// `ParseQuery`: pairs with `;` or bad escapes are skipped).
    pub fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for part in self.raw_query.split('&') {
            if part.is_empty() || part.contains(';') {
                continue;
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let (Ok(k), Ok(v)) = (
                unescape(k, Mode::QueryComponent),
                unescape(v, Mode::QueryComponent),
            ) else {
                continue;
            };
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, vs)) => vs.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

fn split_host_port(host_port: &str) -> (&str, &str) {
    let mut host = host_port;
    let mut port = "";
    if let Some(colon) = host.rfind(':') {
        if valid_optional_port(&host[colon..]) {
            port = &host[colon + 1..];
            host = &host[..colon];
        }
    }
    if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

impl fmt::Display for GoUrl {
    /// Go's `URL.String` (used for equality).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            let has_authority =
                !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some();
            let omitted = self.omit_host && self.host.is_empty() && self.user.is_none();
            if has_authority && !omitted {
                if !self.host.is_empty() || !self.raw_path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some(u) = &self.user {
                    out.push_str(u);
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Mode::Host));
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().unwrap_or("").contains(':') {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if let Some(frag) = &self.fragment {
            out.push('#');
            out.push_str(frag);
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_urls_apart_like_go() {
        let u =
            GoUrl::from_cel("https://user:pass@example.com:80/path?query=val#fragment").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:80");
        assert_eq!(u.hostname(), "example.com");
        assert_eq!(u.port(), "80");
        assert_eq!(u.escaped_path(), "/path");
        let v = GoUrl::from_cel("https://[::1]:80/").unwrap();
        assert_eq!(v.hostname(), "::1");
        assert_eq!(v.port(), "80");
        let w = GoUrl::from_cel("/absolute-path").unwrap();
        assert_eq!(w.scheme, "");
        assert_eq!(w.escaped_path(), "/absolute-path");
        assert_eq!(
            GoUrl::from_cel("https://example.com/with space")
                .unwrap()
                .escaped_path(),
            "/with%20space"
        );
    }

    #[test]
    fn refuses_with_gos_errors() {
        for (text, refusal) in [
            ("https://a:b:c/", "URL parse error during conversion from string: parse \"https://a:b:c/\": invalid port \":b:c\" after host"),
            ("../relative-path", "URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request"),
        ] {
            assert_eq!(GoUrl::from_cel(text).unwrap_err(), refusal);
        }
        assert!(GoUrl::parse_request_uri("").is_err());
        assert!(GoUrl::parse_request_uri("https://a b/").is_err());
        assert!(GoUrl::parse_request_uri("/p%zz").is_err());
        let bracket = |s: &str| GoUrl::parse_request_uri(s).unwrap_err();
        assert!(bracket("https://[1.2.3.4]/").ends_with(": invalid IP-literal"));
        assert!(bracket("https://x[::1]/").ends_with(": invalid IP-literal"));
        assert!(bracket("https://[v1.x]/")
            .ends_with(": invalid host: ParseAddr(\"v1.x\"): unexpected character (at \"v1.x\")"));
        assert!(GoUrl::parse_request_uri("https://[fe80::1%25en0]:8080/").is_ok());
        // Other schemes take the port after the last colon.
        assert!(GoUrl::parse_request_uri("mongodb://a:1,b:2/").is_ok());
    }

    #[test]
    fn parses_queries_in_order() {
        let u = GoUrl::from_cel("https://x/?a=1&b=2&a=3&c&d=%20+").unwrap();
        assert_eq!(
            u.query(),
            vec![
                ("a".to_owned(), vec!["1".to_owned(), "3".to_owned()]),
                ("b".to_owned(), vec!["2".to_owned()]),
                ("c".to_owned(), vec![String::new()]),
                ("d".to_owned(), vec!["  ".to_owned()]),
            ]
        );
    }
}
