//! Hot reload of the serving certificate and of the config directory.
//!
//! A background thread looks at the files every `--reload-interval` and
//! acts when their content changed:
//! - certificate: the new pair is loaded and checked, then handed to the
//!   [`CertResolver`] (new handshakes use it, open connections keep theirs);
//!   a broken pair is logged and counted, and the old one keeps serving;
//! - config: once the directory's content stayed the same for a whole
//!   interval (a file being written is not read half done), it is loaded and
//!   compiled on this thread (off the request path), bound to the metrics
//!   and swapped in atomically; a config `celhook check` would refuse is
//!   logged and counted, and the last good one keeps serving. A change that
//!   drops rules or CRDs (what a file cut short looks like) is logged and
//!   loaded only after five unchanged polls, or at once on SIGHUP;
//! - client CA: a changed `--client-ca` file verifies the next handshakes.
//!
//! Why polling and not inotify (`notify`): Kubernetes updates Secret and
//! ConfigMap volumes by writing a new timestamped directory and swapping the
//! `..data` symlink, so a watch on the files sees them deleted, not changed,
//! and must be rebuilt on every swap; content polling sees every update the
//! same way (plain writes, renames, symlink swaps, network file systems)
//! without that bookkeeping or an extra dependency. The kubelet itself
//! takes up to a minute to project a change, so a poll of a second adds
//! nothing noticeable, and reading a few small files once a second costs
//! nothing measurable. Comparing content (not mtimes) also ignores the
//! kubelet's no-op resyncs.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;

use super::tls::{self, CertResolver, ClientAuth, TlsSource};
use super::AppState;
use crate::config::{self, Catalog, ConfigSource};

/// Default for `--reload-interval`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// How long a change that drops rules or CRDs must stay unchanged before
/// it is loaded (at least, and at least five polls); any other change waits
/// one whole interval.
const DROP_SETTLE: Duration = Duration::from_secs(10);
const DROP_SETTLE_POLLS: u32 = 5;

/// What the reloader watches.
pub(super) struct Targets {
    pub tls: Option<(PathBuf, PathBuf)>,
    pub resolver: Arc<CertResolver>,
    pub provider: Arc<CryptoProvider>,
    pub client_auth: Option<ClientAuth>,
    pub tls_config: Arc<ArcSwap<rustls::ServerConfig>>,
    pub config: Option<PathBuf>,
    pub state: Arc<AppState>,
    pub interval: Duration,
}

/// A message to the reloader thread.
enum Message {
    /// Look at the files now, and load what changed without waiting for it
    /// to settle (SIGHUP: the operator says the files are complete).
    Now,
}

/// The running reloader thread; [`Reloader::stop`] (or drop) ends it.
#[derive(Debug)]
pub struct Reloader {
    messages: Option<mpsc::Sender<Message>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Now")
    }
}

impl Reloader {
    /// Starts watching. Returns `None` when there is nothing to watch
    /// (generated certificate, no client CA and embedded config).
    pub(super) fn start(targets: Targets) -> std::io::Result<Option<Reloader>> {
        if targets.tls.is_none() && targets.config.is_none() && targets.client_auth.is_none() {
            return Ok(None);
        }
        let (messages, inbox) = mpsc::channel();
        // What is served now, taken before the thread starts: a change made
        // right after start is a change, however late the thread runs.
        let seen = Seen::of(&targets);
        let thread = std::thread::Builder::new()
            .name("celhook-reload".into())
            .spawn(move || run(targets, seen, &inbox))?;
        Ok(Some(Reloader {
            messages: Some(messages),
            thread: Some(thread),
        }))
    }

    /// Looks at the files at once (SIGHUP).
    pub fn now(&self) {
        if let Some(messages) = &self.messages {
            let _ = messages.send(Message::Now);
        }
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Dropping the sender wakes the thread at once.
        self.messages.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Reloader {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A config directory that changed: its fingerprint, for how many polls
/// in a row it has stayed so, and since when.
struct Pending {
    fingerprint: u64,
    polls: u32,
    since: std::time::Instant,
}

/// Fingerprints of the files as they were last loaded.
struct Seen {
    cert: Option<u64>,
    ca: Option<u64>,
    config: Option<u64>,
}

impl Seen {
    fn of(targets: &Targets) -> Self {
        Self {
            cert: targets
                .tls
                .as_ref()
                .map(|(c, k)| files_fingerprint(&[c, k])),
            ca: targets
                .client_auth
                .as_ref()
                .map(|auth| files_fingerprint(&[&auth.ca])),
            config: targets.config.as_deref().map(dir_fingerprint),
        }
    }
}

fn run(targets: Targets, seen: Seen, inbox: &mpsc::Receiver<Message>) {
    let Seen {
        cert: mut cert_seen,
        ca: mut ca_seen,
        config: mut config_seen,
    } = seen;
    let mut pending: Option<Pending> = None;
    tracing::debug!(interval = ?targets.interval, "watching certificate and config files");
    loop {
        let now = match inbox.recv_timeout(targets.interval) {
            Err(mpsc::RecvTimeoutError::Timeout) => false,
            Ok(Message::Now) => true,
            // The sender is gone: stop.
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        if let Some((cert, key)) = &targets.tls {
            let fingerprint = files_fingerprint(&[cert, key]);
            if cert_seen != Some(fingerprint) || now {
                cert_seen = Some(fingerprint);
                reload_cert(&targets, cert, key);
            }
        }
        if let Some(auth) = &targets.client_auth {
            let fingerprint = files_fingerprint(&[&auth.ca]);
            if ca_seen != Some(fingerprint) || now {
                ca_seen = Some(fingerprint);
                reload_client_ca(&targets, auth);
            }
        }
        if let Some(dir) = &targets.config {
            let fingerprint = dir_fingerprint(dir);
            if config_seen == Some(fingerprint) && !now {
                pending = None;
                continue;
            }
            // A change loads once it stayed the same for a whole interval:
            // a file being written (or copied in pieces) is not read half
            // done. One that drops rules or CRDs waits longer (below).
            let (polls, since) = match &pending {
                Some(p) if p.fingerprint == fingerprint => (p.polls + 1, p.since),
                _ => (1, std::time::Instant::now()),
            };
            pending = Some(Pending {
                fingerprint,
                polls,
                since,
            });
            if polls < 2 && !now {
                targets.state.metrics.observe_config_reload_deferred();
                continue;
            }
            let settled = now || (polls >= DROP_SETTLE_POLLS && since.elapsed() >= DROP_SETTLE);
            match reload_config_settled(&targets.state, dir, settled) {
                Settle::Done => {
                    config_seen = Some(fingerprint);
                    pending = None;
                }
                Settle::Wait => targets.state.metrics.observe_config_reload_deferred(),
            }
        }
    }
}

fn reload_cert(targets: &Targets, cert: &Path, key: &Path) {
    let source = TlsSource::Files {
        cert: cert.to_owned(),
        key: key.to_owned(),
    };
    let metrics = &targets.state.metrics;
    let loaded = tls::load(&source, &targets.provider)
        .and_then(|material| tls::check_validity(&material.key, cert).map(|()| material));
    match loaded {
        Ok(material) => {
            let expiry = material.key.end_entity_cert().ok().and_then(tls::not_after);
            targets.resolver.replace(material.key);
            metrics.observe_cert_reload(true);
            if let Some(expiry) = expiry {
                metrics.observe_cert_expiry(expiry);
            }
            tracing::info!(cert = %cert.display(), "serving the new certificate");
        }
        Err(err) => {
            metrics.observe_cert_reload(false);
            tracing::error!(error = %err, "certificate files changed but are unusable; still serving the previous certificate");
        }
    }
}

fn reload_client_ca(targets: &Targets, auth: &ClientAuth) {
    let metrics = &targets.state.metrics;
    match tls::server_config(
        targets.resolver.clone(),
        targets.provider.clone(),
        Some(auth),
    ) {
        Ok(config) => {
            targets.tls_config.store(Arc::new(config));
            metrics.observe_cert_reload(true);
            tracing::info!(ca = %auth.ca.display(), "verifying client certificates with the new CA file");
        }
        Err(err) => {
            metrics.observe_cert_reload(false);
            tracing::error!(error = %err, "--client-ca file changed but is unusable; still verifying with the previous CAs");
        }
    }
}

/// Loads `dir`; on success binds and swaps the new catalog in. Returns
/// whether the new config serves.
pub fn reload_config(state: &AppState, dir: &Path) -> bool {
    matches!(reload_config_settled(state, dir, true), Settle::Done)
}

/// What a reload attempt came to.
enum Settle {
    /// Loaded, or refused for good (logged): nothing more to do for this
    /// content.
    Done,
    /// It drops rules or CRDs and has not settled yet: look again later.
    Wait,
}

fn reload_config_settled(state: &AppState, dir: &Path, settled: bool) -> Settle {
    let loaded = config::load_as(&ConfigSource::Dir(dir.to_owned()), state.config_options);
    if loaded.report.has_errors() {
        state.metrics.observe_config_reload_failure();
        for problem in config::report::problems(&loaded.report) {
            tracing::error!(problem = %config::report::format_problem(&problem), "config problem");
        }
        tracing::error!(
            generation = state.metrics.config_generation(),
            "config changed but has problems; still serving the previous config"
        );
        return Settle::Done;
    }
    // Skipped files and documents, and conversion fields kept only in
    // the stash: served all the same (errors only for `check --strict`).
    for warning in &loaded.report.warnings {
        tracing::warn!(warning = %config::report::format_problem(warning), "config warning");
    }
    let dropped = dropped(&state.catalog.load(), &loaded.catalog);
    if !dropped.is_empty() {
        if !settled {
            tracing::warn!(
                dropped = ?dropped,
                "config change drops rules or CRDs: loading it only once it has stayed the same for {DROP_SETTLE:?} and {DROP_SETTLE_POLLS} polls, or on SIGHUP (a file still being written looks the same)"
            );
            return Settle::Wait;
        }
        tracing::warn!(dropped = ?dropped, "the new config drops rules or CRDs");
    }
    loaded.catalog.bind_metrics(&state.metrics);
    state.catalog.store(Arc::new(loaded.catalog));
    let generation = state.metrics.config_generation() + 1;
    state
        .metrics
        .observe_config_loaded(generation, SystemTime::now());
    tracing::info!(
        generation,
        crds = loaded.report.crds.len(),
        "serving the new config"
    );
    Settle::Done
}

/// What `new` lacks of `old`: CRD versions gone, and versions with fewer
/// rules, as `group/version/kind` texts.
fn dropped(old: &Catalog, new: &Catalog) -> Vec<String> {
    let mut out: Vec<String> = old
        .versions()
        .filter_map(|v| {
            let name = format!("{}/{}/{}", v.group, v.version, v.kind);
            match new.lookup(&v.group, &v.version, &v.kind) {
                None => Some(format!("{name}: CRD version gone")),
                Some(n) => {
                    let (before, after) = (v.validator.rule_count(), n.validator.rule_count());
                    (after < before).then(|| format!("{name}: {before} rules -> {after}"))
                }
            }
        })
        .collect();
    let conversions = |c: &Catalog| c.conversion_count();
    if conversions(new) < conversions(old) {
        out.push(format!(
            "conversion documents: {} -> {}",
            conversions(old),
            conversions(new)
        ));
    }
    out.sort();
    out
}

/// Hash of the files' contents; an unreadable file hashes its error kind,
/// so a file that disappears and comes back counts as a change.
fn files_fingerprint(paths: &[&PathBuf]) -> u64 {
    let mut h = DefaultHasher::new();
    for path in paths {
        match std::fs::read(path) {
            Ok(bytes) => bytes.hash(&mut h),
            Err(err) => (err.kind() as u32).hash(&mut h),
        }
    }
    h.finish()
}

/// Hash of the names and contents of the files the config loader reads
/// (`config::files`: subdirectories included, following symlinks such as
/// a ConfigMap volume's).
fn dir_fingerprint(dir: &Path) -> u64 {
    let mut h = DefaultHasher::new();
    let files = match config::files::config_files(dir) {
        Ok(files) => files,
        Err(err) => {
            (err.kind() as u32).hash(&mut h);
            return h.finish();
        }
    };
    for path in files {
        path.hash(&mut h);
        match std::fs::read(&path) {
            Ok(bytes) => bytes.hash(&mut h),
            Err(err) => (err.kind() as u32).hash(&mut h),
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dir_fingerprint_follows_content_not_other_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.yaml"), "a: 1\n").expect("write");
        let first = dir_fingerprint(dir.path());
        assert_eq!(first, dir_fingerprint(dir.path()));
        std::fs::write(dir.path().join("notes.txt"), "ignored").expect("write");
        assert_eq!(first, dir_fingerprint(dir.path()));
        std::fs::write(dir.path().join("a.yaml"), "a: 2\n").expect("write");
        let second = dir_fingerprint(dir.path());
        assert_ne!(first, second);
        // A CRD in a subdirectory counts too: the loader reads it.
        std::fs::create_dir(dir.path().join("team")).expect("mkdir");
        std::fs::write(dir.path().join("team/b.yaml"), "b: 1\n").expect("write");
        assert_ne!(second, dir_fingerprint(dir.path()));
    }

    #[cfg(unix)]
    #[test]
    fn the_file_fingerprint_sees_a_kubernetes_symlink_swap() {
        // The kubelet's layout: tls.crt -> ..data/tls.crt, ..data -> ..v1.
        let dir = tempfile::tempdir().expect("tempdir");
        let v1 = dir.path().join("..v1");
        let v2 = dir.path().join("..v2");
        std::fs::create_dir(&v1).expect("mkdir");
        std::fs::create_dir(&v2).expect("mkdir");
        std::fs::write(v1.join("tls.crt"), "one").expect("write");
        std::fs::write(v2.join("tls.crt"), "two").expect("write");
        std::os::unix::fs::symlink("..v1", dir.path().join("..data")).expect("link");
        std::os::unix::fs::symlink("..data/tls.crt", dir.path().join("tls.crt")).expect("link");
        let cert = dir.path().join("tls.crt");
        let before = files_fingerprint(&[&cert]);
        std::os::unix::fs::symlink("..v2", dir.path().join("..data_tmp")).expect("link");
        std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).expect("swap");
        assert_ne!(before, files_fingerprint(&[&cert]));
    }
}
