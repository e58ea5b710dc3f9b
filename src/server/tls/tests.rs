//! The serving certificate loaded from PEM files or generated; refusals
//! that name the file (missing, without a certificate or key, broken PEM,
//! an unusable client CA) and of a key of another certificate; a
//! certificate's names and expiry; the resolver's replacement.

use super::*;
use std::io::Write;

fn provider() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}

fn file(contents: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("tempfile");
    f.write_all(contents).expect("write");
    f
}

fn files_source(cert: &tempfile::NamedTempFile, key: &tempfile::NamedTempFile) -> TlsSource {
    TlsSource::Files {
        cert: cert.path().to_owned(),
        key: key.path().to_owned(),
    }
}

#[test]
fn generates_a_self_signed_certificate() {
    let material = load(&TlsSource::SelfSigned, &provider()).expect("generated");
    assert!(material.self_signed);
    assert!(material.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(material.key.cert.len(), 1);
    assert!(material.key.keys_match().is_ok());
}

#[test]
fn loads_a_certificate_and_key_from_pem_files() {
    let generated =
        rcgen::generate_simple_self_signed(vec!["celhook.default.svc".to_owned()]).expect("rcgen");
    let cert = file(generated.cert.pem().as_bytes());
    let key = file(generated.signing_key.serialize_pem().as_bytes());
    let material = load(&files_source(&cert, &key), &provider()).expect("loaded");
    assert!(!material.self_signed);
    assert_eq!(material.cert_pem, generated.cert.pem());
}

#[test]
fn names_the_missing_file() {
    let source = TlsSource::Files {
        cert: PathBuf::from("/nonexistent/tls.crt"),
        key: PathBuf::from("/nonexistent/tls.key"),
    };
    let err = load(&source, &provider()).expect_err("missing file");
    let text = err.to_string();
    assert!(
        text.contains("--tls-cert") && text.contains("/nonexistent/tls.crt"),
        "{text}"
    );
}

#[test]
fn names_the_file_without_a_certificate_or_key() {
    let generated = rcgen::generate_simple_self_signed(vec!["x".to_owned()]).expect("rcgen");
    let cert = file(generated.cert.pem().as_bytes());
    let key = file(generated.signing_key.serialize_pem().as_bytes());
    let junk = file(b"not pem at all\n");

    let err = load(&files_source(&junk, &key), &provider()).expect_err("no cert");
    assert!(matches!(err, TlsError::NoCertificate { .. }), "{err}");
    assert!(err.to_string().contains(&junk.path().display().to_string()));

    let err = load(&files_source(&cert, &junk), &provider()).expect_err("no key");
    assert!(matches!(err, TlsError::NoKey { .. }), "{err}");
    assert!(err.to_string().contains("--tls-key"));

    // A key where the certificate should be is "no certificate", too.
    let err = load(&files_source(&key, &key), &provider()).expect_err("key as cert");
    assert!(matches!(err, TlsError::NoCertificate { .. }), "{err}");
}

#[test]
fn names_the_file_with_broken_pem() {
    let generated = rcgen::generate_simple_self_signed(vec!["x".to_owned()]).expect("rcgen");
    let key = file(generated.signing_key.serialize_pem().as_bytes());
    let broken = file(b"-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n");
    let err = load(&files_source(&broken, &key), &provider()).expect_err("broken");
    assert!(
        matches!(
            err,
            TlsError::Pem {
                flag: "--tls-cert",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn refuses_a_key_of_another_certificate() {
    let one = rcgen::generate_simple_self_signed(vec!["one".to_owned()]).expect("rcgen");
    let two = rcgen::generate_simple_self_signed(vec!["two".to_owned()]).expect("rcgen");
    let cert = file(one.cert.pem().as_bytes());
    let key = file(two.signing_key.serialize_pem().as_bytes());
    let err = load(&files_source(&cert, &key), &provider()).expect_err("mismatch");
    assert!(matches!(err, TlsError::Mismatch { .. }), "{err}");
}

#[test]
fn reads_the_expiry_and_names_of_a_certificate() {
    let ca = crate::certs::Ca::new("test CA", 1).expect("ca");
    let pair = ca
        .client("kube-apiserver", &["apiserver.example".to_owned()], 30)
        .expect("client");
    let der = CertificateDer::from_pem_slice(pair.cert_pem.as_bytes()).expect("pem");
    let expiry = not_after(&der).expect("expiry");
    let in_30_days = std::time::SystemTime::now() + std::time::Duration::from_secs(30 * 86_400);
    let off = in_30_days
        .duration_since(expiry)
        .unwrap_or_else(|e| e.duration());
    assert!(off < std::time::Duration::from_secs(120), "{off:?}");
    assert_eq!(
        certificate_names(&der),
        vec!["kube-apiserver".to_owned(), "apiserver.example".to_owned()]
    );
    assert_eq!(not_after(&CertificateDer::from(vec![1, 2, 3])), None);
}

#[test]
fn an_unusable_client_ca_names_the_file() {
    let provider = Arc::new(provider());
    for contents in [&b"no pem here"[..], b""] {
        let f = file(contents);
        let auth = ClientAuth {
            ca: f.path().to_owned(),
            allowed_names: vec![],
        };
        let err = client_verifier(&auth, provider.clone()).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("--client-ca"), "{text}");
        assert!(text.contains(&f.path().display().to_string()), "{text}");
    }
    let missing = ClientAuth {
        ca: PathBuf::from("/nonexistent/ca.crt"),
        allowed_names: vec![],
    };
    let err = client_verifier(&missing, provider).expect_err("refused");
    assert!(err.to_string().contains("/nonexistent/ca.crt"), "{err}");
}

#[test]
fn the_resolver_serves_the_replacement() {
    let provider = provider();
    let first = load(&TlsSource::SelfSigned, &provider).expect("first");
    let second = load(&TlsSource::SelfSigned, &provider).expect("second");
    let resolver = CertResolver::new(first.key.clone());
    assert!(Arc::ptr_eq(&resolver.current.load_full(), &first.key));
    resolver.replace(second.key.clone());
    assert!(Arc::ptr_eq(&resolver.current.load_full(), &second.key));
}
