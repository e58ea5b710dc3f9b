//! What is sent: an AdmissionReview or ConversionReview built once, as a
//! byte template split around `request.uid`, so each request costs two
//! copies and no JSON work on the generator's side.

use std::path::Path;

use anyhow::{bail, ensure, Context};
use serde_json::{json, Value};

use crate::args::{AdmissionArgs, ConversionArgs, Expect, Operation};

/// The seeds' CronTab, valid (replicas within bounds): a realistic CREATE
/// for celhook's built-in example CRDs.
pub const BUILTIN_REVIEW: &str = include_str!("crontab-review.json");

/// Stands for the uid in the serialized review; replaced per request.
const UID_PLACEHOLDER: &str = "celhook-loadtest-uid-placeholder-6f0c2a";

/// The review split around its uid.
#[derive(Debug, Clone)]
pub struct Template {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
}

impl Template {
    /// Serializes `review` (compact, as the API server sends it) with a
    /// placeholder uid and splits it there.
    pub fn new(mut review: Value) -> anyhow::Result<Self> {
        let request = review
            .get_mut("request")
            .and_then(Value::as_object_mut)
            .context("the review has no request object")?;
        request.insert("uid".to_owned(), Value::from(UID_PLACEHOLDER));
        let text = in_api_server_order(&review)?;
        let Some((prefix, suffix)) = text.split_once(UID_PLACEHOLDER) else {
            bail!("cannot locate request.uid in the serialized review");
        };
        ensure!(
            !suffix.contains(UID_PLACEHOLDER),
            "the review contains the uid placeholder text elsewhere"
        );
        Ok(Self {
            prefix: prefix.as_bytes().to_vec(),
            suffix: suffix.as_bytes().to_vec(),
        })
    }

    /// The body for one request.
    pub fn body(&self, uid: &str) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.prefix.len() + uid.len() + self.suffix.len());
        body.extend_from_slice(&self.prefix);
        body.extend_from_slice(uid.as_bytes());
        body.extend_from_slice(&self.suffix);
        body
    }

    /// Size of a body in bytes (with a uid of `uid_len` bytes).
    pub fn len(&self, uid_len: usize) -> usize {
        self.prefix.len() + uid_len + self.suffix.len()
    }
}

/// A review's fields in the order of the API server's Go structs, which
/// its encoder keeps (serde_json's map sorts): `TypeMeta` (kind first),
/// then the request.
const REVIEW_ORDER: &str = "kind apiVersion request response";

/// The fields of an AdmissionReview's request, in that order.
const ADMISSION_REQUEST_ORDER: &str = "uid kind resource subResource requestKind requestResource \
    requestSubResource name namespace operation userInfo object oldObject dryRun options";

/// The fields of a ConversionReview's request, in that order.
const CONVERSION_REQUEST_ORDER: &str = "uid desiredAPIVersion objects";

/// `review` as compact JSON written as the API server writes it: the
/// review's and its request's fields in the order of the Go structs (for
/// an AdmissionReview `operation` before `object`, for a ConversionReview
/// `uid` and `desiredAPIVersion` before `objects`: a server may plan its
/// decoding by them), any other field after them; the objects' own keys
/// sorted, as Go writes an unstructured object's maps. Anything else as
/// serde_json writes it.
pub fn in_api_server_order(review: &Value) -> anyhow::Result<String> {
    let request_order = match review["kind"].as_str() {
        Some("AdmissionReview") => ADMISSION_REQUEST_ORDER,
        Some("ConversionReview") => CONVERSION_REQUEST_ORDER,
        _ => return Ok(serde_json::to_string(review)?),
    };
    let (Some(top), Some(request)) = (review.as_object(), review["request"].as_object()) else {
        return Ok(serde_json::to_string(review)?);
    };
    let mut request = Some(ordered(request, request_order)?);
    let mut fields = Vec::with_capacity(top.len());
    for (k, v) in top.iter() {
        let v = match request.take_if(|_| k == "request") {
            Some(request) => request,
            None => serde_json::to_string(v)?,
        };
        fields.push((k.as_str(), v));
    }
    Ok(object_in(fields, REVIEW_ORDER))
}

/// `map` written with the keys of `order` first, in that order.
fn ordered(map: &serde_json::Map<String, Value>, order: &str) -> anyhow::Result<String> {
    let mut fields = Vec::with_capacity(map.len());
    for (k, v) in map {
        fields.push((k.as_str(), serde_json::to_string(v)?));
    }
    Ok(object_in(fields, order))
}

/// A JSON object of already written `fields`: those named in `order`
/// first, in that order, the others after them as they come.
fn object_in(mut fields: Vec<(&str, String)>, order: &str) -> String {
    let rank = |k: &str| order.split_whitespace().position(|o| o == k);
    fields.sort_by_key(|(k, _)| rank(k).unwrap_or(usize::MAX));
    let members: Vec<String> = fields
        .into_iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(k)))
        .collect();
    format!("{{{}}}", members.join(","))
}

/// What each conversion answer must preserve of one sent object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentObject {
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub uid: String,
}

/// What the answers are checked against.
#[derive(Debug, Clone)]
pub enum Expectation {
    /// An AdmissionReview answer in `api_version` with the expected verdict.
    Admission { api_version: String, expect: Expect },
    /// A ConversionReview answer converting `objects`, in order, to `desired`.
    Conversion {
        api_version: String,
        desired: String,
        objects: Vec<SentObject>,
    },
}

/// A built workload: bodies and what their answers must say.
#[derive(Debug, Clone)]
pub struct Workload {
    pub template: Template,
    pub expectation: Expectation,
    /// Objects per request (1 for admission).
    pub objects_per_request: u64,
    /// A short description for the report.
    pub describe: String,
}

/// Reads a JSON or YAML document (by extension; `.json` is JSON).
pub fn read_document(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
    } else {
        serde_norway::from_str(&text).with_context(|| format!("{} is not YAML", path.display()))
    }
}

/// Splits `apiVersion` into group and version (`v1` is the core group).
fn group_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

fn str_at<'v>(v: &'v Value, pointer: &str, what: &str) -> anyhow::Result<&'v str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .with_context(|| format!("{what}: {pointer} is missing or not a string"))
}

/// The string at `pointer` in `v`, or `absent` (for descriptions).
fn str_or(v: &Value, pointer: &str, absent: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or(absent)
        .to_owned()
}

/// Builds the admission workload.
pub fn admission(args: &AdmissionArgs) -> anyhow::Result<Workload> {
    let mut review = match (&args.review, &args.object) {
        (Some(path), _) => read_document(path)?,
        (None, Some(object)) => {
            let object = read_document(object)?;
            let old = match &args.old_object {
                Some(path) => Some(read_document(path)?),
                None => None,
            };
            let crd = match &args.crd {
                Some(path) => Some(read_document(path)?),
                None => None,
            };
            review_for(object, old, crd.as_ref())?
        }
        (None, None) => serde_json::from_str(BUILTIN_REVIEW).context("the built-in review")?,
    };
    let request = review
        .get_mut("request")
        .and_then(Value::as_object_mut)
        .context("the review has no request object")?;
    match args.operation {
        Some(Operation::Create) => {
            request.insert("operation".into(), json!("CREATE"));
            request.insert("oldObject".into(), Value::Null);
        }
        Some(Operation::Update) => {
            request.insert("operation".into(), json!("UPDATE"));
            let old_missing = request.get("oldObject").is_none_or(Value::is_null);
            if old_missing {
                // An UPDATE that changes nothing: every rule still runs.
                let object = request.get("object").cloned().unwrap_or(Value::Null);
                request.insert("oldObject".into(), object);
            }
        }
        None => {}
    }
    let operation = str_or(&review, "/request/operation", "?");
    let kind = str_or(&review, "/request/kind/kind", "?");
    let api_version = str_or(&review, "/apiVersion", "admission.k8s.io/v1");
    Ok(Workload {
        template: Template::new(review)?,
        expectation: Expectation::Admission {
            api_version,
            expect: args.expect,
        },
        objects_per_request: 1,
        describe: format!("AdmissionReview {operation} {kind}"),
    })
}

/// An AdmissionReview as the API server sends it for `object`.
pub fn review_for(object: Value, old: Option<Value>, crd: Option<&Value>) -> anyhow::Result<Value> {
    let api_version = str_at(&object, "/apiVersion", "the object")?;
    let kind = str_at(&object, "/kind", "the object")?.to_owned();
    let (group, version) = group_version(api_version);
    let (group, version) = (group.to_owned(), version.to_owned());
    let plural = match crd {
        Some(crd) => {
            let crd_kind = str_at(crd, "/spec/names/kind", "the CRD")?;
            let crd_group = str_at(crd, "/spec/group", "the CRD")?;
            ensure!(
                crd_kind == kind && crd_group == group,
                "the CRD is for {crd_kind}.{crd_group}, the object is a {kind}.{group}"
            );
            str_at(crd, "/spec/names/plural", "the CRD")?.to_owned()
        }
        None => format!("{}s", kind.to_lowercase()),
    };
    let name = str_or(&object, "/metadata/name", "");
    let namespace = object
        .pointer("/metadata/namespace")
        .cloned()
        .unwrap_or(Value::Null);
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": plural});
    let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
    let options = if old.is_some() {
        "UpdateOptions"
    } else {
        "CreateOptions"
    };
    Ok(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "",
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": name, "namespace": namespace, "operation": operation,
            "userInfo": {"username": "celhook-loadtest", "groups": ["system:authenticated"]},
            "object": object, "oldObject": old, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
        }
    }))
}

/// Builds the conversion workload: `batch` objects cycling through the
/// given ones (mixed source versions), each renamed and with its own uid.
pub fn conversion(args: &ConversionArgs) -> anyhow::Result<Workload> {
    let desired = args.desired_api_version.trim();
    ensure!(
        desired.contains('/'),
        "--to {desired:?} must be group/version (custom resources always have a group)"
    );
    let mut sources = Vec::new();
    for path in &args.objects {
        let object = read_document(path)?;
        let what = format!("{}", path.display());
        let api_version = str_at(&object, "/apiVersion", &what)?;
        str_at(&object, "/kind", &what)?;
        str_at(&object, "/metadata/name", &what)?;
        ensure!(
            api_version != desired,
            "{what} is already in {desired}; the API server never sends such an object for conversion"
        );
        sources.push(object);
    }
    let mut objects = Vec::with_capacity(args.batch as usize);
    let mut sent = Vec::with_capacity(args.batch as usize);
    for i in 0..args.batch as usize {
        let mut object = sources[i % sources.len()].clone();
        let base = object["metadata"]["name"].as_str().unwrap_or("object");
        let name = format!("{base}-{i}");
        let uid = format!("00000000-0000-4000-8000-{i:012}");
        object["metadata"]["name"] = json!(name);
        object["metadata"]["uid"] = json!(uid);
        sent.push(SentObject {
            kind: object["kind"].as_str().unwrap_or_default().to_owned(),
            name,
            namespace: object["metadata"]["namespace"].as_str().map(str::to_owned),
            uid,
        });
        objects.push(object);
    }
    let mut versions: Vec<&str> = sources
        .iter()
        .filter_map(|o| o["apiVersion"].as_str())
        .collect();
    versions.dedup();
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "", "desiredAPIVersion": desired, "objects": objects},
    });
    Ok(Workload {
        template: Template::new(review)?,
        expectation: Expectation::Conversion {
            api_version: "apiextensions.k8s.io/v1".into(),
            desired: desired.to_owned(),
            objects: sent,
        },
        objects_per_request: u64::from(args.batch),
        describe: format!(
            "ConversionReview of {} objects from {} to {desired}",
            args.batch,
            versions.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_puts_each_uid_in_request_uid() {
        let review = serde_json::from_str(BUILTIN_REVIEW).expect("json");
        let template = Template::new(review).expect("template");
        let body = template.body("loadtest-42");
        assert_eq!(body.len(), template.len("loadtest-42".len()));
        let sent: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(sent["request"]["uid"], "loadtest-42");
        assert_eq!(sent["request"]["kind"]["kind"], "CronTab");
        // Nothing lost or changed, and the API server's order of fields.
        let mut expected: Value = serde_json::from_str(BUILTIN_REVIEW).expect("json");
        expected["request"]["uid"] = json!("loadtest-42");
        assert_eq!(sent, expected);
        let text = String::from_utf8(body).expect("UTF-8");
        let at = |field: &str| text.find(&format!("\"{field}\":")).expect(field);
        assert!(
            at("kind") < at("apiVersion") && at("apiVersion") < at("request"),
            "{text}"
        );
        assert!(
            at("uid") < at("operation") && at("operation") < at("object"),
            "{text}"
        );
    }

    #[test]
    fn a_review_without_request_is_refused() {
        assert!(Template::new(json!({"apiVersion": "admission.k8s.io/v1"})).is_err());
        assert!(Template::new(json!({"request": "x"})).is_err());
    }

    #[test]
    fn a_review_is_built_from_object_and_crd() {
        let object = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "ns"}, "spec": {}});
        let crd = json!({"spec": {"group": "stable.example.com",
            "names": {"kind": "CronTab", "plural": "crontabz"}}});
        let review = review_for(object.clone(), Some(object.clone()), Some(&crd)).expect("review");
        let req = &review["request"];
        assert_eq!(req["operation"], "UPDATE");
        assert_eq!(req["resource"]["resource"], "crontabz");
        assert_eq!(req["kind"]["version"], "v1");
        assert_eq!(req["namespace"], "ns");
        assert_eq!(req["oldObject"], object);

        let other = json!({"spec": {"group": "other.example.com",
            "names": {"kind": "CronTab", "plural": "crontabs"}}});
        let err = review_for(object.clone(), None, Some(&other)).expect_err("wrong CRD");
        assert!(err.to_string().contains("other.example.com"), "{err}");
        assert!(review_for(json!({"kind": "X"}), None, None).is_err());
    }

    #[test]
    fn a_conversion_batch_cycles_through_the_sources_with_distinct_names() {
        let dir = tempfile::tempdir().expect("dir");
        let a = dir.path().join("a.json");
        let b = dir.path().join("b.yaml");
        std::fs::write(
            &a,
            r#"{"apiVersion":"g.example.com/v1","kind":"W","metadata":{"name":"w","namespace":"n"}}"#,
        )
        .expect("write");
        std::fs::write(
            &b,
            "apiVersion: g.example.com/v2\nkind: W\nmetadata:\n  name: w2\n",
        )
        .expect("write");
        let args = ConversionArgs {
            objects: vec![a.clone(), b],
            desired_api_version: "g.example.com/v3".into(),
            batch: 5,
        };
        let w = conversion(&args).expect("workload");
        // The API server's order: what a server reading it in one pass needs.
        let text = String::from_utf8(w.template.body("u1")).expect("UTF-8");
        assert!(
            text.starts_with(
                r#"{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u1","desiredAPIVersion":"g.example.com/v3","objects":[{"apiVersion":"g.example.com/v1","kind":"W","metadata":{"name":"w-0","#
            ),
            "{text}"
        );
        assert!(text.ends_with("}]}}"), "{text}");
        let review: Value = serde_json::from_slice(&w.template.body("u1")).expect("json");
        let objects = review["request"]["objects"].as_array().expect("objects");
        assert_eq!(objects.len(), 5);
        assert_eq!(objects[0]["apiVersion"], "g.example.com/v1");
        assert_eq!(objects[1]["apiVersion"], "g.example.com/v2");
        assert_eq!(objects[3]["metadata"]["name"], "w2-3");
        assert_eq!(review["request"]["desiredAPIVersion"], "g.example.com/v3");
        let Expectation::Conversion { objects: sent, .. } = &w.expectation else {
            panic!("conversion expected")
        };
        assert_eq!(sent[4].name, "w-4");
        assert_eq!(sent[4].namespace.as_deref(), Some("n"));
        assert_ne!(sent[0].uid, sent[1].uid);

        let args = ConversionArgs {
            objects: vec![a],
            desired_api_version: "g.example.com/v1".into(),
            batch: 1,
        };
        let err = conversion(&args).expect_err("already in the desired version");
        assert!(err.to_string().contains("already in"), "{err}");
    }
}
