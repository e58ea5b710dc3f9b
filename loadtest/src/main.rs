//! celhook-loadtest: sends AdmissionReviews or ConversionReviews to a webhook
//! over HTTPS (HTTP/1.1 keep-alive as the API server does, or `--http 2`)
//! and reports throughput, latency percentiles and every answer that was
//! wrong; `--html FILE` also draws them on a page.
//!
//! ```text
//! celhook-loadtest --insecure -d 10s admission                      # built-in CronTab CREATE
//! celhook-loadtest --insecure -c 32 -d 10s --html report.html admission
//! celhook-loadtest --ca-file ca.pem --rate 2000 -d 30s admission --crd crd.yaml --object obj.yaml --operation update
//! celhook-loadtest --url https://hook:8443/convert --insecure --http 2 conversion --object v1.yaml --object v2.yaml --to g/v3 --batch 1000
//! ```
//!
//! Exits 1 when any request failed (transport error, non-200, wrong uid,
//! unexpected verdict, bad conversion) or the HTML page could not be
//! written, 2 on a usage error.

use std::process::ExitCode;

use celhook_loadtest::args::{Args, Format};
use clap::Parser;

fn main() -> ExitCode {
    let args = Args::parse();
    // reqwest is built without a default crypto provider; use the same one as celhook.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = args.load.threads {
        builder.worker_threads(usize::from(threads));
    }
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(celhook_loadtest::run::run(&args)) {
        Ok(report) => {
            match args.load.format {
                Format::Text => print!("{}", report.text()),
                Format::Json => match serde_json::to_string_pretty(&report) {
                    Ok(json) => println!("{json}"),
                    Err(err) => {
                        eprintln!("error: encoding the report: {err}");
                        return ExitCode::FAILURE;
                    }
                },
            }
            if let Some(path) = &args.load.html {
                let written = celhook_loadtest::html::render(&report)
                    .and_then(|page| Ok(std::fs::write(path, page)?));
                if let Err(err) = written {
                    eprintln!("error: writing --html {}: {err:#}", path.display());
                    return ExitCode::FAILURE;
                }
            }
            if report.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
