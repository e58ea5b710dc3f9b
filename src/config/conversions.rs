//! The loader's pass over conversion documents, once every CRD is loaded:
//! each is compiled against its CRD's versions, its examples run and its
//! coverage checked; a conversion with problems is not served, and each
//! problem names its file and, where known, its CRD, version and path.

use std::collections::HashMap;

use super::{Loader, Problem};
use crate::conversion;

impl Loader {
    /// Compiles every conversion document against its CRD and runs its
    /// examples; problems go to the CRD's report (or the general list when
    /// the CRD is unknown).
    pub(super) fn conversions(&mut self) {
        let docs = std::mem::take(&mut self.conversion_docs);
        let mut seen: HashMap<String, String> = HashMap::new();
        for (file, doc) in docs {
            let Some(crd) = conversion::document::crd_name(&doc).map(str::to_owned) else {
                self.file_error(
                    &file,
                    "Conversion: spec.crd (the name of the CustomResourceDefinition) is missing",
                );
                continue;
            };
            let problem = |p: conversion::DocumentProblem| Problem {
                file: file.clone(),
                crd: p.crd.or_else(|| Some(crd.clone())),
                version: p.version,
                path: Some(p.path),
                rule: p.rule,
                reason: p.reason,
                document: None,
            };
            let crd_problem = |reason: String| {
                problem(conversion::DocumentProblem {
                    crd: None,
                    version: None,
                    path: "spec.crd".into(),
                    rule: None,
                    reason,
                })
            };
            let mut problems = Vec::new();
            if let Some(other) = seen.get(&crd) {
                problems.push(crd_problem(format!(
                    "a second Conversion for this CRD (the first is in {other})"
                )));
            } else if let Some((group, kind, versions)) = self.crd_schemas.get(&crd) {
                seen.insert(crd.clone(), file.clone());
                let info = conversion::document::CrdInfo {
                    name: &crd,
                    group,
                    kind,
                };
                match conversion::document::compile(doc, info, versions, self.own_libraries()) {
                    Ok(compiled) => {
                        let found = conversion::document::check_examples(
                            &compiled.conversion,
                            &compiled.examples,
                        );
                        let coverage = conversion::coverage::findings(&compiled.conversion);
                        if found.is_empty() && coverage.errors.is_empty() {
                            self.catalog.insert_conversion(compiled.conversion);
                        }
                        problems.extend(found.into_iter().chain(coverage.errors).map(problem));
                        self.report
                            .warnings
                            .extend(coverage.warnings.into_iter().map(problem));
                        self.report
                            .notes
                            .extend(coverage.notes.into_iter().map(problem));
                    }
                    Err(found) => problems.extend(found.into_iter().map(problem)),
                }
            } else {
                let reason = if self.report.crds.iter().any(|c| c.name == crd) {
                    "the CustomResourceDefinition it converts has problems (see above)"
                } else {
                    "no CustomResourceDefinition of this name in the config"
                };
                problems.push(crd_problem(reason.into()));
            }
            match self.report.crds.iter_mut().find(|c| c.name == crd) {
                Some(report) => report.errors.extend(problems),
                None => self.report.errors.extend(problems),
            }
        }
    }
}
