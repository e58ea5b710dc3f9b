//! The HTTPS listener end to end: health endpoints, TLS versions, ALPN
//! (HTTP/2 and HTTP/1.1), certificates from PEM files, and stopping.

use crate::common;

use std::io::Write;
use std::sync::Arc;

use celhook::config::Catalog;
use celhook::server::{ServeConfig, TlsSource};
use common::{client, client_builder, start, start_with, url, Http, BOTH};
use reqwest::StatusCode;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::ServerName;
use rustls::ProtocolVersion;

#[tokio::test]
async fn healthz_is_ok_over_both_http_versions() {
    let server = start().await;
    for http in BOTH {
        let resp = client(&server, http)
            .get(url(&server, "/healthz"))
            .send()
            .await
            .expect("GET /healthz");
        assert_eq!(resp.version(), http.version());
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.text().await.expect("body"), "ok\n");
    }
}

#[tokio::test]
async fn readyz_follows_the_readiness_of_the_server() {
    let server = start().await;
    let client = client(&server, Http::H2);
    let get = || client.get(url(&server, "/readyz")).send();

    let resp = get().await.expect("GET /readyz");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.expect("body"), "ok\n");

    // What a stop (or, later, a failed reload) does first.
    server.state().set_ready(false);
    let resp = get().await.expect("GET /readyz");
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);

    server.state().set_ready(true);
    assert_eq!(get().await.expect("GET /readyz").status(), StatusCode::OK);
}

/// Opens a raw TLS connection offering `versions` and `alpn`; returns the
/// negotiated protocol version and ALPN protocol.
async fn handshake(
    server: &celhook::server::RunningServer,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
    server_name: &'static str,
) -> Result<(ProtocolVersion, Option<Vec<u8>>), std::io::Error> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(server.cert_pem().as_bytes()) {
        roots.add(cert.expect("PEM")).expect("root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();

    let tcp = tokio::net::TcpStream::connect(server.local_addr()).await?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from(server_name).expect("server name");
    let tls = connector.connect(name, tcp).await?;
    let (_, conn) = tls.get_ref();
    Ok((
        conn.protocol_version().expect("negotiated"),
        conn.alpn_protocol().map(<[u8]>::to_vec),
    ))
}

#[tokio::test]
async fn tls_1_2_and_1_3_both_work_and_alpn_prefers_h2() {
    let server = start().await;
    for (versions, expected) in [
        (&[&rustls::version::TLS12][..], ProtocolVersion::TLSv1_2),
        (&[&rustls::version::TLS13][..], ProtocolVersion::TLSv1_3),
    ] {
        let (version, alpn) = handshake(&server, versions, &[b"h2", b"http/1.1"], "localhost")
            .await
            .expect("handshake");
        assert_eq!(version, expected);
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));

        let (_, alpn) = handshake(&server, versions, &[b"http/1.1"], "127.0.0.1")
            .await
            .expect("handshake");
        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    }

    // Both versions offered: the newest wins.
    let (version, _) = handshake(&server, rustls::ALL_VERSIONS, &[], "localhost")
        .await
        .expect("handshake");
    assert_eq!(version, ProtocolVersion::TLSv1_3);
}

#[tokio::test]
async fn https_requests_work_with_tls_1_2_and_tls_1_3() {
    let server = start().await;
    for (min, max) in [
        (
            reqwest::tls::Version::TLS_1_2,
            reqwest::tls::Version::TLS_1_2,
        ),
        (
            reqwest::tls::Version::TLS_1_3,
            reqwest::tls::Version::TLS_1_3,
        ),
    ] {
        for http in BOTH {
            let builder = client_builder(&server)
                .tls_version_min(min)
                .tls_version_max(max);
            let builder = if http == Http::H1 {
                builder.http1_only()
            } else {
                builder
            };
            let resp = builder
                .build()
                .expect("client")
                .get(url(&server, "/healthz"))
                .send()
                .await
                .unwrap_or_else(|err| panic!("{min:?} {http:?}: {err:?}"));
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(resp.version(), http.version());
        }
    }
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused() {
    let server = start().await;
    // Trusts another generated certificate, not the server's.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("rcgen");
    common::install_crypto();
    let client = reqwest::Client::builder()
        .tls_certs_only(reqwest::Certificate::from_pem(other.cert.pem().as_bytes()))
        .build()
        .expect("client");
    let err = client
        .get(url(&server, "/healthz"))
        .send()
        .await
        .expect_err("untrusted certificate");
    assert!(err.is_connect(), "{err:?}");
}

#[tokio::test]
async fn serves_the_certificate_from_pem_files_for_the_service_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let service = "celhook.celhook-system.svc";
    let generated = rcgen::generate_simple_self_signed(vec![service.to_owned()]).expect("rcgen");
    let cert_path = dir.path().join("tls.crt");
    let key_path = dir.path().join("tls.key");
    std::fs::File::create(&cert_path)
        .and_then(|mut f| f.write_all(generated.cert.pem().as_bytes()))
        .expect("write cert");
    std::fs::File::create(&key_path)
        .and_then(|mut f| f.write_all(generated.signing_key.serialize_pem().as_bytes()))
        .expect("write key");

    let config = ServeConfig {
        tls: TlsSource::Files {
            cert: cert_path,
            key: key_path,
        },
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, Catalog::default()).await;
    assert_eq!(server.cert_pem(), generated.cert.pem());

    // The API server connects by the Service's DNS name.
    let client = client_builder(&server)
        .resolve(service, server.local_addr())
        .build()
        .expect("client");
    let resp = client
        .get(format!(
            "https://{service}:{}/healthz",
            server.local_addr().port()
        ))
        .send()
        .await
        .expect("GET /healthz by service name");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
}

#[tokio::test]
async fn refuses_to_start_on_unreadable_certificate_files() {
    common::install_crypto();
    let config = ServeConfig {
        tls: TlsSource::Files {
            cert: "/nonexistent/celhook/tls.crt".into(),
            key: "/nonexistent/celhook/tls.key".into(),
        },
        ..ServeConfig::for_tests()
    };
    let err = celhook::server::spawn(config, Catalog::default())
        .await
        .expect_err("no certificate");
    assert!(
        err.downcast_ref::<celhook::server::TlsError>().is_some(),
        "{err:#}"
    );
    assert!(
        format!("{err:#}").contains("/nonexistent/celhook/tls.crt"),
        "{err:#}"
    );
}

#[tokio::test]
async fn a_busy_port_is_a_clear_error() {
    let first = start().await;
    let config = ServeConfig {
        listen: first.local_addr(),
        ..ServeConfig::for_tests()
    };
    let err = celhook::server::spawn(config, Catalog::default())
        .await
        .expect_err("port in use");
    let text = format!("{err:#}");
    assert!(text.contains(&first.local_addr().to_string()), "{text}");
}

#[tokio::test]
async fn stop_closes_the_listener() {
    let server = start().await;
    let addr = server.local_addr();
    let client = client(&server, Http::H1);
    let resp = client
        .get(url(&server, "/healthz"))
        .send()
        .await
        .expect("GET /healthz");
    assert_eq!(resp.status(), StatusCode::OK);
    drop(resp);

    server.stop().await.expect("stops cleanly");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting on {addr}"
    );
}

#[tokio::test]
async fn timeouts_past_what_an_instant_holds_are_answered_not_panicked_on() {
    // `--client-hello-timeout`, `--header-timeout` and `--body-idle-timeout`
    // of 3000000000000000h each made every connection or request panic; a
    // `--request-timeout` that long failed every conversion at once, and a
    // `--keep-alive` of 18446744073709552s wrapped to 384 ms.
    let far = std::time::Duration::from_secs(3_000_000_000_000_000 * 3600);
    let wraps = std::time::Duration::from_secs(18_446_744_073_709_552);
    let config = ServeConfig {
        client_hello_timeout: far,
        header_timeout: far,
        body_idle_timeout: far,
        request_timeout: far,
        keep_alive: wraps,
        write_timeout: wraps,
        ..ServeConfig::for_tests()
    };
    let server = start_with(config, common::embedded_catalog()).await;
    let validate = common::validate_url(&server);
    let convert = url(&server, "/convert");
    let crontabs = crate::convert::docs_crontabs();
    let review =
        crate::convert::review(crate::convert::REVIEW_V1, "far", "example.com/v1", crontabs);
    let clients: Vec<_> = BOTH
        .into_iter()
        .map(|http| (http, client(&server, http)))
        .collect();
    for (http, client) in &clients {
        let answer = common::post_raw(client, &validate, common::crontab_review(3)).await;
        assert_eq!(answer.response()["allowed"], true, "{http:?}");
        let converted = crate::convert::convert_ok(client, &convert, &review).await;
        assert_eq!(converted.len(), 2, "{http:?}");
    }
    // Past the 384 ms the wrapped keep-alive gave, the connections are
    // still open.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let text = common::rendered_metrics(&server);
    let idle = common::metric(
        &text,
        "celhook_connections_closed_total",
        &[("reason", "idle")],
    );
    assert_eq!(idle, Some(0.0), "connections closed as idle");
    server.stop().await.expect("stops");
}
