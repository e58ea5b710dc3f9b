//! Development certificates (`celhook certs`): a CA and, signed by it, a
//! serving certificate for the celhook Service (`<service>.<namespace>.svc`
//! and `.svc.cluster.local`) or a client certificate.
//!
//! In the binary rather than a shell script around openssl: rcgen is already
//! a dependency, so the same command works on any machine and inside the
//! image without openssl or its config-file quirks for SANs, and the tests
//! make their CAs and client certificates with the same code.

use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// `celhook certs` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertsArgs {
    /// Where ca.crt, ca.key, tls.crt and tls.key are written.
    pub out_dir: PathBuf,
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub service: String,
    /// Validity in days.
    pub days: u32,
    /// More SANs for the serving certificate (DNS names or IP addresses).
    pub extra_names: Vec<String>,
    /// Add `localhost` and `127.0.0.1`, for a local run or a port-forward.
    pub local_names: bool,
}

/// A certificate and its key, as PEM.
#[derive(Clone)]
pub struct Pair {
    /// The certificate.
    pub cert_pem: String,
    /// The private key (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("Pair").finish_non_exhaustive()
    }
}

/// A CA able to sign certificates.
pub struct Ca {
    /// The CA certificate and key.
    pub pair: Pair,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

fn validity(params: &mut CertificateParams, days: u32) {
    let now = time::OffsetDateTime::now_utc();
    // An hour of slack for clocks slightly behind ours.
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(i64::from(days));
}

impl Ca {
    /// A new self-signed CA named `common_name`, valid for `days`.
    pub fn new(common_name: &str, days: u32) -> Result<Ca, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        validity(&mut params, days);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        let pair = Pair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        };
        Ok(Ca {
            pair,
            issuer: Issuer::new(params, key),
        })
    }

    /// A serving certificate for `names` (DNS names or IP addresses).
    pub fn serving(&self, names: &[String], days: u32) -> Result<Pair, rcgen::Error> {
        self.leaf(
            names.first().map_or("celhook", String::as_str),
            names,
            ExtendedKeyUsagePurpose::ServerAuth,
            days,
        )
    }

    /// A client certificate with subject CN `common_name` and the given SANs.
    pub fn client(
        &self,
        common_name: &str,
        sans: &[String],
        days: u32,
    ) -> Result<Pair, rcgen::Error> {
        self.leaf(common_name, sans, ExtendedKeyUsagePurpose::ClientAuth, days)
    }

    fn leaf(
        &self,
        common_name: &str,
        sans: &[String],
        usage: ExtendedKeyUsagePurpose,
        days: u32,
    ) -> Result<Pair, rcgen::Error> {
        let mut params = CertificateParams::new(sans.to_vec())?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params, days);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Pair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The names the API server may use for the Service.
pub fn service_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// Writes the CA and a serving certificate for the Service into
/// `args.out_dir` (keys with mode 0600) and returns the caBundle: the CA
/// certificate PEM, base64-encoded, as webhook configurations take it.
pub fn generate(args: &CertsArgs) -> anyhow::Result<String> {
    let ca = Ca::new("celhook development CA", args.days).context("generating the CA")?;
    let mut names = service_names(&args.service, &args.namespace);
    if args.local_names {
        names.extend(["localhost".to_owned(), "127.0.0.1".to_owned()]);
    }
    for name in &args.extra_names {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    let serving = ca
        .serving(&names, args.days)
        .context("generating the serving certificate")?;
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("creating {}", args.out_dir.display()))?;
    write(&args.out_dir.join("ca.crt"), &ca.pair.cert_pem, false)?;
    write(&args.out_dir.join("ca.key"), &ca.pair.key_pem, true)?;
    write(&args.out_dir.join("tls.crt"), &serving.cert_pem, false)?;
    write(&args.out_dir.join("tls.key"), &serving.key_pem, true)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(ca.pair.cert_pem.as_bytes()))
}

fn write(path: &Path, contents: &str, secret: bool) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting {}", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = secret;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    /// `celhook certs` for the Service `celhook.webhooks` into `dir`.
    fn args(dir: &Path, extra_names: Vec<String>, local_names: bool) -> CertsArgs {
        CertsArgs {
            out_dir: dir.to_owned(),
            namespace: "webhooks".into(),
            service: "celhook".into(),
            days: 30,
            extra_names,
            local_names,
        }
    }

    /// The names on the serving certificate written into `dir`.
    fn serving_names(dir: &Path) -> (CertificateDer<'static>, Vec<String>) {
        let tls = std::fs::read(dir.join("tls.crt")).expect("tls.crt");
        let leaf = CertificateDer::from_pem_slice(&tls).expect("pem");
        let names = crate::server::tls::certificate_names(&leaf);
        (leaf, names)
    }

    #[test]
    fn writes_a_ca_and_a_serving_certificate_for_the_service() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bundle =
            generate(&args(dir.path(), vec!["webhook.example".into()], true)).expect("generated");
        let ca_pem = std::fs::read_to_string(dir.path().join("ca.crt")).expect("ca.crt");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(bundle)
            .expect("base64");
        assert_eq!(decoded, ca_pem.as_bytes());

        let (leaf, names) = serving_names(dir.path());
        assert!(
            names.contains(&"celhook.webhooks.svc".to_owned()),
            "{names:?}"
        );
        assert!(names.contains(&"celhook.webhooks.svc.cluster.local".to_owned()));

        // The leaf chains to the CA, for the names the API server uses.
        let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("ca pem");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca).expect("root");
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .expect("verifier");
        use rustls::client::danger::ServerCertVerifier;
        // The Service's name, the local names (a DNS name and an IP) that
        // come by default, and an extra name.
        for host in [
            "celhook.webhooks.svc",
            "localhost",
            "127.0.0.1",
            "webhook.example",
        ] {
            let name = rustls::pki_types::ServerName::try_from(host).expect("name");
            verifier
                .verify_server_cert(&leaf, &[], &name, &[], rustls::pki_types::UnixTime::now())
                .unwrap_or_else(|e| panic!("the serving certificate verifies for {host}: {e}"));
        }

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("tls.key"))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn local_names_can_be_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        generate(&args(dir.path(), Vec::new(), false)).expect("generated");
        let (_, names) = serving_names(dir.path());
        assert!(
            names.contains(&"celhook.webhooks.svc".to_owned()),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n == "localhost" || n == "127.0.0.1"),
            "{names:?}"
        );
    }
}
