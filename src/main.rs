//! The `celhook` binary: start-up only. Exit codes: 0 success, 1 `check`
//! found problems or the server failed at run time, 64 (EX_USAGE) for a bad
//! command line or a config `serve` refuses to start with; `test` exits 1
//! when a case fails and 2 when a test file or config does not load.

use std::process::ExitCode;

use celhook::cli::{self, CheckArgs, Command, ConvertArgs, EvalArgs, OutputFormat, TestArgs};
use celhook::config;
use celhook::eval;
use celhook::server::{self, ServeConfig, TlsError};
use celhook::telemetry::{self, LogFormat};

/// mimalloc: the parsed JSON of every review is many small allocations.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXIT_FAILURE: u8 = 1;
const EXIT_USAGE: u8 = 64;

fn main() -> ExitCode {
    // First, before anything can build a TLS config: one process-wide
    // provider. An Err only means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let command = match cli::parse() {
        Ok(command) => command,
        Err(err) => {
            let _ = err.print();
            // --help and --version are not errors.
            return if err.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };

    // Log lines go to stderr as text, but for `serve` in the format asked
    // for; `eval` and `storage-migration` write only their own output.
    match &command {
        Command::Serve { log_format, .. } => telemetry::init(*log_format),
        Command::Eval(_) | Command::StorageMigration { .. } => {}
        _ => telemetry::init(LogFormat::Text),
    }
    match command {
        Command::Check(args) => check(&args),
        Command::Certs(args) => match celhook::certs::generate(&args) {
            Ok(bundle) => {
                eprintln!(
                    "wrote ca.crt, ca.key, tls.crt and tls.key to {} for {}; caBundle:",
                    args.out_dir.display(),
                    celhook::certs::service_names(&args.service, &args.namespace).join(", ")
                );
                println!("{bundle}");
                ExitCode::SUCCESS
            }
            Err(err) => {
                tracing::error!(error = format!("{err:#}"), "cannot write the certificates");
                ExitCode::from(EXIT_FAILURE)
            }
        },
        Command::Convert(args) => convert(&args),
        Command::RoundTrip {
            source,
            files,
            strict,
            kubernetes,
        } => round_trip(&source, &files, strict, kubernetes),
        Command::Serve { config, .. } => serve(config),
        Command::Eval(args) => eval(&args),
        Command::Test(args) => test(&args),
        Command::WebhookConfig {
            source,
            options,
            ca_bundle,
        } => webhook_config(&source, options, ca_bundle.as_deref()),
        Command::StorageMigration {
            source,
            crds,
            api_version,
        } => storage_migration(&source, &crds, api_version),
    }
}

/// `celhook storage-migration`: the YAML on stdout, notes on stderr; exit
/// 1 on a config that cannot be read or a CRD that cannot be migrated, 64
/// on a `--crd` the config does not have.
fn storage_migration(
    source: &config::ConfigSource,
    crds: &[String],
    api_version: celhook::migration::SvmApiVersion,
) -> ExitCode {
    use celhook::migration;
    match migration::read_documents(source)
        .and_then(|docs| migration::render(&docs, crds, api_version))
    {
        Ok(migrations) => {
            for note in &migrations.notes {
                eprintln!("note: {note}");
            }
            out(&migrations.yaml);
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("celhook storage-migration: {err}");
            ExitCode::from(if err.is_usage() {
                EXIT_USAGE
            } else {
                EXIT_FAILURE
            })
        }
    }
}

/// `celhook eval`: exit 0 when allowed (every object, or the expression
/// evaluated), 1 when denied (any object, or the expression failed at run
/// time), 64 when it could not run.
fn eval(args: &EvalArgs) -> ExitCode {
    let outcome = match args {
        EvalArgs::Object {
            crd,
            version,
            object,
            old,
            output,
            kubernetes,
        } => eval::answer_objects(
            crd,
            version.as_deref(),
            object,
            old.as_deref(),
            *output,
            *kubernetes,
        )
        .map(|(text, allowed)| {
            out(&text);
            allowed
        }),
        EvalArgs::Expr {
            expr,
            this,
            old,
            kubernetes,
        } => (|| {
            let this = this.as_deref().map(eval::read_document).transpose()?;
            let old = old.as_deref().map(eval::read_document).transpose()?;
            match eval::eval_expr(expr, this.as_ref(), old.as_ref(), *kubernetes)? {
                Ok(v) => {
                    out(&format!("{v}\n"));
                    Ok(true)
                }
                Err(e) => {
                    out(&format!("error: {e}\n"));
                    Ok(false)
                }
            }
        })(),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILURE),
        Err(err) => {
            let err: eval::CommandError = err;
            eprintln!("celhook eval: {err}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// `celhook test`: the results on stdout; what did not load also on
/// stderr when the results are JSON or JUnit (the text has `ERROR` lines).
fn test(args: &TestArgs) -> ExitCode {
    use celhook::cli::TestOutput;
    use celhook::testing::{self, ReportFormat};
    let format = match args.output {
        TestOutput::Text => ReportFormat::Text,
        TestOutput::Json => ReportFormat::Json,
        TestOutput::Junit => ReportFormat::Junit,
    };
    let run = testing::run(&args.paths, args.config.as_deref(), args.kubernetes);
    if format != ReportFormat::Text {
        for problem in &run.problems {
            eprintln!("celhook test: {problem}");
        }
    }
    out(&run.render(format));
    ExitCode::from(run.exit_code())
}

/// A config compiled as the API server of `kubernetes` runs stored
/// expressions.
fn stored(kubernetes: celhook::kube_version::KubeVersion) -> config::Options {
    config::Options {
        kubernetes,
        written: false,
    }
}

fn check(args: &CheckArgs) -> ExitCode {
    // `check` judges the config as the API server judges it when written.
    let options = config::Options {
        kubernetes: args.kubernetes,
        written: true,
    };
    let loaded = config::load_as(&args.source, options);
    let rendered = match args.output {
        OutputFormat::Text => Ok(config::report::render_text(&loaded.report)),
        OutputFormat::Json => config::report::render_json(&loaded.report),
    };
    match rendered {
        Ok(text) => out(&text),
        Err(err) => {
            tracing::error!(error = %err, "cannot render the report");
            return ExitCode::from(EXIT_FAILURE);
        }
    }
    if loaded.report.fails(args.strict) {
        ExitCode::from(EXIT_FAILURE)
    } else {
        ExitCode::SUCCESS
    }
}

/// `celhook convert`: prints every document that converted (or passed
/// through), and each failure on stderr; exit 1 when anything failed.
fn convert(args: &ConvertArgs) -> ExitCode {
    let loaded = config::load_as(&args.source, stored(args.kubernetes));
    if loaded.report.has_errors() {
        for problem in config::report::problems(&loaded.report) {
            eprintln!("{}", config::report::format_problem(&problem));
        }
        eprintln!("refusing to convert: the config has problems");
        return ExitCode::from(EXIT_USAGE);
    }
    if let Err(message) = check_desired(&loaded.catalog, &args.to) {
        eprintln!("{message}");
        return ExitCode::from(EXIT_USAGE);
    }
    use celhook::conversion::files::{convert_stdin, convert_text, Converted};
    let mut output = String::new();
    let mut failures = 0;
    for file in &args.files {
        let name = file.display().to_string();
        let converted = if name == "-" {
            // `-`: the manifests come on standard input.
            let mut text = String::new();
            match std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
                Ok(_) => convert_stdin(&loaded.catalog, &args.to, args.other_kinds, &text),
                Err(e) => Converted {
                    errors: vec![format!("<stdin>: cannot read: {e}")],
                    ..Converted::default()
                },
            }
        } else {
            match std::fs::read_to_string(file) {
                Ok(text) => convert_text(&loaded.catalog, &args.to, args.other_kinds, &name, &text),
                Err(e) => Converted {
                    errors: vec![format!("{name}: cannot read: {e}")],
                    ..Converted::default()
                },
            }
        };
        for err in &converted.errors {
            eprintln!("{err}");
        }
        failures += converted.errors.len();
        if converted.text.is_empty() {
            continue;
        }
        if !output.is_empty() && !converted.text.trim_start().starts_with('{') {
            output.push_str("---\n");
        }
        output.push_str(&converted.text);
    }
    if failures > 0 {
        // A partial set piped into `kubectl apply` would apply some
        // objects and not others: only on request.
        if args.partial {
            out(&output);
            eprintln!(
                "celhook convert: {failures} document(s) or file(s) failed (above) and are left out of the output"
            );
        } else {
            eprintln!(
                "celhook convert: {failures} document(s) or file(s) failed (above); nothing printed (--partial prints the others)"
            );
        }
        ExitCode::from(EXIT_FAILURE)
    } else {
        out(&output);
        ExitCode::SUCCESS
    }
}

/// `--to` must be `group/version`; without the version, the message lists
/// the versions the config serves in that group.
fn check_desired(catalog: &config::Catalog, to: &str) -> Result<(), String> {
    if matches!(to.split_once('/'), Some((group, version)) if !group.is_empty() && !version.is_empty())
    {
        return Ok(());
    }
    let group = to.trim_end_matches('/');
    let mut versions: Vec<&str> = catalog
        .versions()
        .filter(|v| v.group == group)
        .map(|v| v.version.as_str())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    let served = if versions.is_empty() {
        String::new()
    } else {
        format!(
            "; the config serves {}",
            versions
                .iter()
                .map(|v| format!("{group}/{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(format!(
        "--to {to:?}: expected group/version (e.g. example.com/v1){served}"
    ))
}

fn serve(config: ServeConfig) -> ExitCode {
    let loaded = config::load_as(&config.config_source, stored(config.kubernetes));
    if loaded.report.has_errors() {
        for problem in config::report::problems(&loaded.report) {
            tracing::error!(problem = %config::report::format_problem(&problem), "config problem");
        }
        tracing::error!(
            "refusing to start: the config has problems (run `celhook check --config <dir>` for the full report)"
        );
        return ExitCode::from(EXIT_USAGE);
    }
    // Skipped files and documents, and conversion fields kept only in
    // the stash: served all the same (errors only for `check --strict`).
    for warning in &loaded.report.warnings {
        tracing::warn!(warning = %config::report::format_problem(warning), "config warning");
    }
    tracing::info!(
        source = ?config.config_source,
        crds = loaded.report.crds.len(),
        versions = loaded.catalog.len(),
        conversions = loaded.catalog.conversion_count(),
        "config loaded"
    );

    // The server runs on a runtime of its own; this one only waits for
    // signals and drives the stop.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            tracing::error!(error = %err, "cannot start the async runtime");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let result = runtime.block_on(async move {
        // Before the listener opens: a signal sent as soon as the process
        // logs "listening" must find its handler, not the default action.
        let signals = server::Signals::install()?;
        let running = server::spawn(config, loaded.catalog).await?;
        running.run_until_signal(signals).await
    });
    match result {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(err) => {
            tracing::error!(error = format!("{err:#}"), "server failed");
            // Unusable certificate files are a configuration error.
            if err.downcast_ref::<TlsError>().is_some() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::from(EXIT_FAILURE)
            }
        }
    }
}

/// Writes to stdout, ignoring a closed pipe (`celhook check | head`) rather
/// than panicking as `print!` does.
fn out(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// `celhook webhook-config`: the YAML on stdout; exit 1 on a config that
/// does not load, 64 on an unusable `--ca-bundle`.
fn webhook_config(
    source: &celhook::config::ConfigSource,
    mut options: celhook::webhook_config::WebhookOptions,
    ca_bundle: Option<&std::path::Path>,
) -> ExitCode {
    if let Some(path) = ca_bundle {
        match std::fs::read_to_string(path) {
            Ok(pem) if pem.contains("-----BEGIN CERTIFICATE-----") => options.ca_bundle = Some(pem),
            Ok(_) => {
                eprintln!(
                    "{}: --ca-bundle: no PEM certificate in the file",
                    path.display()
                );
                return ExitCode::from(EXIT_USAGE);
            }
            Err(e) => {
                eprintln!("{}: --ca-bundle: {e}", path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    match celhook::webhook_config::render(source, &options) {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(reason) => {
            eprintln!("celhook webhook-config: {reason}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// `celhook convert --round-trip`: findings on stdout, one per line, then
/// the summary; exit 1 on a difference or an error (and with `strict`, on
/// an unacknowledged stash-only value), 64 on a config with problems.
fn round_trip(
    source: &config::ConfigSource,
    files: &[std::path::PathBuf],
    strict: bool,
    kubernetes: celhook::kube_version::KubeVersion,
) -> ExitCode {
    let loaded = config::load_as(source, stored(kubernetes));
    if loaded.report.has_errors() {
        for problem in config::report::problems(&loaded.report) {
            eprintln!("{}", config::report::format_problem(&problem));
        }
        eprintln!("refusing to round-trip: the config has problems");
        return ExitCode::from(EXIT_USAGE);
    }
    let mut found = celhook::conversion::round_trip::RoundTrips::default();
    for path in files {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            match std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
                Ok(_) => found.check_text(&loaded.catalog, "<stdin>", &text),
                Err(e) => {
                    found.errors += 1;
                    found.lines.push(format!("<stdin>: cannot read: {e}"));
                }
            }
            continue;
        }
        // A directory stands for its manifest files, as a config does.
        let paths = match config::files::config_files(path) {
            Ok(paths) => paths,
            Err(e) => {
                found.errors += 1;
                found
                    .lines
                    .push(format!("{}: cannot read: {e}", path.display()));
                continue;
            }
        };
        for file in paths {
            let name = file.display().to_string();
            if config::files::is_kustomization(&name) {
                continue;
            }
            match std::fs::read_to_string(&file) {
                Ok(text) => found.check_text(&loaded.catalog, &name, &text),
                Err(e) => {
                    found.errors += 1;
                    found.lines.push(format!("{name}: cannot read: {e}"));
                }
            }
        }
    }
    let mut report = found.lines.join("\n");
    if !report.is_empty() {
        report.push('\n');
    }
    report.push_str(&found.summary());
    report.push('\n');
    out(&report);
    if found.fails(strict) {
        ExitCode::from(EXIT_FAILURE)
    } else {
        ExitCode::SUCCESS
    }
}
