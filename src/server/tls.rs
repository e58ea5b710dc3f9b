//! The serving certificate and the rustls configuration of the listener.
//!
//! The certificate is handed to rustls through [`CertResolver`], which we
//! own: replacing its certificate affects every later handshake, which is
//! the seam for certificate hot reload.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSource {
    /// PEM files: the certificate chain (leaf first) and its private key
    /// (PKCS#8, PKCS#1 or SEC1).
    Files {
        /// `--tls-cert`
        cert: PathBuf,
        /// `--tls-key`
        key: PathBuf,
    },
    /// A self-signed certificate for `localhost` and `127.0.0.1`, generated
    /// in memory at start-up. For development and tests only.
    SelfSigned,
}

/// Why the serving certificate could not be loaded. Each message names the
/// file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {flag} file {}: {source}", path.display())]
    Read {
        /// `--tls-cert` or `--tls-key`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not valid PEM.
    #[error("invalid PEM in {flag} file {}: {source}", path.display())]
    Pem {
        /// `--tls-cert` or `--tls-key`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What the PEM parser said.
        source: pem::Error,
    },
    /// The certificate file holds no `CERTIFICATE` block.
    #[error("no PEM certificate found in --tls-cert file {}", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no private key block.
    #[error("no PEM private key (PKCS#8, PKCS#1 or SEC1) found in --tls-key file {}", path.display())]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// The key is of a type rustls cannot sign with.
    #[error("unsupported private key in --tls-key file {}: {source}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
    /// The key does not belong to the certificate.
    #[error(
        "the private key in --tls-key file {} does not match the certificate in --tls-cert file {}: {source}",
        key.display(),
        cert.display()
    )]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
    /// The `--client-ca` file is unusable.
    #[error("unusable --client-ca file {}: {reason}", path.display())]
    ClientCa {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The certificate is expired or not valid yet.
    #[error("the certificate in --tls-cert file {} is {reason}", path.display())]
    Validity {
        /// The file.
        path: PathBuf,
        /// Its validity, as the check found it.
        reason: String,
    },
    /// rcgen failed to make the self-signed certificate.
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the configuration (cannot happen with our fixed choices).
    #[error("cannot build the TLS configuration: {0}")]
    Config(#[source] rustls::Error),
}

/// A loaded serving certificate.
pub struct Material {
    /// The chain and signing key, ready for rustls.
    pub key: Arc<CertifiedKey>,
    /// The certificate chain as PEM: what a client has to trust for a
    /// self-signed certificate (the `caBundle`, in tests the reqwest root).
    pub cert_pem: String,
    /// True when the certificate was generated in memory.
    pub self_signed: bool,
}

impl fmt::Debug for Material {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("Material")
            .field("self_signed", &self.self_signed)
            .finish_non_exhaustive()
    }
}

/// The names the generated certificate is valid for.
pub const SELF_SIGNED_NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// Loads (or generates) the serving certificate.
pub fn load(source: &TlsSource, provider: &CryptoProvider) -> Result<Material, TlsError> {
    match source {
        TlsSource::Files { cert, key } => load_files(cert, key, provider),
        TlsSource::SelfSigned => generate(provider),
    }
}

fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        flag,
        path: path.to_owned(),
        source,
    })
}

fn load_files(
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<Material, TlsError> {
    let cert_pem = read("--tls-cert", cert_path)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            flag: "--tls-cert",
            path: cert_path.to_owned(),
            source,
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_path.to_owned(),
        });
    }

    let key_pem = read("--tls-key", key_path)?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|source| match source {
        pem::Error::NoItemsFound => TlsError::NoKey {
            path: key_path.to_owned(),
        },
        source => TlsError::Pem {
            flag: "--tls-key",
            path: key_path.to_owned(),
            source,
        },
    })?;
    let signing_key = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|source| TlsError::Key {
            path: key_path.to_owned(),
            source,
        })?;

    let key = CertifiedKey::new(chain, signing_key);
    match key.keys_match() {
        // Unknown: the key type cannot report its public key; rustls treats
        // that as acceptable too.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(source) => {
            return Err(TlsError::Mismatch {
                cert: cert_path.to_owned(),
                key: key_path.to_owned(),
                source,
            })
        }
    }

    Ok(Material {
        key: Arc::new(key),
        cert_pem: String::from_utf8_lossy(&cert_pem).into_owned(),
        self_signed: false,
    })
}

fn generate(provider: &CryptoProvider) -> Result<Material, TlsError> {
    let generated =
        rcgen::generate_simple_self_signed(SELF_SIGNED_NAMES.map(String::from).to_vec())?;
    let cert_pem = generated.cert.pem();
    let chain = vec![generated.cert.der().clone()];
    let key_der = PrivateKeyDer::from(generated.signing_key);
    let signing_key = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(TlsError::Config)?;
    Ok(Material {
        key: Arc::new(CertifiedKey::new(chain, signing_key)),
        cert_pem,
        self_signed: true,
    })
}

/// Serves the current certificate to every handshake; [`CertResolver::replace`]
/// swaps it without touching open connections.
#[derive(Debug)]
pub struct CertResolver {
    current: ArcSwap<CertifiedKey>,
}

impl CertResolver {
    /// A resolver serving `key`.
    pub fn new(key: Arc<CertifiedKey>) -> Self {
        Self {
            current: ArcSwap::new(key),
        }
    }

    /// Serves `key` from the next handshake on.
    pub fn replace(&self, key: Arc<CertifiedKey>) {
        self.current.store(key);
    }

    /// The certificate served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current.load_full()
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// The expiry (notAfter) of a DER certificate; `None` when it cannot be parsed.
pub fn not_after(cert: &CertificateDer<'_>) -> Option<std::time::SystemTime> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let secs = parsed.validity().not_after.timestamp();
    let secs = u64::try_from(secs).ok()?;
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// Which clients may connect (`--client-ca`, `--allowed-client-names`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAuth {
    /// PEM file of the CA(s) that must have signed the client certificate.
    pub ca: PathBuf,
    /// When not empty, the client certificate's subject CN or one of its
    /// DNS, URI or e-mail SANs must equal one of these.
    pub allowed_names: Vec<String>,
}

/// The verifier demanding a client certificate as `auth` says; clients
/// without one, or with one it refuses, fail the TLS handshake.
pub fn client_verifier(
    auth: &ClientAuth,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let ca_error = |reason: String| TlsError::ClientCa {
        path: auth.ca.clone(),
        reason,
    };
    let pem = std::fs::read(&auth.ca).map_err(|e| ca_error(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| ca_error(format!("invalid PEM: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| ca_error(format!("not a usable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(ca_error("no PEM certificate found".into()));
    }
    let inner = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| ca_error(e.to_string()))?;
    if auth.allowed_names.is_empty() {
        return Ok(inner);
    }
    Ok(Arc::new(NameCheckingVerifier {
        inner,
        allowed: auth.allowed_names.clone(),
    }))
}

/// Checks the chain with `inner`, then the leaf's names against `allowed`.
/// Hand-written because rustls' verifiers check chains only, and webpki
/// matches DNS names and IPs but not the subject CN that API server client
/// certificates typically carry.
#[derive(Debug)]
struct NameCheckingVerifier {
    inner: Arc<dyn ClientCertVerifier>,
    allowed: Vec<String>,
}

/// The subject CNs and the DNS, URI and e-mail SANs of a certificate.
pub fn certificate_names(cert: &CertificateDer<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = parsed
        .subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_owned))
        .collect();
    if let Ok(Some(san)) = parsed.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(n) | GeneralName::URI(n) | GeneralName::RFC822Name(n) => {
                    names.push((*n).to_owned())
                }
                _ => {}
            }
        }
    }
    names
}

impl ClientCertVerifier for NameCheckingVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: rustls::pki_types::UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let names = certificate_names(end_entity);
        if names.iter().any(|n| self.allowed.contains(n)) {
            Ok(verified)
        } else {
            // Counted and logged (rate-limited) by the listener; the names
            // are detail for debugging.
            tracing::debug!(
                ?names,
                "refused a client certificate: no name in --allowed-client-names"
            );
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    // Both signature checks only delegate: rustls' trait has no default for them.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The listener's rustls configuration: TLS 1.3 and 1.2 only, the
/// certificate from `resolver`, client certificates as `client_auth`
/// demands (none when `None`), and ALPN `h2` then `http/1.1` (the server
/// picks the client's most preferred protocol it knows, so the API server
/// gets HTTP/2 when it offers it).
pub fn server_config(
    resolver: Arc<CertResolver>,
    provider: Arc<CryptoProvider>,
    client_auth: Option<&ClientAuth>,
) -> Result<ServerConfig, TlsError> {
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(TlsError::Config)?;
    let mut config = match client_auth {
        None => builder.with_no_client_auth(),
        Some(auth) => builder.with_client_cert_verifier(client_verifier(auth, provider)?),
    }
    .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Refuses a certificate outside its validity period (clock skew of a
/// minute allowed): a reload must not replace a good certificate with one
/// every client will refuse.
pub fn check_validity(key: &CertifiedKey, path: &Path) -> Result<(), TlsError> {
    let Ok(leaf) = key.end_entity_cert() else {
        return Ok(());
    };
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(leaf.as_ref()) else {
        return Ok(());
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let validity = parsed.validity();
    let (from, to) = (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    );
    let skew = 60;
    let reason = if now + skew < from {
        format!("not valid before {}", validity.not_before)
    } else if now - skew > to {
        format!("expired at {}", validity.not_after)
    } else {
        return Ok(());
    };
    Err(TlsError::Validity {
        path: path.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests;
