//! What the command line asks for, as the rest of the crate sees it:
//! plain settings with no clap parsing in them (`TestOutput` alone derives
//! clap's `ValueEnum`, so that `--output`'s help is its doc).

use std::path::PathBuf;

use clap::ValueEnum;

use crate::config::ConfigSource;
use crate::kube_version::KubeVersion;
use crate::server::ServeConfig;
use crate::telemetry::LogFormat;

/// What the user asked for.
// Built once at start-up: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Command {
    /// Run the webhook.
    Serve {
        /// Server settings.
        config: ServeConfig,
        /// Log line format.
        log_format: LogFormat,
    },
    /// Load and compile a config directory, print every problem.
    Check(CheckArgs),
    /// Convert manifest files offline.
    Convert(ConvertArgs),
    /// Round-trip the objects of manifest files through every version.
    RoundTrip {
        /// Where the CRDs and conversion documents come from.
        source: ConfigSource,
        /// Files and directories (`-`: standard input).
        files: Vec<PathBuf>,
        /// Fail on unacknowledged stash-only values too.
        strict: bool,
        kubernetes: KubeVersion,
    },
    /// Evaluate offline: an object against a CRD, or one expression.
    Eval(EvalArgs),
    /// Run the cases of `ValidationTest` files against their config.
    Test(TestArgs),
    /// Write a development CA and serving certificate, print the caBundle.
    Certs(crate::certs::CertsArgs),
    /// Print the webhook configuration (and conversion CRDs) for a config.
    WebhookConfig {
        /// The config whose CRDs are routed to celhook.
        source: ConfigSource,
        /// Service, failure policy and timeout.
        options: crate::webhook_config::WebhookOptions,
        /// A PEM file whose text becomes the caBundle.
        ca_bundle: Option<PathBuf>,
    },
    /// Print the StorageVersionMigrations of a config's multi-version CRDs.
    StorageMigration {
        /// The config whose CRDs are migrated.
        source: ConfigSource,
        /// The CRDs to migrate, by name (empty: every one).
        crds: Vec<String>,
        /// apiVersion of the StorageVersionMigration objects.
        api_version: crate::migration::SvmApiVersion,
    },
}

/// `celhook eval` settings.
#[derive(Debug, Clone)]
pub enum EvalArgs {
    /// What the webhook answers for each object of a file (UPDATE when
    /// `old` is given).
    Object {
        crd: PathBuf,
        version: Option<String>,
        /// Files, directories and `-` (standard input).
        object: Vec<PathBuf>,
        old: Option<PathBuf>,
        output: OutputFormat,
        kubernetes: KubeVersion,
    },
    /// The value of one expression, `self` bound to a JSON or YAML value
    /// and, when `old` is given, `oldSelf` to another.
    Expr {
        expr: String,
        this: Option<PathBuf>,
        old: Option<PathBuf>,
        kubernetes: KubeVersion,
    },
}

/// `celhook convert` settings.
#[derive(Debug, Clone)]
pub struct ConvertArgs {
    /// Where the CRDs and conversion documents come from.
    pub source: ConfigSource,
    /// The desired `group/version`.
    pub to: String,
    /// Manifest files (YAML or JSON).
    pub files: Vec<PathBuf>,
    /// Objects of kinds no CRD of the config serves: passed through or refused.
    pub other_kinds: crate::conversion::files::OtherKinds,
    /// Print the documents that converted even when others failed.
    pub partial: bool,
    pub kubernetes: KubeVersion,
}

/// `celhook check` settings.
#[derive(Debug, Clone)]
pub struct CheckArgs {
    /// The file or directory to check.
    pub source: ConfigSource,
    /// How to print the report.
    pub output: OutputFormat,
    /// Skipped files and documents fail the check too.
    pub strict: bool,
    pub kubernetes: KubeVersion,
}

/// `celhook test` settings.
#[derive(Debug, Clone)]
pub struct TestArgs {
    /// The config of every test, instead of each test's `spec.config`.
    pub config: Option<PathBuf>,
    /// Test files and directories.
    pub paths: Vec<PathBuf>,
    /// How to print the results.
    pub output: TestOutput,
    pub kubernetes: KubeVersion,
}

/// How `check` prints its report or `eval` its answers: for people or
/// for tools (each command's own `--output` help says what it prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Lines of text.
    Text,
    /// JSON.
    Json,
}

/// `test --output`: the help of each value describes the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestOutput {
    /// `ERROR` lines for what did not load, one `PASS|FAIL FILE: TEST/CASE` line per case (a failure followed by what differed and the answer), then `N passed, M failed`.
    Text,
    /// `{"passed","failed","errors":[{"file","document","case","reason"}],"cases":[{"file","test","case","passed","failures","response"}]}`, `response` as the webhook sends it.
    Json,
    /// JUnit XML: a `testsuite` per test, a `testcase` per case (`classname` its file) with a `failure` when it failed; what did not load as `error`s in a last suite.
    Junit,
}
