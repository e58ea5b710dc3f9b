//! Logging: a tracing subscriber writing text or JSON lines to stderr, with
//! the level taken from `RUST_LOG` (default [`DEFAULT_FILTER`]).
//!
//! stderr keeps stdout free for `celhook check`'s report. JSON lines are
//! written by [`JsonLines`] so that lists and maps logged through [`Json`]
//! arrive as JSON arrays and objects rather than as quoted debug text.

use std::fmt;
use std::io::IsTerminal;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::Record;
use tracing::{Event, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// The filter without `RUST_LOG`: celhook's own lines from info up, the
/// HTTP and TLS libraries' only from warn (their info and debug lines speak
/// of connection internals an operator does not act on).
pub const DEFAULT_FILTER: &str =
    "info,h2=warn,hyper=warn,hyper_util=warn,rustls=warn,tokio_rustls=warn";

/// Installs the global subscriber. Calling it twice is harmless: the second
/// call keeps the first subscriber (tests may race to initialise logging).
pub fn init(format: LogFormat) {
    let directives = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => v,
        _ => DEFAULT_FILTER.to_owned(),
    };
    // An unparsable RUST_LOG keeps what parses rather than refusing to
    // start: logging is not worth an outage.
    let filter = EnvFilter::builder().parse_lossy(directives);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only help a person at a terminal, never a log collector.
        .with_ansi(std::io::stderr().is_terminal());
    let _already_set = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .fmt_fields(SpanJson)
            .event_format(JsonLines)
            .try_init(),
    };
}

/// A value logged as `?Json(&v)`: its debug text is its JSON, which
/// [`JsonLines`] embeds as JSON and the text format prints as is.
pub struct Json<T>(pub T);

impl<T: serde::Serialize> fmt::Debug for Json<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(&self.0).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

/// One JSON object per event: `timestamp`, `level`, the event's fields
/// (`message` among them) at the top level, `target`, and `span` with the
/// current span's name and fields.
///
/// Written here rather than with tracing-subscriber's JSON format, which
/// writes every debug-formatted field as a string: a list of failed rules
/// would reach the log collector as one quoted string.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLines;

impl<S> FormatEvent<S, SpanJson> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, SpanJson>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let mut line = Map::new();
        line.insert("timestamp".into(), Value::String(timestamp));
        line.insert("level".into(), Value::String(meta.level().to_string()));
        event.record(&mut Fields(&mut line));
        line.insert("target".into(), Value::String(meta.target().to_owned()));
        let span = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current());
        if let Some(span) = span {
            let mut fields = Map::new();
            fields.insert("name".into(), Value::String(span.name().to_owned()));
            if let Some(recorded) = span.extensions().get::<FormattedFields<SpanJson>>() {
                // SpanJson keeps a span's fields as the text of a JSON object.
                if let Ok(Value::Object(map)) = serde_json::from_str(&recorded.fields) {
                    fields.extend(map);
                }
            }
            line.insert("span".into(), Value::Object(fields));
        }
        let text = serde_json::to_string(&Value::Object(line)).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// A span's fields as the text of one JSON object, for [`JsonLines`].
///
/// Why not tracing-subscriber's `JsonFields`: each `span.record` after the
/// first parses the object it has so far and writes it again, and each
/// record builds a map of `serde_json::Value`s that it serializes through
/// a `fmt::Write` adaptor, about 17,000 instructions for a review's six
/// fields: 14% of a no-rule review's user-space work in the server
/// (callgrind). Here a record writes its members straight into one buffer
/// (`Members`) and appends them to the object's text. A field recorded
/// twice then appears twice; the parse in [`JsonLines`] keeps the last, as
/// `JsonFields` does.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpanJson;

impl<'w> FormatFields<'w> for SpanJson {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut members = Members::default();
        fields.record(&mut members);
        let text = members.into_object().map_err(|_| fmt::Error)?;
        writer.write_str(&text)
    }

    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &Record<'_>,
    ) -> fmt::Result {
        if current.fields.is_empty() {
            return self.format_fields(current.as_writer(), fields);
        }
        let mut added = String::new();
        self.format_fields(Writer::new(&mut added), fields)?;
        append_members(&mut current.fields, &added);
        Ok(())
    }
}

/// A record's fields as JSON members, each value as `JsonFields` writes
/// it (strings, numbers, booleans, bytes as an array, debug text as a
/// string). In record order, not sorted as `JsonFields` sorts them:
/// [`JsonLines`] parses the text into a sorted map anyway.
#[derive(Default)]
struct Members {
    out: Vec<u8>,
}

impl Members {
    /// Starts the member `name`.
    fn key(&mut self, name: &str) {
        self.out.push(if self.out.is_empty() { b'{' } else { b',' });
        self.string(name);
        self.out.push(b':');
    }

    fn member(&mut self, name: &str, value: &(impl serde::Serialize + ?Sized)) {
        self.key(name);
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.out, value);
    }

    /// A string member: most (names, uids, kinds) need no escape, and are
    /// copied between quotes without serde_json's walk of each byte.
    fn str_member(&mut self, name: &str, value: &str) {
        self.key(name);
        self.string(value);
    }

    fn string(&mut self, s: &str) {
        if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.out.push(b'"');
            self.out.extend_from_slice(s.as_bytes());
            self.out.push(b'"');
        } else {
            // Writing into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut self.out, s);
        }
    }

    /// The members as one JSON object's text.
    fn into_object(mut self) -> Result<String, std::string::FromUtf8Error> {
        if self.out.is_empty() {
            self.out.push(b'{');
        }
        self.out.push(b'}');
        String::from_utf8(self.out)
    }
}

impl Visit for Members {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.str_member(field.name(), value);
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.member(field.name(), &value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.member(field.name(), &value);
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.member(field.name(), &value);
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        // NaN and infinities as null, as a `serde_json::Value` has them.
        self.member(field.name(), &serde_json::Number::from_f64(value));
    }
    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        self.member(field.name(), value);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // Fields tracing-log adds carry the log record's metadata, which
        // the line has already.
        let name = field.name();
        if !name.starts_with("log.") {
            // As `JsonFields` does for debug values alone.
            let name = name.strip_prefix("r#").unwrap_or(name);
            self.str_member(name, &format!("{value:?}"));
        }
    }
}

/// Appends the members of the JSON object `added` to the JSON object
/// `object`, both as texts (`{"a":1}` and `{"b":2}` make `{"a":1,"b":2}`).
fn append_members(object: &mut String, added: &str) {
    let Some(members) = added
        .strip_prefix('{')
        .and_then(|a| a.strip_suffix('}'))
        .filter(|m| !m.is_empty())
    else {
        return;
    };
    if !object.ends_with('}') {
        return;
    }
    object.pop();
    if object.len() > 1 {
        object.push(',');
    }
    object.push_str(members);
    object.push('}');
}

/// Collects an event's fields into the line's map.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().into(), Value::String(value.into()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::Bool(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        // NaN and infinities have no JSON number: they stay text.
        let v = serde_json::Number::from_f64(value)
            .map_or_else(|| Value::String(value.to_string()), Value::Number);
        self.0.insert(field.name().into(), v);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        // A debug text that is a JSON array or object (from `Json`, or a
        // list of plain strings) is kept as JSON; anything else is text.
        let structured =
            field.name() != "message" && matches!(text.as_bytes().first(), Some(b'[' | b'{'));
        let v = structured
            .then(|| serde_json::from_str::<Value>(&text).ok())
            .flatten()
            .unwrap_or(Value::String(text));
        self.0.insert(field.name().into(), v);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer into a shared buffer, to read the lines back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn json_lines(emit: impl FnOnce()) -> Vec<Value> {
        let buffer = Buffer::default();
        let out = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || out.clone())
            .with_ansi(false)
            .fmt_fields(SpanJson)
            .event_format(JsonLines)
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = buffer.0.lock().expect("buffer").clone();
        String::from_utf8(bytes)
            .expect("UTF-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
            .collect()
    }

    #[test]
    fn lists_and_maps_are_json_and_span_fields_are_kept() {
        let lines = json_lines(|| {
            let span =
                tracing::info_span!("admission", user = "alice", kind = tracing::field::Empty);
            span.record("kind", "CronTab");
            let _entered = span.enter();
            let rules = vec![serde_json::json!({"field": "spec.x", "message": "too big"})];
            tracing::info!(
                failed_rules = ?Json(&rules),
                names = ?["a", "b"],
                delay = ?std::time::Duration::from_millis(1500),
                count = 3,
                "denied"
            );
        });
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert_eq!(line["message"], "denied");
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["failed_rules"][0]["message"], "too big");
        assert_eq!(line["names"], serde_json::json!(["a", "b"]));
        // Not JSON: stays the debug text.
        assert_eq!(line["delay"], "1.5s");
        assert_eq!(line["count"], 3);
        assert_eq!(line["span"]["name"], "admission");
        assert_eq!(line["span"]["user"], "alice");
        assert_eq!(line["span"]["kind"], "CronTab");
        assert!(line["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert!(line["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("celhook")));
    }

    #[test]
    fn span_fields_recorded_one_by_one_make_one_object() {
        let lines = json_lines(|| {
            let span = tracing::info_span!(
                "admission",
                uid = tracing::field::Empty,
                user = tracing::field::Empty,
                outcome = tracing::field::Empty,
                objects = tracing::field::Empty
            );
            span.record("uid", "7d1f");
            span.record("user", "quote\" and \\ slash");
            span.record("objects", 3);
            span.record("outcome", "allowed");
            // Recorded again: the later value is the one logged.
            span.record("outcome", "denied");
            let _entered = span.enter();
            tracing::info!("answered");
        });
        let span = &lines[0]["span"];
        assert_eq!(span["uid"], "7d1f");
        assert_eq!(span["user"], "quote\" and \\ slash");
        assert_eq!(span["objects"], 3);
        assert_eq!(span["outcome"], "denied");
        assert_eq!(span.as_object().map(|m| m.len()), Some(5), "{span}");
    }

    /// Formats each event's fields with `JsonFields` and with
    /// [`SpanJson`], for comparing the two.
    #[derive(Clone, Default)]
    struct BothFormats(Arc<Mutex<Vec<(String, String)>>>);

    impl<S: Subscriber> tracing_subscriber::Layer<S> for BothFormats {
        fn on_event(&self, event: &Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            let (mut theirs, mut ours) = (String::new(), String::new());
            tracing_subscriber::fmt::format::JsonFields::new()
                .format_fields(Writer::new(&mut theirs), event)
                .expect("JsonFields");
            SpanJson
                .format_fields(Writer::new(&mut ours), event)
                .expect("SpanJson");
            self.0.lock().expect("pairs").push((theirs, ours));
        }
    }

    #[test]
    fn span_fields_are_the_values_json_fields_writes() {
        use tracing_subscriber::layer::SubscriberExt;
        let both = BothFormats::default();
        let subscriber = tracing_subscriber::registry().with(both.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(
                uid = "7d1f",
                quoted = "a \"b\" \\ c\n\u{1}",
                yes = true,
                small = -3i64,
                big = u64::MAX,
                ratio = 1.5f64,
                nan = f64::NAN,
                r#type = "raw",
                r#loop = ?"raw debug",
                debug = ?Some("x"),
                shown = %"display \"text\"",
                "message with \"quotes\""
            );
            tracing::info!(only = 1);
        });
        let pairs = both.0.lock().expect("pairs").clone();
        assert_eq!(pairs.len(), 2);
        for (theirs, ours) in pairs {
            let theirs: Value = serde_json::from_str(&theirs).expect("JsonFields writes JSON");
            let ours: Value = serde_json::from_str(&ours).expect("SpanJson writes JSON");
            assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn members_append_to_any_object() {
        let mut object = String::from("{}");
        append_members(&mut object, r#"{"a":1}"#);
        assert_eq!(object, r#"{"a":1}"#);
        append_members(&mut object, "{}");
        assert_eq!(object, r#"{"a":1}"#);
        append_members(&mut object, r#"{"b":"}","c":[1]}"#);
        assert_eq!(object, r#"{"a":1,"b":"}","c":[1]}"#);
    }

    #[test]
    fn a_message_that_looks_like_json_stays_text() {
        let lines = json_lines(|| tracing::warn!("[1, 2]"));
        assert_eq!(lines[0]["message"], "[1, 2]");
    }

    #[test]
    fn the_default_filter_parses_and_quiets_the_http_libraries() {
        let filter = EnvFilter::builder()
            .parse(DEFAULT_FILTER)
            .expect("valid directives");
        let text = filter.to_string();
        assert!(
            text.contains("h2=warn") && text.contains("rustls=warn"),
            "{text}"
        );
    }
}
