//! The command line: `celhook serve` (its flags in `cli/serve.rs`), `check`, `eval`, `test`,
//! `convert`, `certs`, `webhook-config` and `storage-migration`. Every flag can also be set by an environment
//! variable `CELHOOK_<FLAG>`.
//!
//! clap stays in this module: the rest of the crate sees a plain
//! [`Command`] (`cli/command.rs`) holding a
//! [`ServeConfig`](crate::server::ServeConfig), [`CheckArgs`] or [`TestArgs`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::ConfigSource;
use crate::kube_version::KubeVersion;

mod command;
mod serve;
pub use command::{CheckArgs, Command, ConvertArgs, EvalArgs, OutputFormat, TestArgs, TestOutput};
use serve::ServeArgs;

/// `check --output`: the help of each value describes the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckOutput {
    /// One line per problem and per skipped file or document (`warning: ...`), then a summary line.
    Text,
    /// The report as JSON: `{"crds":[{"name","file","versions","errors"}],"errors":[...],"warnings":[...]}`, each problem with its file, crd, version, path, rule and reason.
    Json,
}

/// `eval --output`: the help of each value describes the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EvalOutput {
    /// `allowed`, or `denied:` with the status message and one line per cause; with several documents, each answer starts with `document <i> (<name>):`.
    Text,
    /// The AdmissionReview the webhook would send (`.response.allowed`, `.response.status`); with several documents, a JSON array of them in document order.
    Json,
}

impl From<CheckOutput> for OutputFormat {
    fn from(output: CheckOutput) -> Self {
        match output {
            CheckOutput::Text => OutputFormat::Text,
            CheckOutput::Json => OutputFormat::Json,
        }
    }
}

impl From<EvalOutput> for OutputFormat {
    fn from(output: EvalOutput) -> Self {
        match output {
            EvalOutput::Text => OutputFormat::Text,
            EvalOutput::Json => OutputFormat::Json,
        }
    }
}

/// Parses `std::env::args()` and the `CELHOOK_*` environment. On error, the
/// clap error tells the message to print and whether it is a usage error
/// (`use_stderr()`) or `--help`/`--version`.
pub fn parse() -> Result<Command, clap::Error> {
    Cli::try_parse()
        .and_then(Cli::checked)
        .map(Cli::into_command)
}

/// Parses the given arguments (the first is the program name); for tests.
pub fn parse_from<I, T>(args: I) -> Result<Command, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args)
        .and_then(Cli::checked)
        .map(Cli::into_command)
}

#[derive(Debug, Parser)]
#[command(
    name = "celhook",
    version,
    about = "Kubernetes webhook enforcing CRD x-kubernetes-validations (CEL) rules and converting custom resources between CRD versions"
)]
struct Cli {
    #[command(subcommand)]
    command: CliCommand,
}

#[allow(clippy::large_enum_variant)] // parsed once
#[derive(Debug, Subcommand)]
enum CliCommand {
    /// Serve POST /validate, POST /convert, /healthz and /readyz over HTTPS.
    Serve(ServeArgs),
    /// Load and compile the CRDs and conversion documents of a directory (running their round-trip examples); print every problem; exit 1 on any.
    Check(CheckCliArgs),
    /// Convert custom resources in manifest files to another version of their CRD; print them.
    Convert(ConvertCliArgs),
    /// Evaluate offline what the webhook answers for an object (exit 1 when
    /// denied), or the value of one expression in the Kubernetes CEL environment.
    Eval(EvalCliArgs),
    /// Run the cases of ValidationTest files offline, each answered as the webhook answers it; exit 1 when one fails, 2 when a test file or config does not load.
    ///
    /// Each case's answer is compared with what the case expects; exit 0 when every case passes.
    ///
    /// A test file (YAML, one or several documents; other kinds are skipped):
    ///
    ///   apiVersion: celhook.dev/v1alpha1
    ///   kind: ValidationTest
    ///   metadata:
    ///     name: deployment-hygiene
    ///   spec:
    ///     config: ../rules          # relative to this file; --config replaces it
    ///     cases:
    ///       - name: the latest tag is denied
    ///         object:               # or objectFile: PATH (relative to this file)
    ///           apiVersion: apps/v1
    ///           kind: Deployment
    ///           ...
    ///         # oldObject / oldObjectFile: an UPDATE (operation: CREATE or UPDATE, optional)
    ///         # userInfo: {username: alice, groups: [dev]}
    ///         # namespace: shop     # default: the object's metadata.namespace
    ///         expect:
    ///           allowed: false      # required
    ///           code: 422
    ///           messages: ["must not use the latest tag"]
    ///           causes: [{field: spec.template.spec.containers[0].image, reason: FieldValueInvalid}]
    ///           # warnings: ["set a memory limit"]
    ///           # auditAnnotations: {validation_failure: "set a memory limit"}
    ///
    /// Only what `expect` lists is checked. `allowed`, `code`, a cause's `field` and `reason`, and
    /// annotation keys must be equal; each of `messages` must appear in the status message, a cause's
    /// `message` in that cause's, each of `warnings` in some warning, an annotation's value in its value.
    /// An empty list or map means none at all. See docs/testing.md.
    #[command(verbatim_doc_comment)]
    Test(TestCliArgs),
    /// Write a development CA and a serving certificate for celhook.<namespace>.svc; print the caBundle.
    Certs(CertsCliArgs),
    /// Print the ValidatingWebhookConfiguration that sends the config's CRDs to celhook
    /// (`/status` included), and each CRD with a conversion document with its
    /// conversion webhook set; YAML for `kubectl apply` or a kustomization.
    WebhookConfig(WebhookConfigCliArgs),
    /// Print a StorageVersionMigration (storagemigration.k8s.io) for each CRD of the config with several
    /// versions, each after the commands that wait for it and then trim the CRD's status.storedVersions.
    StorageMigration(StorageMigrationCliArgs),
}

/// `--kubernetes-version`, shared by the commands that compile a config.
#[derive(Debug, Args)]
pub(crate) struct VersionArg {
    /// The Kubernetes version to answer as (1.30 to 1.37): the CEL libraries rules and policies may use, the texts of the answers, the formats the schema check enforces, and the built-in kinds' schemas. `check` judges expressions as that API server judges them when they are written (against its compatibility version, one minor behind); the other commands run them as it runs stored ones.
    #[arg(
        long = "kubernetes-version",
        env = "CELHOOK_KUBERNETES_VERSION",
        value_name = "1.MINOR",
        default_value_t = KubeVersion::default()
    )]
    pub(crate) kubernetes_version: KubeVersion,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["crd", "expr"])))]
struct EvalCliArgs {
    #[command(flatten)]
    version_arg: VersionArg,

    /// CRD manifest whose rules apply (with --object), or a config directory of CRDs.
    #[arg(long, value_name = "PATH", requires = "object")]
    crd: Option<PathBuf>,
    /// Version of the CRD to validate as (default: the object's apiVersion).
    #[arg(long, value_name = "VERSION", requires = "crd")]
    version: Option<String>,
    /// The object(s): files (YAML with one or several documents, JSON, a `v1` `List`), directories (their
    /// *.yaml, *.yml and *.json files) or `-` (standard input); several may follow --object. Each object is
    /// evaluated and answered; the exit code is 1 when any is denied.
    #[arg(long, value_name = "PATH", requires = "crd", num_args = 1..)]
    object: Vec<PathBuf>,
    /// With --object: the old object(s), evaluated as an UPDATE with transition rules (as many documents as --object, paired in order). With --expr: the value of `oldSelf`.
    #[arg(long, value_name = "FILE")]
    old: Option<PathBuf>,
    /// One CEL expression to evaluate; it may use `oldSelf` when --old is given.
    #[arg(long, value_name = "CEL", conflicts_with_all = ["crd", "object", "version"])]
    expr: Option<String>,
    /// Value of `self` for --expr (YAML or JSON file).
    #[arg(long = "self", value_name = "FILE", requires = "expr")]
    this: Option<PathBuf>,
    /// How to print the webhook's answer for each object of --object (--expr prints its value as JSON).
    #[arg(long, value_enum, default_value_t = EvalOutput::Text)]
    output: EvalOutput,
}

#[derive(Debug, Args)]
struct TestCliArgs {
    #[command(flatten)]
    version_arg: VersionArg,

    /// The config every test runs against (a file, or a directory read with its subdirectories), instead of
    /// each test's spec.config.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,

    /// How to print the results.
    #[arg(long, value_enum, default_value_t = TestOutput::Text)]
    output: TestOutput,

    /// Test files, and directories whose *.yaml, *.yml and *.json files (subdirectories included) are
    /// searched for ValidationTest documents.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct ConvertCliArgs {
    #[command(flatten)]
    version_arg: VersionArg,

    /// CRDs and conversion documents: a directory (with its subdirectories) or one file; without it, the examples built into the binary.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,

    /// The version to convert to, as group/version (e.g. example.com/v1).
    #[arg(
        long,
        value_name = "GROUP/VERSION",
        required_unless_present = "round_trip"
    )]
    to: Option<String>,

    /// Manifest files, YAML or JSON (output in the same format); `-` reads standard input. With --round-trip,
    /// directories too (their *.yaml, *.yml and *.json files, subdirectories included).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,

    /// Print nothing converted: convert each object to every other version of its CRD and back, and report
    /// every difference the round trip leaves and every value that reached a version only through the stash
    /// annotation; exit 1 on a difference or an error.
    #[arg(long, conflicts_with_all = ["to", "partial", "refuse_other_kinds"])]
    round_trip: bool,

    /// With --round-trip: also exit 1 on a value kept only in the stash whose field the conversion document
    /// does not acknowledge in spec.lossy.
    #[arg(long)]
    strict: bool,

    /// Fail on objects of kinds no CRD of the config serves (a ConfigMap, a Deployment) instead of printing them unchanged in their place.
    #[arg(long)]
    refuse_other_kinds: bool,

    /// When some documents fail, still print the ones that converted (exit 1 all the same); by default nothing
    /// is printed then, so that `celhook convert ... | kubectl apply -f -` never applies a partial set.
    #[arg(long)]
    partial: bool,
}

#[derive(Debug, Args)]
struct CertsCliArgs {
    /// Directory to write ca.crt, ca.key, tls.crt and tls.key into.
    #[arg(
        long,
        env = "CELHOOK_CERTS_OUT",
        value_name = "DIR",
        default_value = "certs/out"
    )]
    out_dir: PathBuf,

    /// Namespace of the celhook Service.
    #[arg(long, env = "CELHOOK_NAMESPACE", default_value = "celhook")]
    namespace: String,

    /// Name of the celhook Service.
    #[arg(long, env = "CELHOOK_SERVICE", default_value = "celhook")]
    service: String,

    /// Validity of the certificates, in days.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    days: u32,

    /// More names for the serving certificate, DNS names or IP addresses (comma-separated).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    extra_names: Vec<String>,

    /// Leave out `localhost` and `127.0.0.1`, which the serving certificate
    /// otherwise carries for a local run or a port-forward.
    #[arg(long)]
    no_local_names: bool,
}

#[derive(Debug, Args)]
struct CheckCliArgs {
    #[command(flatten)]
    version_arg: VersionArg,

    /// CRD manifests (YAML or JSON) to check: a file, or a directory read with its subdirectories.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: PathBuf,

    /// How to print the report of problems found.
    #[arg(long, env = "CELHOOK_OUTPUT", value_enum, default_value_t = CheckOutput::Text)]
    output: CheckOutput,

    /// Fail on warnings too: skipped files and documents (kustomization files, objects that are not CRDs), and conversion fields kept only in the stash that the document does not acknowledge in spec.lossy.
    #[arg(long)]
    strict: bool,
}

#[derive(Debug, Args)]
struct WebhookConfigCliArgs {
    /// The config celhook serves (a file, or a directory read with its subdirectories);
    /// without it, the examples built into the binary.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,

    /// Name of the ValidatingWebhookConfiguration.
    #[arg(long, default_value = "celhook")]
    name: String,

    /// Namespace of the celhook Service (also never validated, with kube-system).
    #[arg(long, env = "CELHOOK_NAMESPACE", default_value = "celhook")]
    namespace: String,

    /// Name of the celhook Service.
    #[arg(long, env = "CELHOOK_SERVICE", default_value = "celhook")]
    service: String,

    /// Port of the celhook Service.
    #[arg(long, default_value_t = 443)]
    port: u16,

    /// What the API server does when celhook cannot answer: Fail (reject the write) or Ignore.
    #[arg(long, default_value = "Fail", value_parser = ["Fail", "Ignore"])]
    failure_policy: String,

    /// How long the API server waits for an answer, in seconds (1 to 30).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=30))]
    timeout_seconds: u32,

    /// A PEM CA certificate to write as the caBundle (leave it out when cert-manager's
    /// cainjector or the certs/ kustomize component adds it).
    #[arg(long, value_name = "FILE")]
    ca_bundle: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct StorageMigrationCliArgs {
    /// The config celhook serves (a file, or a directory read with its subdirectories);
    /// without it, the examples built into the binary.
    #[arg(long, env = "CELHOOK_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,

    /// Only this CRD (metadata.name, e.g. crontabs.example.com); repeat for several. Default: every CRD with
    /// more than one version.
    #[arg(long = "crd", value_name = "NAME")]
    crds: Vec<String>,

    /// apiVersion of the migrations: storagemigration.k8s.io/v1 (Kubernetes 1.37+),
    /// storagemigration.k8s.io/v1beta1 (1.35+) or storagemigration.k8s.io/v1alpha1 (1.30 to 1.34).
    #[arg(
        long,
        value_name = "API_VERSION",
        default_value = "storagemigration.k8s.io/v1",
        value_parser = crate::migration::SvmApiVersion::parse,
    )]
    api_version: crate::migration::SvmApiVersion,
}

impl Cli {
    /// What clap's `requires` cannot say of two flags (a flag's default
    /// counts as present to it).
    fn checked(self) -> Result<Cli, clap::Error> {
        use clap::CommandFactory;
        if let CliCommand::Convert(args) = &self.command {
            if args.strict && !args.round_trip {
                return Err(Cli::command().error(
                    clap::error::ErrorKind::MissingRequiredArgument,
                    "convert: --strict goes with --round-trip",
                ));
            }
        }
        Ok(self)
    }

    fn into_command(self) -> Command {
        match self.command {
            CliCommand::Serve(args) => args.into_command(),
            CliCommand::Check(args) => Command::Check(CheckArgs {
                source: ConfigSource::Dir(args.config),
                output: args.output.into(),
                strict: args.strict,
                kubernetes: args.version_arg.kubernetes_version,
            }),
            CliCommand::Convert(args) if args.round_trip => Command::RoundTrip {
                source: args
                    .config
                    .map_or(ConfigSource::Embedded, ConfigSource::Dir),
                files: args.files,
                strict: args.strict,
                kubernetes: args.version_arg.kubernetes_version,
            },
            CliCommand::Convert(args) => Command::Convert(ConvertArgs {
                source: args
                    .config
                    .map_or(ConfigSource::Embedded, ConfigSource::Dir),
                // clap requires --to unless --round-trip.
                to: args.to.unwrap_or_default(),
                files: args.files,
                other_kinds: if args.refuse_other_kinds {
                    crate::conversion::files::OtherKinds::Refuse
                } else {
                    crate::conversion::files::OtherKinds::PassThrough
                },
                partial: args.partial,
                kubernetes: args.version_arg.kubernetes_version,
            }),
            CliCommand::Eval(args) => Command::Eval(match (args.expr, args.crd, args.object) {
                (Some(expr), _, _) => EvalArgs::Expr {
                    expr,
                    this: args.this,
                    old: args.old,
                    kubernetes: args.version_arg.kubernetes_version,
                },
                // clap's group and `requires` rules guarantee --crd with --object.
                (None, crd, object) => EvalArgs::Object {
                    crd: crd.unwrap_or_default(),
                    version: args.version,
                    object,
                    old: args.old,
                    output: args.output.into(),
                    kubernetes: args.version_arg.kubernetes_version,
                },
            }),
            CliCommand::Test(args) => Command::Test(TestArgs {
                config: args.config,
                paths: args.paths,
                output: args.output,
                kubernetes: args.version_arg.kubernetes_version,
            }),
            CliCommand::Certs(args) => Command::Certs(crate::certs::CertsArgs {
                out_dir: args.out_dir,
                namespace: args.namespace,
                service: args.service,
                days: args.days,
                extra_names: args.extra_names,
                local_names: !args.no_local_names,
            }),
            CliCommand::WebhookConfig(args) => Command::WebhookConfig {
                source: args
                    .config
                    .map_or(ConfigSource::Embedded, ConfigSource::Dir),
                options: crate::webhook_config::WebhookOptions {
                    name: args.name,
                    namespace: args.namespace,
                    service: args.service,
                    port: args.port,
                    failure_policy: args.failure_policy,
                    timeout_seconds: args.timeout_seconds,
                    ca_bundle: None,
                },
                ca_bundle: args.ca_bundle,
            },
            CliCommand::StorageMigration(args) => Command::StorageMigration {
                source: args
                    .config
                    .map_or(ConfigSource::Embedded, ConfigSource::Dir),
                crds: args.crds,
                api_version: args.api_version,
            },
        }
    }
}

#[cfg(test)]
mod tests;
