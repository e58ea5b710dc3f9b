//! The example CRDs (and conversion documents) compiled into the binary: the
//! config served when no `--config` is given. The same files live in
//! `manifests/examples/`.

/// (file name, contents) of each embedded example.
pub const FILES: &[(&str, &str)] = &[
    (
        "crontab.yaml",
        include_str!("../../manifests/examples/crontab.yaml"),
    ),
    (
        "crontab-conversion.yaml",
        include_str!("../../manifests/examples/crontab-conversion.yaml"),
    ),
    (
        "pizza-conversion.yaml",
        include_str!("../../manifests/examples/pizza-conversion.yaml"),
    ),
];
