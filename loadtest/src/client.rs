//! The HTTPS clients (HTTP/1.1 keep-alive pools by default, as the API
//! server calls webhooks, or HTTP/2) and the names a failed exchange is
//! counted under.

use anyhow::Context;

use crate::args::{Args, HttpVersion};

/// Builds the HTTPS clients of `args`, one per `--connections`.
///
/// Each client is a reqwest pool. Over HTTP/2 it holds one connection that
/// carries every request in flight on it. Over HTTP/1.1 (`http1_only`: ALPN
/// offers only http/1.1), hyper's pool gives a request an idle connection
/// or, when there is none, races opening a new one against waiting for one
/// to come back; there is no cap per host, so a client holds one connection
/// per request in flight on it, each kept alive for the next. Requests are
/// spread over the clients round robin, so with `--concurrency C` the
/// clients together use up to C connections at once, as the API server's
/// pool does.
pub fn clients(args: &Args) -> anyhow::Result<Vec<reqwest::Client>> {
    let t = &args.target;
    let identity = match (&t.client_cert, &t.client_key) {
        (Some(cert), Some(key)) => {
            let mut pem = std::fs::read(cert)
                .with_context(|| format!("reading --client-cert {}", cert.display()))?;
            pem.push(b'\n');
            pem.extend(
                std::fs::read(key)
                    .with_context(|| format!("reading --client-key {}", key.display()))?,
            );
            Some(
                reqwest::Identity::from_pem(&pem)
                    .context("--client-cert/--client-key are not a PEM certificate and key")?,
            )
        }
        _ => None,
    };
    let ca = match &t.ca_file {
        Some(path) => {
            let pem = std::fs::read(path)
                .with_context(|| format!("reading --ca-file {}", path.display()))?;
            Some(
                reqwest::Certificate::from_pem_bundle(&pem)
                    .with_context(|| format!("--ca-file {} is not PEM", path.display()))?,
            )
        }
        None => None,
    };
    // Requests in flight per client, at most: the idle connections worth
    // keeping for the next ones (a connection opened in a race that an
    // idle one won also joins the pool, up to this).
    let per_client = usize::from(args.load.concurrency()).div_ceil(usize::from(t.connections));
    (0..t.connections)
        .map(|_| {
            let mut b = reqwest::Client::builder()
                .timeout(t.timeout)
                .pool_max_idle_per_host(per_client)
                .tcp_nodelay(true)
                // Conversion batches reach tens of MiB: let HTTP/2 grow its
                // windows instead of trickling at the 64 KiB default.
                .http2_adaptive_window(true);
            if let Some(certs) = &ca {
                b = b.tls_certs_only(certs.iter().cloned());
            }
            if t.insecure {
                b = b.tls_danger_accept_invalid_certs(true);
            }
            if let Some(id) = &identity {
                b = b.identity(id.clone());
            }
            b = match t.http {
                HttpVersion::Http1 => b.http1_only(),
                HttpVersion::Http2 => b.http2_prior_knowledge(),
                HttpVersion::Auto => b,
            };
            b.build().context("building the HTTPS client")
        })
        .collect()
}

/// The error class of a failed exchange.
pub(crate) fn transport_kind(err: &reqwest::Error) -> &'static str {
    if err.is_timeout() {
        "timeout"
    } else if err.is_connect() {
        "connect"
    } else {
        "transport"
    }
}

/// An error's whole cause chain on one line (reqwest's Display is terse).
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// The error kind of an answer whose status is not 200.
pub(crate) fn http_kind(status: reqwest::StatusCode) -> &'static str {
    // The statuses a webhook answers most; the rest by class.
    const NAMED: [(u16, &str); 10] = [
        (400, "http_400"),
        (401, "http_401"),
        (403, "http_403"),
        (404, "http_404"),
        (413, "http_413"),
        (429, "http_429"),
        (500, "http_500"),
        (502, "http_502"),
        (503, "http_503"),
        (504, "http_504"),
    ];
    let code = status.as_u16();
    match NAMED.iter().find(|(c, _)| *c == code) {
        Some((_, kind)) => kind,
        None if status.is_client_error() => "http_4xx",
        None if status.is_server_error() => "http_5xx",
        None => "http_other",
    }
}
