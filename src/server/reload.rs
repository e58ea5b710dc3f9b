//! Hot reload of the serving certificate and of the config directory.
//!
//! A background thread looks at the files every `--reload-interval` and
//! acts when their content changed:
//! - certificate: the new pair is loaded and checked, then handed to the
//!   [`CertResolver`] (new handshakes use it, open connections keep theirs);
//!   a broken pair is logged and counted, and the old one keeps serving;
//! - config: the directory is loaded and compiled on this thread (off the
//!   request path), bound to the metrics and swapped in atomically; a config
//!   `celhook check` would refuse is logged and counted, and the last good
//!   one keeps serving.
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

use actix_web::web;
use rustls::crypto::CryptoProvider;

use super::tls::{self, CertResolver, TlsSource};
use super::AppState;
use crate::config::{self, ConfigSource};

/// Default for `--reload-interval`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// What the reloader watches.
pub(super) struct Targets {
    pub tls: Option<(PathBuf, PathBuf)>,
    pub resolver: Arc<CertResolver>,
    pub provider: Arc<CryptoProvider>,
    pub config: Option<PathBuf>,
    pub state: web::Data<AppState>,
    pub interval: Duration,
}

/// The running reloader thread; [`Reloader::stop`] (or drop) ends it.
#[derive(Debug)]
pub struct Reloader {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Reloader {
    /// Starts watching. Returns `None` when there is nothing to watch
    /// (generated certificate and embedded config).
    pub(super) fn start(targets: Targets) -> std::io::Result<Option<Reloader>> {
        if targets.tls.is_none() && targets.config.is_none() {
            return Ok(None);
        }
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("celhook-reload".into())
            .spawn(move || run(targets, &stopped))?;
        Ok(Some(Reloader {
            stop: Some(stop),
            thread: Some(thread),
        }))
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Dropping the sender wakes the thread at once.
        self.stop.take();
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

fn run(targets: Targets, stopped: &mpsc::Receiver<()>) {
    let mut cert_seen = targets
        .tls
        .as_ref()
        .map(|(c, k)| files_fingerprint(&[c, k]));
    let mut config_seen = targets.config.as_deref().map(dir_fingerprint);
    tracing::debug!(interval = ?targets.interval, "watching certificate and config files");
    loop {
        match stopped.recv_timeout(targets.interval) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // A message or a dropped sender: stop.
            _ => return,
        }
        if let Some((cert, key)) = &targets.tls {
            let now = files_fingerprint(&[cert, key]);
            if cert_seen != Some(now) {
                cert_seen = Some(now);
                reload_cert(&targets, cert, key);
            }
        }
        if let Some(dir) = &targets.config {
            let now = dir_fingerprint(dir);
            if config_seen != Some(now) {
                config_seen = Some(now);
                reload_config(&targets.state, dir);
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
    match tls::load(&source, &targets.provider) {
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

/// Loads `dir`; on success binds and swaps the new catalog in. Returns
/// whether the new config serves.
pub fn reload_config(state: &AppState, dir: &Path) -> bool {
    let loaded = config::load(&ConfigSource::Dir(dir.to_owned()));
    if loaded.report.has_errors() {
        state.metrics.observe_config_reload_failure();
        for problem in crate::cli::problems(&loaded.report) {
            tracing::error!(problem = %crate::cli::format_problem(&problem), "config problem");
        }
        tracing::error!(
            generation = state.metrics.config_generation(),
            "config changed but has problems; still serving the previous config"
        );
        return false;
    }
    state.metrics.bind_catalog(&loaded.catalog);
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
    true
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
/// (`*.yaml`, `*.yml`, `*.json`, following symlinks such as a ConfigMap
/// volume's).
fn dir_fingerprint(dir: &Path) -> u64 {
    let mut h = DefaultHasher::new();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(err) => {
            (err.kind() as u32).hash(&mut h);
            return h.finish();
        }
    };
    files.retain(|p| {
        p.is_file()
            && matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            )
    });
    files.sort();
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
        assert_ne!(first, dir_fingerprint(dir.path()));
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
