//! Entry points of the fuzz targets in `fuzz/`, shared with the corpus
//! replay test (`tests/fuzz_corpus.rs`): every input the fuzzer kept, and
//! every input that once crashed, runs again under `cargo test`.
//!
//! Each function takes the fuzzer's bytes, drives one entry point of the
//! service with them exactly as the server does, and panics only when an
//! invariant breaks: a panic inside celhook, an answer that is not what the
//! API server can read, a cost limit that did not stop an evaluation, or a
//! conversion that lost or changed data.

use std::sync::OnceLock;

use arbitrary::{Result as ArbResult, Unstructured};
use celhook_json::{Map, Value as Json};

use crate::cel::{self, Environment, ErrorKind, Program, Value};
use crate::config::{self, Catalog};
use crate::{conversion, review, validation};

mod generate;
use generate::generate;

/// A fuzz entry point: the fuzzer's bytes in, a panic on a broken invariant.
pub type Target = fn(&[u8]);

/// Every target: its name (the `fuzz/fuzz_targets/<name>.rs` file and the
/// `fuzz/corpus/<name>/` directory) and its entry point.
pub const TARGETS: &[(&str, Target)] = &[
    ("admission_review", admission_review),
    ("conversion_review", conversion_review),
    ("config_load", config_load),
    ("cel_compile", cel_compile),
    ("cel_eval", cel_eval),
    ("conversion", conversion),
    ("json", json),
];

/// The CRD whose schema and rules the CEL targets use.
pub const WIDGET_CRD: &str = include_str!("../tests/fixtures/fuzz/widget.yaml");
/// A valid Widget, the `self` of fuzzed rules.
pub const WIDGET_SAMPLE: &str = include_str!("../tests/fixtures/fuzz/widget-sample.json");

/// The stack of the server runtime's evaluation threads (tokio's default for
/// blocking threads) under the fuzzer, whose build is optimized as a release is:
/// recursion that would overflow a worker must overflow here too, not pass
/// on the fuzzer's 8 MiB main stack. The corpus replay in `cargo test` runs
/// unoptimized code, whose frames are several times larger, on 16 MiB.
const WORKER_STACK: usize = if cfg!(fuzzing) {
    2 * 1024 * 1024
} else {
    16 * 1024 * 1024
};

/// The embedded example CRDs and conversions, plus the Widget CRD.
fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut files: Vec<(String, &str)> = config::embedded::FILES
            .iter()
            .map(|(name, text)| (format!("embedded:{name}"), *text))
            .collect();
        files.push(("widget.yaml".into(), WIDGET_CRD));
        let loaded = config::load_texts(&files);
        assert!(
            !loaded.report.has_errors(),
            "the fuzz config must load: {:#?}",
            loaded.report
        );
        loaded.catalog
    })
}

fn widget() -> &'static config::CrdVersion {
    catalog()
        .lookup("fuzz.celhook.dev", "v1", "Widget")
        .expect("the Widget CRD is loaded")
}

fn widget_sample() -> &'static Json {
    static SAMPLE: OnceLock<Json> = OnceLock::new();
    SAMPLE.get_or_init(|| serde_json::from_str(WIDGET_SAMPLE).expect("the sample is JSON"))
}

/// Runs `f` on a thread with a worker's stack and re-raises its panic.
fn on_worker_stack(f: impl FnOnce() + Send) {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .stack_size(WORKER_STACK)
            .spawn_scoped(scope, f)
            .expect("spawning the fuzz thread");
        if let Err(panic) = handle.join() {
            std::panic::resume_unwind(panic);
        }
    });
}

/// Any bytes through celhook's JSON parser (which reads every review),
/// against serde_json's: the same value, or an error where serde_json
/// errs; a skipped value accepted as a built one is (nesting apart, which
/// skipping does not limit); the value written back as serde_json writes
/// it.
pub fn json(data: &[u8]) {
    let ours = celhook_json::from_slice(data);
    let theirs = serde_json::from_slice::<serde_json::Value>(data);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => {
            assert!(a == b, "the same value: {a} and {b}");
            let written = celhook_json::to_vec(a);
            assert_eq!(
                written,
                serde_json::to_vec(b).expect("serde_json writes its value")
            );
        }
        (Err(_), Err(_)) => {}
        _ => panic!("celhook-json {ours:?}, serde_json {theirs:?}"),
    }
    let skipped =
        celhook_json::Parser::from_slice(data).and_then(|mut p| p.skip().and_then(|()| p.end()));
    match (&skipped, &ours) {
        (Ok(()), Err(e)) if e.message() == "recursion limit exceeded" => {}
        _ => assert_eq!(
            skipped.is_ok(),
            ours.is_ok(),
            "skipped {skipped:?}, built {ours:?}"
        ),
    }
}

/// An AdmissionReview body, answered as `POST /validate` answers it.
pub fn admission_review(data: &[u8]) {
    on_worker_stack(|| {
        let Ok((version, req)) = review::decode_admission(data) else {
            return;
        };
        let res = crate::admission::answer(catalog(), &req);
        // Decoding only what the rules read answers the same.
        for policy in [
            crate::admission::Policy::default(),
            crate::admission::OFFLINE,
        ] {
            let reads = crate::admission::Reads {
                catalog: catalog(),
                policy: &policy,
            };
            let (_, planned) =
                review::decode_admission_planned(data, review::Details::Decode, &reads)
                    .expect("what decodes whole decodes in part");
            let whole = crate::admission::review(catalog(), &req, &policy).response;
            let part = crate::admission::review(catalog(), &planned, &policy).response;
            assert_eq!(whole, part, "the answer from the planned decoding");
        }
        assert_eq!(res.uid, req.uid, "the answer echoes the uid");
        // The whole-schema check (`eval`, `serve --check-schema`) on the
        // same input: it must not panic either, and answers the same uid.
        let checked = crate::admission::review(catalog(), &req, &crate::admission::OFFLINE);
        assert_eq!(checked.response.uid, req.uid);
        let out = review::encode_admission(version, &res).expect("the answer encodes");
        let answer: Json = serde_json::from_slice(&out).expect("the answer is JSON");
        assert_eq!(answer["apiVersion"], version.api_version());
        assert_eq!(answer["response"]["uid"], req.uid.as_str());
        assert_eq!(answer["response"]["allowed"], res.allowed);
        if !res.allowed {
            assert!(
                answer["response"]["status"]["message"].is_string(),
                "a denial says why: {answer}"
            );
        }
    });
}

/// A ConversionReview body, answered as `POST /convert` answers it; and
/// read in one pass, which accepts only what two passes accept, with the
/// same objects.
pub fn conversion_review(data: &[u8]) {
    on_worker_stack(|| {
        if let Some(mut one) = review::OnePass::start(data) {
            let objects: Vec<Result<Json, String>> = (&mut one).collect();
            if let Some(n) = one.finish() {
                let (_, req) =
                    review::decode_conversion(data).expect("two passes accept what one does");
                let two: Vec<Result<Json, String>> = req.parsed_objects().collect();
                assert_eq!(objects, two);
                assert_eq!(n, two.len());
            }
        }
        let Ok((version, req)) = review::decode_conversion(data) else {
            return;
        };
        let mut writer = review::SuccessWriter::new(version, &req.uid).expect("the answer starts");
        let outcome = conversion::convert_each(
            catalog(),
            &req.desired_api_version,
            req.parsed_objects(),
            |object| {
                writer.push(&object);
                Ok(())
            },
        );
        let (answer, converted) = match outcome {
            Ok(()) => {
                let answer = writer.finish().concat();
                let answer: Json = serde_json::from_slice(&answer).expect("the answer is JSON");
                let converted = answer["response"]["convertedObjects"]
                    .as_array()
                    .expect("a Success lists the objects")
                    .clone();
                assert_eq!(answer["response"]["result"]["status"], "Success");
                (answer, converted)
            }
            Err(err) => {
                let message = err.to_string();
                assert!(!message.is_empty(), "a Failure says why");
                let answer = review::encode_conversion(version, &req.uid, Err(&message))
                    .expect("the answer encodes");
                let answer: Json = serde_json::from_slice(&answer).expect("the answer is JSON");
                assert_eq!(answer["response"]["result"]["status"], "Failure");
                assert_eq!(answer["response"]["result"]["message"], message.as_str());
                assert!(
                    answer["response"]["convertedObjects"]
                        .as_array()
                        .is_none_or(Vec::is_empty),
                    "a Failure carries no objects"
                );
                return;
            }
        };
        assert_eq!(answer["apiVersion"], version.api_version());
        assert_eq!(answer["response"]["uid"], req.uid.as_str());
        assert_eq!(converted.len(), req.objects.len(), "one answer per object");
        for (object, raw) in converted.iter().zip(&req.objects) {
            let input: Json = celhook_json::from_str(raw).expect("converted inputs parse");
            assert_eq!(object["apiVersion"], req.desired_api_version.as_str());
            assert_eq!(object["kind"], input["kind"], "kind kept");
            for field in ["name", "namespace", "uid"] {
                assert_eq!(
                    object["metadata"][field], input["metadata"][field],
                    "metadata.{field} kept, in order"
                );
            }
        }
    });
}

/// A config file (YAML or JSON, any number of documents), loaded as
/// `celhook check` and `serve` load one: every problem is reported with its
/// file and a reason, and nothing panics.
pub fn config_load(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    on_worker_stack(|| {
        let loaded = config::load_texts(&[("fuzz.yaml".to_owned(), text)]);
        let problems = loaded
            .report
            .errors
            .iter()
            .chain(loaded.report.crds.iter().flat_map(|c| &c.errors));
        for problem in problems {
            assert_eq!(problem.file, "fuzz.yaml");
            assert!(
                !problem.reason.is_empty(),
                "a refusal says why: {problem:?}"
            );
        }
        // A CRD that loaded answers for a Widget-shaped object without panicking.
        for version in loaded.catalog.versions() {
            let _ = version.validator.validate(widget_sample(), None);
        }
    });
}

/// Rule text compiled against a Widget schema node, and when it compiles,
/// evaluated on the sample: the runtime cost limit must stop it.
///
/// The first byte picks the node and whether `oldSelf` is optional; the
/// rest is the rule.
pub fn cel_compile(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(source) = std::str::from_utf8(rest) else {
        return;
    };
    on_worker_stack(|| {
        let root = &widget().validator.schema;
        let sample = widget_sample();
        let (schema, value) = match selector % 4 {
            0 => (root, sample),
            1 => (&root.properties["spec"], &sample["spec"]),
            2 => (
                root.properties["spec"].properties["ports"]
                    .items
                    .as_deref()
                    .expect("ports has items"),
                &sample["spec"]["ports"][0],
            ),
            _ => (
                &root.properties["spec"].properties["tags"],
                &sample["spec"]["tags"],
            ),
        };
        let opts = Environment::crd_rule(selector & 4 != 0);
        let Ok(program) = Program::compile(source, schema, opts) else {
            return;
        };
        // The memo pass (kept reads, scanned loops) must change no result,
        // no error and no cost, at any limit.
        let plain = Program::compile_planned(source, schema, opts, false)
            .expect("what compiles with the memo pass compiles without it");
        let estimate = program.estimated_cost();
        assert!(estimate >= 0.0, "estimated cost {estimate} for {source:?}");
        let old = if program.uses_old_self() {
            let old = Value::from_json(value, schema);
            Some(if opts.optional_old_self {
                Value::Optional(Some(std::rc::Rc::new(old)))
            } else {
                old
            })
        } else {
            None
        };
        // A low limit as well as the API server's: the stop must hold at
        // any point of an evaluation.
        for limit in [cel::PER_EXPRESSION_COST_LIMIT, u64::from(selector) * 7] {
            let run = |p: &Program| {
                let (result, cost) = p.eval(Value::from_json(value, schema), old.clone(), limit);
                check_cost(source, &result, cost, limit);
                (
                    result
                        .map(|v| format!("{v:?}"))
                        .map_err(|e| e.message.to_string()),
                    cost,
                )
            };
            assert_eq!(
                run(&program),
                run(&plain),
                "the memo pass changed {source:?} at limit {limit}"
            );
        }
    });
}

/// The cost counted by an evaluation agrees with its outcome: a finished
/// evaluation stayed within the limit, and a stopped one passed it.
fn check_cost(source: &str, result: &Result<Value<'_>, cel::EvalError>, cost: u64, limit: u64) {
    match result {
        Ok(_) => assert!(
            cost <= limit,
            "{source:?} finished at cost {cost} over the limit {limit}"
        ),
        Err(e) if e.kind == ErrorKind::CostLimit => assert!(
            cost > limit,
            "{source:?} stopped at cost {cost}, within the limit {limit}"
        ),
        Err(_) => {}
    }
}

/// A generated Widget (mostly shaped by its schema, sometimes not) and an
/// old Widget, validated on CREATE and UPDATE against every Widget rule.
pub fn cel_eval(data: &[u8]) {
    on_worker_stack(|| {
        let mut u = Unstructured::new(data);
        let validator = &widget().validator;
        let Ok(object) = generate(&mut u, &validator.schema, 0) else {
            return;
        };
        let old = match u.int_in_range(0..=2u8) {
            Ok(0) | Err(_) => None,
            Ok(1) => Some(widget_sample().clone()),
            Ok(_) => generate(&mut u, &validator.schema, 0).ok(),
        };
        for old in [None, old.as_ref(), Some(&object)] {
            let outcome = validator.validate(&object, old);
            for error in &outcome.errors {
                assert!(
                    !error.body().is_empty(),
                    "every field error has a message: {error:?}"
                );
            }
            let status =
                validation::invalid_status("fuzz.celhook.dev", "Widget", "fuzz", &outcome.errors);
            serde_json::to_vec(&status).expect("the denial encodes");
        }
    });
}

/// A batch of generated custom resources of the embedded multi-version
/// CRDs, in mixed versions, converted to every version and back: each step
/// either fails cleanly or keeps order and count, and the round trip gives
/// every object back unchanged.
pub fn conversion(data: &[u8]) {
    on_worker_stack(|| {
        let mut u = Unstructured::new(data);
        let _ = conversion_round_trips(&mut u);
    });
}

fn conversion_round_trips(u: &mut Unstructured<'_>) -> ArbResult<()> {
    let catalog = catalog();
    let mut kinds: Vec<(&str, &str, &conversion::Conversion)> = catalog
        .versions()
        .filter_map(|v| {
            let c = catalog.conversion(&v.group, &v.kind)?;
            Some((v.group.as_str(), v.kind.as_str(), c))
        })
        .collect();
    kinds.sort_by_key(|(g, k, _)| (*g, *k));
    kinds.dedup_by_key(|(g, k, _)| (*g, *k));
    let (group, kind, conv) = *u.choose(&kinds)?;
    let versions = conv.versions();

    let count = u.int_in_range(1..=6usize)?;
    let mut batch = Vec::with_capacity(count);
    for i in 0..count {
        let version = u.choose(versions)?;
        let schema = &catalog
            .lookup(group, version, kind)
            .expect("a conversion's versions are loaded")
            .validator
            .schema;
        let mut object = generate(u, schema, 0)?;
        // What the API server stores and sends: pruned to the schema,
        // with apiVersion, kind and identifying metadata set.
        conversion::prune(&mut object, schema, true);
        let Json::Object(fields) = &mut object else {
            return Ok(());
        };
        fields.insert("apiVersion", format!("{group}/{version}").into());
        fields.insert("kind", kind.into());
        let metadata = fields
            .entry("metadata")
            .or_insert_with(|| Json::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Json::Object(Map::new());
        }
        metadata["name"] = format!("obj-{i}").into();
        metadata["namespace"] = "default".into();
        metadata["uid"] = format!("00000000-0000-0000-0000-{i:012}").into();
        batch.push(object);
    }

    for target in versions {
        let desired = format!("{group}/{target}");
        let Ok(converted) = conversion::convert_all(catalog, &desired, batch.clone()) else {
            continue;
        };
        assert_eq!(converted.len(), batch.len(), "one answer per object");
        for (original, object) in batch.iter().zip(&converted) {
            assert_eq!(object["apiVersion"], desired.as_str());
            assert_eq!(object["metadata"]["name"], original["metadata"]["name"]);
            assert_eq!(object["metadata"]["uid"], original["metadata"]["uid"]);
            let back_to = original["apiVersion"].as_str().expect("set above");
            let back = conversion::convert_one(catalog, back_to, object.clone())
                .unwrap_or_else(|e| panic!("converting back to {back_to} failed: {e}"));
            assert_eq!(
                &back, original,
                "the round trip through {desired} changed the object"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuzz_config_loads_and_the_sample_passes() {
        let outcome = widget().validator.validate(widget_sample(), None);
        assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
        let outcome = widget()
            .validator
            .validate(widget_sample(), Some(widget_sample()));
        assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    }

    #[test]
    fn the_cost_check_catches_an_evaluation_past_its_limit() {
        let err = cel::EvalError::new("x");
        // A finished evaluation over its limit is a broken limit.
        let broken = std::panic::catch_unwind(|| check_cost("r", &Ok(Value::Bool(true)), 11, 10));
        assert!(broken.is_err());
        check_cost("r", &Ok(Value::Bool(true)), 10, 10);
        check_cost("r", &Err(err), 0, 10);
    }

    #[test]
    fn every_target_survives_empty_and_trivial_inputs() {
        for (name, target) in TARGETS {
            for input in [&b""[..], b"{}", b"\x00", b"[]", b"\xff\xff\xff\xff"] {
                let result = std::panic::catch_unwind(|| target(input));
                assert!(result.is_ok(), "{name} panicked on {input:?}");
            }
        }
    }
}
