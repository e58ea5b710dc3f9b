//! The HTTPS edge: one rustls listener (TLS 1.2/1.3, HTTP/2 and HTTP/1.1 by
//! ALPN) in front of the routes of [`routes`], on a tokio runtime of its own.
//!
//! [`spawn`] binds and starts the server and returns a [`RunningServer`]
//! handle; `main` and the integration tests start the server the same way.
//! Around the routes: the accept path (`listener`), each connection and
//! its watchdog (`connection`), an optional plain-HTTP metrics listener,
//! the reloader thread ([`reload`]) and the graceful stop
//! ([`RunningServer::stop`]).

mod activity;
mod batch;
mod body;
mod connection;
mod io;
pub mod limits;
mod listener;
pub mod reload;
pub mod routes;
mod saturation;
mod serve_config;
pub mod tls;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::config::{Catalog, ConfigSource};
use crate::metrics::Metrics;
use connection::Phase;
pub use serve_config::*;
pub use tls::{ClientAuth, TlsError, TlsSource};

/// Locks one of the server's bookkeeping maps (connections, handshakes
/// per source, log lines per source). A panic while one was held cannot
/// leave it half-changed, so a poisoned lock is taken as it is rather
/// than failing every later connection.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// State shared by every connection.
#[derive(Debug)]
pub struct AppState {
    /// The compiled CRDs; swapped whole on reload, read lock-free per request.
    pub catalog: ArcSwap<Catalog>,
    /// The `--max-request-bytes` limit (reported in 413 answers).
    pub max_request_bytes: usize,
    /// Every metric, in this server's own registry.
    pub metrics: Metrics,
    /// Concurrency, budgets and deadline of review requests.
    pub limits: Limits,
    /// The `--max-convert-request-bytes` limit of `/convert`.
    pub max_convert_request_bytes: usize,
    /// How requests are answered beyond the rules.
    pub policy: crate::admission::Policy,
    /// What a reloaded config is compiled as.
    pub config_options: crate::config::Options,
    /// Reviews ready at the same moment, answered back to back (under
    /// `--review-rounds auto`, while the I/O threads are saturated).
    batch: batch::Batch,
    ready: AtomicBool,
    draining: AtomicBool,
}

impl AppState {
    /// State serving `catalog` (bound to `metrics` as config generation 1)
    /// with the limits of `config`, not yet ready.
    pub fn new(catalog: Catalog, config: &ServeConfig, metrics: Metrics) -> Self {
        catalog.bind_metrics(&metrics);
        metrics.observe_config_loaded(1, std::time::SystemTime::now());
        let batch = batch::Batch::new(config.review_rounds, metrics.io_saturated().clone());
        Self {
            catalog: ArcSwap::from_pointee(catalog),
            max_request_bytes: config.max_request_bytes,
            metrics,
            limits: Limits::of(config),
            max_convert_request_bytes: config.max_convert_request_bytes,
            policy: config.policy,
            config_options: crate::config::Options {
                kubernetes: config.kubernetes,
                written: false,
            },
            batch,
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
        }
    }

    /// What `/readyz` reports.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Sets what `/readyz` reports.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// True once a stop began: HTTP/1.1 answers carry `Connection: close`.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }
}

/// A started server. Dropping it stops the server without waiting.
pub struct RunningServer {
    local_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    cert_pem: String,
    state: Arc<AppState>,
    cert_resolver: Arc<tls::CertResolver>,
    phase: watch::Sender<Phase>,
    registry: Arc<connection::Registry>,
    /// The accept loops; each ends (closing its socket) when stopping.
    listeners: Vec<tokio::task::JoinHandle<()>>,
    runtime: Option<tokio::runtime::Runtime>,
    reloader: Option<reload::Reloader>,
    shutdown_delay: Duration,
    shutdown_timeout: Duration,
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("local_addr", &self.local_addr)
            .field("metrics_addr", &self.metrics_addr)
            .finish_non_exhaustive()
    }
}

/// The server's own runtime: `workers` threads for I/O (default: the CPUs
/// the process may use), and a blocking pool for evaluation sized to the
/// concurrency limit (evaluations wait for a slot before they take one).
fn runtime(config: &ServeConfig) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .enable_all()
        .thread_name("celhook-worker")
        .max_blocking_threads(config.max_concurrent_requests.max(1));
    if let Some(workers) = config.workers {
        builder.worker_threads(workers.max(1));
    }
    builder.build()
}

/// Binds the listener and starts serving `catalog` with `config`.
///
/// The server runs on a runtime of its own (the caller's only awaits it)
/// until [`RunningServer::stop`]. Errors are [`TlsError`] (bad certificate
/// files: a configuration error) or I/O errors from binding, with context.
pub async fn spawn(config: ServeConfig, catalog: Catalog) -> anyhow::Result<RunningServer> {
    let config = config.capped();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let material = tls::load(&config.tls, &provider)?;
    if material.self_signed {
        tracing::warn!(
            names = ?tls::SELF_SIGNED_NAMES,
            "no --tls-cert/--tls-key given: serving a self-signed certificate generated in memory (development only)"
        );
    } else if let TlsSource::Files { cert, .. } = &config.tls {
        if let Err(err) = tls::check_validity(&material.key, cert) {
            tracing::warn!(error = %err, "serving a certificate that clients will refuse");
        }
    }
    let metrics = Metrics::register();
    if let Some(expiry) = material.key.end_entity_cert().ok().and_then(tls::not_after) {
        metrics.observe_cert_expiry(expiry);
    }
    let cert_resolver = Arc::new(tls::CertResolver::new(material.key));
    let tls_config = Arc::new(ArcSwap::from_pointee(tls::server_config(
        cert_resolver.clone(),
        provider.clone(),
        config.client_auth.as_ref(),
    )?));
    let state = Arc::new(AppState::new(catalog, &config, metrics));

    // Shut down in the background if start-up fails below: dropping a
    // runtime inside the caller's async context would panic.
    let mut started = BackgroundDrop(Some(
        runtime(&config).context("starting the server runtime")?,
    ));
    let runtime = started.get();
    let listener = {
        let _enter = runtime.enter();
        bind(config.listen)
            .with_context(|| format!("binding the TLS listener on {}", config.listen))?
    };
    let local_addr = listener
        .local_addr()
        .context("the listener has no address")?;
    let metrics_listener = match config.metrics_listen {
        Some(addr) => {
            let _enter = runtime.enter();
            Some(bind(addr).with_context(|| format!("binding the metrics listener on {addr}"))?)
        }
        None => None,
    };
    let metrics_addr = metrics_listener
        .as_ref()
        .map(|l| l.local_addr())
        .transpose()
        .context("the metrics listener has no address")?;

    let (phase, phase_rx) = watch::channel(Phase::Serving);
    let registry = connection::Registry::new(config.max_connections);
    let served = Arc::new(connection::Served::new(
        state.clone(),
        connection::Settings {
            client_hello_timeout: config.client_hello_timeout,
            header_timeout: config.header_timeout,
            keep_alive: config.keep_alive,
            write_timeout: config.write_timeout,
            max_concurrent_streams: config.http2_max_concurrent_streams,
        },
        registry.clone(),
        phase_rx.clone(),
    ));
    let shared = Arc::new(listener::Accept {
        served,
        sources: listener::Sources::new(config.max_handshakes_per_source),
        handshakes: listener::handshake_slots(config.max_connection_rate),
        tls_config: tls_config.clone(),
        failures: listener::RateLimitedLog::default(),
    });
    let mut listeners = vec![runtime.spawn(listener::accept_loop(listener, shared))];
    if let (Some(metrics_listener), Some(addr)) = (metrics_listener, metrics_addr) {
        listeners.push(runtime.spawn(serve_metrics(metrics_listener, state.clone(), phase_rx)));
        tracing::info!(%addr, "serving metrics over plain HTTP");
    }

    let reloader = reload::Reloader::start(reload::Targets {
        tls: match &config.tls {
            TlsSource::Files { cert, key } => Some((cert.clone(), key.clone())),
            TlsSource::SelfSigned => None,
        },
        resolver: cert_resolver.clone(),
        provider,
        client_auth: config.client_auth.clone(),
        tls_config,
        config: match &config.config_source {
            ConfigSource::Dir(dir) => Some(dir.clone()),
            ConfigSource::Embedded => None,
        },
        state: state.clone(),
        interval: config.reload_interval,
    })
    .context("starting the reload thread")?;

    state.set_ready(true);
    tracing::info!(%local_addr, "listening (HTTPS, HTTP/2 and HTTP/1.1)");
    Ok(RunningServer {
        local_addr,
        metrics_addr,
        cert_pem: material.cert_pem,
        state,
        cert_resolver,
        phase,
        registry,
        listeners,
        runtime: started.0.take(),
        reloader,
        shutdown_delay: config.shutdown_delay,
        shutdown_timeout: config.shutdown_timeout,
    })
}

/// A runtime that is shut down in the background when dropped.
struct BackgroundDrop(Option<tokio::runtime::Runtime>);

impl BackgroundDrop {
    fn get(&self) -> &tokio::runtime::Runtime {
        // Some until `spawn` takes it out at its very end.
        #[allow(clippy::expect_used)]
        self.0
            .as_ref()
            .expect("the runtime is taken only at the end")
    }
}

impl Drop for BackgroundDrop {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// A listening socket with a backlog for bursts of connections.
fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// The plain-HTTP listener of `--metrics-listen`: `/metrics`, `/healthz`
/// and `/readyz` only, HTTP/1.1.
async fn serve_metrics(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    mut phase: watch::Receiver<Phase>,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(5));
    let builder = Arc::new(builder);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = phase.wait_for(|p| *p == Phase::Stopping) => return,
        };
        let Ok((tcp, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let (state, builder) = (state.clone(), builder.clone());
        tokio::spawn(async move {
            let activity = activity::Activity::new();
            let service = hyper::service::service_fn(move |req| {
                routes::handle(state.clone(), activity.clone(), routes::Routes::Ops, req)
            });
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
            let _ = tokio::time::timeout(Duration::from_secs(60), conn).await;
        });
    }
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

    /// Connections open now (handshakes included).
    pub fn connections(&self) -> usize {
        self.registry.len()
    }

    /// Asks the reloader to look at the files now (what SIGHUP does).
    pub fn reload_now(&self) {
        if let Some(reloader) = &self.reloader {
            reloader.now();
        }
    }

    /// The graceful stop: turns `/readyz` to 503 and, for the shutdown
    /// delay, keeps serving while moving clients elsewhere (HTTP/1.1
    /// answers carry `Connection: close`, HTTP/2 connections get a
    /// GOAWAY), so the pod leaves the Service endpoints before it stops
    /// accepting; then stops accepting, lets every connection finish what
    /// it has (up to the shutdown timeout) and ends the runtime.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        // Draining first: once `/readyz` says 503, every HTTP/1.1 answer
        // carries `Connection: close`.
        self.state.draining.store(true, Ordering::Release);
        self.state.set_ready(false);
        self.phase.send_replace(Phase::Draining);
        if !self.shutdown_delay.is_zero() {
            tracing::info!(delay = ?self.shutdown_delay, "not ready; still serving until the shutdown delay ends");
            tokio::time::sleep(self.shutdown_delay).await;
        }
        tracing::info!("no longer accepting connections; draining requests in flight");
        self.phase.send_replace(Phase::Stopping);
        // Not accepting means the sockets are closed when `stop` returns.
        for listener in std::mem::take(&mut self.listeners) {
            let _ = listener.await;
        }
        let registry = self.registry.clone();
        let drained =
            tokio::time::timeout(
                self.shutdown_timeout,
                async move { registry.wait_empty().await },
            )
            .await;
        if drained.is_err() {
            tracing::warn!(
                connections = self.registry.len(),
                "shutdown timeout: closing the connections still open"
            );
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        if let Some(reloader) = self.reloader.take() {
            // Joining waits for a reload in progress: off the async thread.
            let _ = tokio::task::spawn_blocking(move || reloader.stop()).await;
        }
        Ok(())
    }

    /// Serves until SIGTERM, then stops gracefully (what an orchestrator
    /// sends); SIGINT (Ctrl-C in a terminal) stops at once, also during a
    /// graceful stop. SIGHUP reloads the certificate and config files at
    /// once; SIGUSR1 and SIGUSR2 are logged and ignored (their default
    /// would kill the process without a drain).
    pub async fn run_until_signal(self, mut signals: Signals) -> anyhow::Result<()> {
        let signal = signals.wait(|| self.reload_now()).await?;
        if signal == signals::INTERRUPT {
            tracing::info!(signal, "stopping at once");
            // Dropping the server stops its runtime without a drain.
            return Ok(());
        }
        tracing::info!(signal, "stopping");
        tokio::select! {
            stopped = self.stop() => stopped,
            interrupted = signals::interrupt() => {
                tracing::info!(signal = signals::INTERRUPT, "stopping at once, in the middle of the drain");
                interrupted
            }
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.phase.send_replace(Phase::Stopping);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

pub use signals::Signals;

mod signals {
    use anyhow::Context;

    /// The name [`Signals::wait`] gives an interrupt (Ctrl-C).
    pub const INTERRUPT: &str = "SIGINT";

    /// The process's signal handlers, installed by [`Signals::install`]
    /// before the server listens (until then a signal takes its default
    /// action: SIGTERM and SIGHUP would kill the process).
    #[cfg(unix)]
    pub struct Signals {
        term: tokio::signal::unix::Signal,
        int: tokio::signal::unix::Signal,
        hup: tokio::signal::unix::Signal,
        usr1: tokio::signal::unix::Signal,
        usr2: tokio::signal::unix::Signal,
    }

    /// Ctrl-C only, where there are no Unix signals.
    #[cfg(not(unix))]
    pub struct Signals;

    /// Waits for an interrupt (SIGINT, Ctrl-C).
    pub async fn interrupt() -> anyhow::Result<()> {
        tokio::signal::ctrl_c().await.context("waiting for SIGINT")
    }

    #[cfg(unix)]
    impl Signals {
        /// Installs the handlers (inside the runtime).
        pub fn install() -> anyhow::Result<Signals> {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
                int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
                hup: signal(SignalKind::hangup()).context("installing the SIGHUP handler")?,
                usr1: signal(SignalKind::user_defined1())
                    .context("installing the SIGUSR1 handler")?,
                usr2: signal(SignalKind::user_defined2())
                    .context("installing the SIGUSR2 handler")?,
            })
        }

        /// Waits for SIGTERM (what Kubernetes sends) or SIGINT and returns
        /// its name; calls `reload` on each SIGHUP.
        pub async fn wait(&mut self, reload: impl Fn()) -> anyhow::Result<&'static str> {
            loop {
                tokio::select! {
                    _ = self.term.recv() => return Ok("SIGTERM"),
                    _ = self.int.recv() => return Ok(INTERRUPT),
                    _ = self.hup.recv() => {
                        tracing::info!(signal = "SIGHUP", "reloading the certificate and config files now");
                        reload();
                    }
                    _ = self.usr1.recv() => tracing::info!(signal = "SIGUSR1", "ignored"),
                    _ = self.usr2.recv() => tracing::info!(signal = "SIGUSR2", "ignored"),
                }
            }
        }
    }

    #[cfg(not(unix))]
    impl Signals {
        /// Nothing to install: Ctrl-C is awaited directly.
        pub fn install() -> anyhow::Result<Signals> {
            Ok(Signals)
        }

        /// Waits for Ctrl-C.
        pub async fn wait(&mut self, _reload: impl Fn()) -> anyhow::Result<&'static str> {
            interrupt().await?;
            Ok(INTERRUPT)
        }
    }
}
