//! The HTTPS edge: one rustls listener (TLS 1.2/1.3, HTTP/2 and HTTP/1.1 by
//! ALPN) in front of the actix-web app of [`routes`].
//!
//! [`spawn`] binds and starts the server and returns a [`RunningServer`]
//! handle; `main` and the integration tests start the server the same way.

pub mod routes;
pub mod tls;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpServer};
use anyhow::Context;
use arc_swap::ArcSwap;

use crate::config::{Catalog, ConfigSource};
pub use tls::{TlsError, TlsSource};

/// Default for `--max-request-bytes`: 8 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
/// Default for `--max-convert-request-bytes`: 256 MiB (a ConversionReview
/// carries whole lists: 10,000 objects of 4 KiB is 40 MiB).
pub const DEFAULT_MAX_CONVERT_REQUEST_BYTES: usize = 256 * 1024 * 1024;
/// Default for `--listen`.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:8443";

/// Everything the server needs, free of any CLI concern.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where the CRDs come from (kept for hot reload; [`spawn`] takes the
    /// already loaded catalog).
    pub config_source: ConfigSource,
    /// The TLS listen address; port 0 picks a free port.
    pub listen: SocketAddr,
    /// The serving certificate.
    pub tls: TlsSource,
    /// Larger request bodies are refused with 413.
    pub max_request_bytes: usize,
    /// Larger `/convert` bodies are refused with 413.
    pub max_convert_request_bytes: usize,
    /// Worker threads; `None` is one per available CPU.
    pub workers: Option<usize>,
    /// How long a stop waits for requests in flight.
    pub shutdown_timeout: Duration,
}

impl ServeConfig {
    /// The defaults of `celhook serve` with no flags.
    pub fn new() -> Self {
        Self {
            config_source: ConfigSource::Embedded,
            listen: SocketAddr::from(([0, 0, 0, 0], 8443)),
            tls: TlsSource::SelfSigned,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_convert_request_bytes: DEFAULT_MAX_CONVERT_REQUEST_BYTES,
            workers: None,
            // Reviews take milliseconds, so this is mostly the wait for idle
            // HTTP/2 connections: actix closes idle HTTP/1.1 connections on a
            // graceful stop but holds HTTP/2 ones (the API server's) until
            // this timeout. Well inside Kubernetes' default 30 s grace period.
            shutdown_timeout: Duration::from_secs(10),
        }
    }

    /// For tests: `127.0.0.1`, a free port, a generated certificate, one
    /// worker and a quick stop.
    pub fn for_tests() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            workers: Some(1),
            shutdown_timeout: Duration::from_secs(1),
            ..Self::new()
        }
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// State shared by every worker.
#[derive(Debug)]
pub struct AppState {
    /// The compiled CRDs; swapped whole on reload, read lock-free per request.
    pub catalog: ArcSwap<Catalog>,
    /// The `--max-request-bytes` limit (reported in 413 answers).
    pub max_request_bytes: usize,
    /// The `--max-convert-request-bytes` limit of `/convert`.
    pub max_convert_request_bytes: usize,
    ready: AtomicBool,
}

impl AppState {
    /// State serving `catalog`, not yet ready.
    pub fn new(catalog: Catalog, max_request_bytes: usize) -> Self {
        Self {
            catalog: ArcSwap::from_pointee(catalog),
            max_request_bytes,
            max_convert_request_bytes: DEFAULT_MAX_CONVERT_REQUEST_BYTES,
            ready: AtomicBool::new(false),
        }
    }

    /// Sets the `/convert` body limit.
    pub fn with_max_convert_request_bytes(mut self, limit: usize) -> Self {
        self.max_convert_request_bytes = limit;
        self
    }

    /// What `/readyz` reports.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Sets what `/readyz` reports.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }
}

/// A started server. Dropping it stops the server without waiting.
#[derive(Debug)]
pub struct RunningServer {
    local_addr: SocketAddr,
    cert_pem: String,
    state: web::Data<AppState>,
    cert_resolver: Arc<tls::CertResolver>,
    handle: ServerHandle,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// Binds the listener and starts serving `catalog` with `config`.
///
/// Must be called inside a tokio runtime; the server runs as a task of it
/// (plus actix's worker threads) until [`RunningServer::stop`]. Errors are
/// [`TlsError`] (bad certificate files: a configuration error) or I/O
/// errors from binding, with context.
pub async fn spawn(config: ServeConfig, catalog: Catalog) -> anyhow::Result<RunningServer> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let material = tls::load(&config.tls, &provider)?;
    if material.self_signed {
        tracing::warn!(
            names = ?tls::SELF_SIGNED_NAMES,
            "no --tls-cert/--tls-key given: serving a self-signed certificate generated in memory (development only)"
        );
    }
    let cert_resolver = Arc::new(tls::CertResolver::new(material.key));
    let tls_config = tls::server_config(cert_resolver.clone(), provider)?;

    let state = web::Data::new(
        AppState::new(catalog, config.max_request_bytes)
            .with_max_convert_request_bytes(config.max_convert_request_bytes),
    );
    let app_state = state.clone();
    let mut server = HttpServer::new(move || {
        let state = app_state.clone();
        App::new().configure(move |cfg| routes::configure(cfg, state))
    })
    // `RunningServer::run_until_signal` handles signals so it can turn
    // /readyz to 503 before draining.
    .disable_signals()
    // Answers are small and latency-bound: without TCP_NODELAY a response
    // written in two segments waits on the peer's delayed ACK (~40 ms).
    .tcp_nodelay(true)
    .shutdown_timeout(config.shutdown_timeout.as_secs());
    if let Some(workers) = config.workers {
        server = server.workers(workers);
    }
    let server = server
        .bind_rustls_0_23(config.listen, tls_config)
        .with_context(|| format!("binding the TLS listener on {}", config.listen))?;
    let local_addr = server
        .addrs()
        .first()
        .copied()
        .context("the listener has no address")?;

    let server = server.run();
    let handle = server.handle();
    let task = tokio::spawn(server);
    state.set_ready(true);
    tracing::info!(%local_addr, "listening (HTTPS, HTTP/2 and HTTP/1.1)");

    Ok(RunningServer {
        local_addr,
        cert_pem: material.cert_pem,
        state,
        cert_resolver,
        handle,
        task: Some(task),
    })
}

impl RunningServer {
    /// The bound address (the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `https://<addr>`, with `127.0.0.1` for an unspecified listen address.
    pub fn base_url(&self) -> String {
        let mut addr = self.local_addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        format!("https://{addr}")
    }

    /// The served certificate chain as PEM: for a generated certificate,
    /// exactly what a client must trust.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The shared state: readiness and the catalog (swap it to reload).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The certificate resolver (replace its certificate to rotate).
    pub fn cert_resolver(&self) -> &tls::CertResolver {
        &self.cert_resolver
    }

    /// Stops accepting, turns `/readyz` to 503, lets requests in flight
    /// finish (up to the shutdown timeout) and waits for the server to end.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.state.set_ready(false);
        self.handle.stop(true).await;
        self.join().await
    }

    /// Serves until SIGTERM or SIGINT, then stops gracefully.
    pub async fn run_until_signal(mut self) -> anyhow::Result<()> {
        let Some(mut task) = self.task.take() else {
            return Ok(());
        };
        tokio::select! {
            res = &mut task => {
                // The server ended on its own: that is a failure.
                res.context("server task failed")?.context("server failed")?;
                anyhow::bail!("server stopped unexpectedly");
            }
            signal = shutdown_signal() => {
                let signal = signal?;
                tracing::info!(signal, "stopping: draining requests in flight");
            }
        }
        self.task = Some(task);
        self.stop().await
    }

    async fn join(&mut self) -> anyhow::Result<()> {
        if let Some(task) = self.task.take() {
            task.await
                .context("server task failed")?
                .context("server failed")?;
        }
        Ok(())
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if self.task.is_some() {
            // Sends the stop command at once; there is nobody left to await it.
            drop(self.handle.stop(false));
        }
    }
}

/// Waits for SIGTERM (what Kubernetes sends) or SIGINT; returns its name.
async fn shutdown_signal() -> anyhow::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        tokio::select! {
            _ = term.recv() => Ok("SIGTERM"),
            _ = int.recv() => Ok("SIGINT"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("waiting for Ctrl-C")?;
        Ok("Ctrl-C")
    }
}
