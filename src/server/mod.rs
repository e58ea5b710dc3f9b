//! The HTTPS edge: one rustls listener (TLS 1.2/1.3, HTTP/2 and HTTP/1.1 by
//! ALPN) in front of the actix-web app of [`routes`].
//!
//! [`spawn`] binds and starts the server and returns a [`RunningServer`]
//! handle; `main` and the integration tests start the server the same way.
//! Around the app: an optional plain-HTTP metrics listener, the reloader
//! thread ([`reload`]) and the graceful stop ([`RunningServer::stop`]).

pub mod limits;
pub mod reload;
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
use crate::metrics::Metrics;
pub use tls::{ClientAuth, TlsError, TlsSource};

/// Default for `--max-request-bytes`: 8 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;
/// Default for `--max-concurrent-requests`.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 256;
/// Default for `--max-convert-request-bytes`: 256 MiB (a ConversionReview
/// carries whole lists: 10,000 objects of 4 KiB is 40 MiB).
pub const DEFAULT_MAX_CONVERT_REQUEST_BYTES: usize = 256 * 1024 * 1024;
/// Default for `--max-in-flight-bytes`: 512 MiB of request bodies held at
/// once (two of the largest conversion requests). Peak memory is about 2.5x
/// this (a body, its parsed objects and the answer) plus a few MiB.
pub const DEFAULT_MAX_IN_FLIGHT_BYTES: usize = 512 * 1024 * 1024;
/// Default for `--max-connection-rate`.
pub const DEFAULT_MAX_CONNECTION_RATE: usize = 64;
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
    /// How long a stop keeps serving (with `/readyz` at 503) before it
    /// stops accepting, so load balancers and the API server's endpoints
    /// drop the pod first.
    pub shutdown_delay: Duration,
    /// Optional plain-HTTP listener for `/metrics`, `/healthz` and `/readyz`.
    pub metrics_listen: Option<SocketAddr>,
    /// Demand client certificates (`--client-ca`).
    pub client_auth: Option<ClientAuth>,
    /// How often the certificate and config files are checked for changes.
    pub reload_interval: Duration,
    /// Review requests served at once (over all workers); more wait for a
    /// slot until their deadline, then get 503.
    pub max_concurrent_requests: usize,
    /// Bytes of review bodies held at once over all requests; a body that
    /// does not fit gets 503 with `Retry-After`.
    pub max_in_flight_bytes: usize,
    /// TLS handshakes in progress at once per worker; more connections
    /// wait in the accept queue, so a flood of handshakes cannot take the
    /// CPU from requests on established connections.
    pub max_connection_rate: usize,
    /// The longest a review request may take (also the deadline when the
    /// caller sends no `?timeout=`).
    pub request_timeout: Duration,
    /// How long an idle connection is kept open.
    pub keep_alive: Duration,
    /// How long a client has to complete the TLS handshake and send the
    /// request head; slower clients are disconnected.
    pub header_timeout: Duration,
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
            shutdown_delay: Duration::from_secs(5),
            metrics_listen: None,
            client_auth: None,
            reload_interval: reload::DEFAULT_INTERVAL,
            max_concurrent_requests: DEFAULT_MAX_CONCURRENT_REQUESTS,
            max_in_flight_bytes: DEFAULT_MAX_IN_FLIGHT_BYTES,
            max_connection_rate: DEFAULT_MAX_CONNECTION_RATE,
            // The API server gives up on a conversion after 30 s: answer first.
            request_timeout: Duration::from_secs(25),
            // Longer than the API server's idle-connection timeout (90 s,
            // Go's default transport): if the server closed first, a request
            // racing the close would fail, and POSTs are not retried.
            keep_alive: Duration::from_secs(120),
            header_timeout: Duration::from_secs(5),
        }
    }

    /// For tests: `127.0.0.1`, a free port, a generated certificate, one
    /// worker and a quick stop.
    pub fn for_tests() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            workers: Some(1),
            shutdown_timeout: Duration::from_secs(1),
            shutdown_delay: Duration::ZERO,
            reload_interval: Duration::from_millis(50),
            ..Self::new()
        }
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The per-request limits of the review endpoints ([`limits::guard`]).
#[derive(Debug, Clone)]
pub struct Limits {
    /// One permit per review request in flight.
    pub concurrency: Arc<tokio::sync::Semaphore>,
    /// The longest a review request may take.
    pub request_timeout: Duration,
    /// Bytes of request bodies held at once.
    pub body_bytes: limits::BodyBudget,
}

impl Limits {
    /// Limits of `max_concurrent` requests, each at most `request_timeout`,
    /// holding at most `max_in_flight_bytes` of bodies.
    pub fn new(
        max_concurrent: usize,
        request_timeout: Duration,
        max_in_flight_bytes: usize,
    ) -> Self {
        Self {
            concurrency: Arc::new(tokio::sync::Semaphore::new(max_concurrent)),
            request_timeout,
            body_bytes: limits::BodyBudget::new(max_in_flight_bytes),
        }
    }
}

/// State shared by every worker.
#[derive(Debug)]
pub struct AppState {
    /// The compiled CRDs; swapped whole on reload, read lock-free per request.
    pub catalog: ArcSwap<Catalog>,
    /// The `--max-request-bytes` limit (reported in 413 answers).
    pub max_request_bytes: usize,
    /// Every metric, in this server's own registry.
    pub metrics: Metrics,
    /// Concurrency and deadline of review requests.
    pub limits: Limits,
    /// The `--max-convert-request-bytes` limit of `/convert`.
    pub max_convert_request_bytes: usize,
    ready: AtomicBool,
}

impl AppState {
    /// State serving `catalog` with fresh metrics and default limits, not yet ready.
    pub fn new(catalog: Catalog, max_request_bytes: usize) -> Self {
        let defaults = ServeConfig::new();
        Self::with(
            catalog,
            max_request_bytes,
            Metrics::register(),
            Limits::new(
                defaults.max_concurrent_requests,
                defaults.request_timeout,
                defaults.max_in_flight_bytes,
            ),
        )
    }

    /// State serving `catalog` (bound to `metrics` as config generation 1),
    /// not yet ready.
    pub fn with(
        catalog: Catalog,
        max_request_bytes: usize,
        metrics: Metrics,
        limits: Limits,
    ) -> Self {
        metrics.bind_catalog(&catalog);
        metrics.observe_config_loaded(1, std::time::SystemTime::now());
        Self {
            catalog: ArcSwap::from_pointee(catalog),
            max_request_bytes,
            metrics,
            limits,
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
    metrics_addr: Option<SocketAddr>,
    cert_pem: String,
    state: web::Data<AppState>,
    cert_resolver: Arc<tls::CertResolver>,
    handle: ServerHandle,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    metrics_server: Option<(ServerHandle, tokio::task::JoinHandle<std::io::Result<()>>)>,
    reloader: Option<reload::Reloader>,
    shutdown_delay: Duration,
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
    let metrics = Metrics::register();
    if let Some(expiry) = material.key.end_entity_cert().ok().and_then(tls::not_after) {
        metrics.observe_cert_expiry(expiry);
    }
    let cert_resolver = Arc::new(tls::CertResolver::new(material.key));
    let tls_config = tls::server_config(
        cert_resolver.clone(),
        provider.clone(),
        config.client_auth.as_ref(),
    )?;

    let state = web::Data::new(
        AppState::with(
            catalog,
            config.max_request_bytes,
            metrics,
            Limits::new(
                config.max_concurrent_requests,
                config.request_timeout,
                config.max_in_flight_bytes,
            ),
        )
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
    .keep_alive(config.keep_alive)
    // Slow-client guards: the TLS handshake and the request head each get
    // `header_timeout`; the body is bounded by the request deadline.
    .tls_handshake_timeout(config.header_timeout)
    .client_request_timeout(config.header_timeout)
    .client_disconnect_timeout(Duration::from_secs(1))
    .max_connection_rate(config.max_connection_rate)
    // actix counts whole seconds: round up so a short timeout is not zero.
    .shutdown_timeout(config.shutdown_timeout.as_secs_f64().ceil() as u64);
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

    let (metrics_addr, metrics_server) = match config.metrics_listen {
        Some(addr) => {
            let (bound, handle, task) = spawn_metrics_listener(addr, state.clone())?;
            (Some(bound), Some((handle, task)))
        }
        None => (None, None),
    };

    let reloader = reload::Reloader::start(reload::Targets {
        tls: match &config.tls {
            TlsSource::Files { cert, key } => Some((cert.clone(), key.clone())),
            TlsSource::SelfSigned => None,
        },
        resolver: cert_resolver.clone(),
        provider,
        config: match &config.config_source {
            ConfigSource::Dir(dir) => Some(dir.clone()),
            ConfigSource::Embedded => None,
        },
        state: state.clone(),
        interval: config.reload_interval,
    })
    .context("starting the reload thread")?;

    let server = server.run();
    let handle = server.handle();
    let task = tokio::spawn(server);
    state.set_ready(true);
    tracing::info!(%local_addr, "listening (HTTPS, HTTP/2 and HTTP/1.1)");

    Ok(RunningServer {
        local_addr,
        metrics_addr,
        cert_pem: material.cert_pem,
        state,
        cert_resolver,
        handle,
        task: Some(task),
        metrics_server,
        reloader,
        shutdown_delay: config.shutdown_delay,
    })
}

type ServerTask = tokio::task::JoinHandle<std::io::Result<()>>;

/// The plain-HTTP listener of `--metrics-listen`: `/metrics`, `/healthz`
/// and `/readyz` only, one worker.
fn spawn_metrics_listener(
    addr: SocketAddr,
    state: web::Data<AppState>,
) -> anyhow::Result<(SocketAddr, ServerHandle, ServerTask)> {
    let server = HttpServer::new(move || {
        let state = state.clone();
        App::new().configure(move |cfg| routes::configure_ops(cfg, state))
    })
    .disable_signals()
    .workers(1)
    .shutdown_timeout(1)
    .bind(addr)
    .with_context(|| format!("binding the metrics listener on {addr}"))?;
    let bound = server
        .addrs()
        .first()
        .copied()
        .context("the metrics listener has no address")?;
    let server = server.run();
    let handle = server.handle();
    tracing::info!(addr = %bound, "serving metrics over plain HTTP");
    Ok((bound, handle, tokio::spawn(server)))
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

    /// The bound address of the `--metrics-listen` listener, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The certificate resolver (replace its certificate to rotate).
    pub fn cert_resolver(&self) -> &tls::CertResolver {
        &self.cert_resolver
    }

    /// The graceful stop: turns `/readyz` to 503, keeps serving for the
    /// shutdown delay (so the pod leaves the Service endpoints before it
    /// stops accepting), stops accepting, lets requests in flight finish (up
    /// to the shutdown timeout) and waits for the server to end.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.state.set_ready(false);
        if !self.shutdown_delay.is_zero() {
            tracing::info!(delay = ?self.shutdown_delay, "not ready; still serving until the shutdown delay ends");
            tokio::time::sleep(self.shutdown_delay).await;
        }
        tracing::info!("no longer accepting connections; draining requests in flight");
        self.handle.stop(true).await;
        let result = self.join().await;
        if let Some((handle, task)) = self.metrics_server.take() {
            handle.stop(true).await;
            let _ = task.await;
        }
        if let Some(reloader) = self.reloader.take() {
            // Joining waits for a reload in progress: off the async thread.
            let _ = tokio::task::spawn_blocking(move || reloader.stop()).await;
        }
        result
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
                tracing::info!(signal, "stopping");
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
        if let Some((handle, _)) = self.metrics_server.take() {
            drop(handle.stop(false));
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
