//! The server's log: JSON lines on stderr, the shape the SDK's logging
//! writes, at less cost per line.
//!
//! The SDK (`function_sdk_rust::logging`) installs tracing-subscriber's
//! JSON formatter, which stores a span's fields as JSON text and parses
//! that text again for every line written inside the span. With one line
//! per request, that is about a tenth of the server's CPU on a trivial
//! script (docs/architecture.md, "The log line"). [`JsonLines`] writes the
//! same keys in the same order - `timestamp`, `level`, `fields`, `target`,
//! `filename`, `line_number`, then `span` and `spans` inside a span -
//! keeping each span's fields ready to copy. `--debug` writes the SDK's
//! human-readable lines, with colours only on a terminal: in a pod's log
//! (a pipe, a file) escape codes are noise. `RUST_LOG` selects levels as
//! the SDK documents.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::io::{IsTerminal, Write};

use chrono::{DateTime, SecondsFormat, Utc};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// The gRPC, HTTP/2 and TLS crates under the server, left at INFO by
/// `--debug` as the SDK leaves them: h2 logs every frame at DEBUG.
const TRANSPORT_TARGETS: [&str; 6] = ["h2", "hyper", "hyper_util", "tonic", "tower", "rustls"];

/// Installs the process's log: under `debug`, human-readable lines (the
/// SDK's shape and levels, coloured only when stderr is a terminal), else
/// [`JsonLines`] on stderr. Call once, before serving.
pub fn configure(debug: bool) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (filter, ignored) = levels(rust_log.as_deref(), debug);
    if debug {
        tracing_subscriber::fmt()
            .with_max_level(LevelFilter::TRACE)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_file(true)
            .with_line_number(true)
            .finish()
            .with(filter)
            .init();
    } else {
        tracing_subscriber::registry()
            .with(filter)
            .with(JsonLines::new(std::io::stderr))
            .init();
    }
    if let Some(error) = ignored {
        tracing::warn!(%error, "ignoring RUST_LOG, which takes only target=level directives");
    }
}

/// Which levels are logged: `RUST_LOG` when it is set, not blank and
/// valid, else INFO everywhere, or under `debug` DEBUG everywhere but the
/// transport (the SDK's rules); and why a `RUST_LOG` that was set was
/// ignored.
fn levels(rust_log: Option<&str>, debug: bool) -> (Targets, Option<String>) {
    let ignored = match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(set) => match set.parse() {
            Ok(filter) => return (filter, None),
            Err(e) => Some(e.to_string()),
        },
    };
    if !debug {
        return (Targets::new().with_default(LevelFilter::INFO), ignored);
    }
    let filter = TRANSPORT_TARGETS.iter().fold(
        Targets::new().with_default(LevelFilter::DEBUG),
        |filter, target| filter.with_target(*target, LevelFilter::INFO),
    );
    (filter, ignored)
}

/// A layer writing one JSON object per event, one `write` per line.
pub struct JsonLines<W> {
    make_writer: W,
}

impl<W, O> JsonLines<W>
where
    W: Fn() -> O + Send + Sync + 'static,
    O: Write,
{
    /// Lines go to a writer `make_writer` gives for each.
    pub fn new(make_writer: W) -> Self {
        Self { make_writer }
    }
}

/// A span's fields as JSON values, by name (the SDK's formatter sorts
/// them too: it reads them back into an ordered map).
#[derive(Default)]
struct SpanFields(BTreeMap<&'static str, String>);

impl<S, W, O> tracing_subscriber::Layer<S> for JsonLines<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: Fn() -> O + Send + Sync + 'static,
    O: Write,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = SpanFields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        // Recorded outside the lock: a field's `Debug` may log in the span.
        let mut recorded = SpanFields::default();
        values.record(&mut recorded);
        if let Some(fields) = span.extensions_mut().get_mut::<SpanFields>() {
            fields.0.extend(recorded.0);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let write = |line: &mut String| {
            line.clear();
            write_event(line, event, &ctx);
            line.push('\n');
            // A log line that cannot be written is dropped, as the SDK's is.
            let _ = (self.make_writer)().write_all(line.as_bytes());
        };
        // An event logged while this thread writes a line (from a field's
        // `Debug`, say) or while its thread-locals are torn down gets a
        // buffer of its own.
        let kept = LINE.try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut line) => {
                write(&mut line);
                // One huge line (a long error) does not stay allocated.
                if line.capacity() > KEPT_LINE_BYTES {
                    *line = String::new();
                }
                true
            }
            Err(_) => false,
        });
        if kept != Ok(true) {
            write(&mut String::new());
        }
    }
}

/// The most a thread's line buffer keeps between lines.
const KEPT_LINE_BYTES: usize = 64 << 10;

thread_local! {
    /// The line being written, kept per thread so that a line allocates
    /// nothing once the buffer has grown.
    static LINE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn write_event<S>(out: &mut String, event: &Event<'_>, ctx: &Context<'_, S>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let normalized = event.normalized_metadata();
    let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
    out.push_str("{\"timestamp\":\"");
    out.push_str(
        &DateTime::<Utc>::from(std::time::SystemTime::now())
            .to_rfc3339_opts(SecondsFormat::Micros, true),
    );
    out.push_str("\",\"level\":\"");
    out.push_str(meta.level().as_str());
    out.push_str("\",\"fields\":{");
    event.record(&mut EventFields { out, first: true });
    out.push_str("},\"target\":");
    push_str(out, meta.target());
    if let Some(file) = meta.file() {
        out.push_str(",\"filename\":");
        push_str(out, file);
    }
    if let Some(line) = meta.line() {
        let _ = write!(out, ",\"line_number\":{line}");
    }
    // As the SDK's formatter: `span` is the event's parent, else the span
    // the thread is in; `spans` is always the chain of the latter.
    let current = ctx.lookup_current();
    let parent = event.parent().and_then(|id| ctx.span(id));
    if let Some(span) = parent.as_ref().or(current.as_ref()) {
        out.push_str(",\"span\":");
        push_span(out, span);
        out.push_str(",\"spans\":[");
        if let Some(current) = &current {
            for (i, outer) in current.scope().from_root().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_span(out, &outer);
            }
        }
        out.push(']');
    }
    out.push('}');
}

fn push_span<R: for<'a> tracing_subscriber::registry::LookupSpan<'a>>(
    out: &mut String,
    span: &tracing_subscriber::registry::SpanRef<'_, R>,
) {
    out.push('{');
    if let Some(fields) = span.extensions().get::<SpanFields>() {
        for (name, value) in &fields.0 {
            push_str(out, name);
            out.push(':');
            out.push_str(value);
            out.push(',');
        }
    }
    out.push_str("\"name\":");
    push_str(out, span.metadata().name());
    out.push('}');
}

/// An event's fields in the order they were given (the message first),
/// written as they are visited.
struct EventFields<'a> {
    out: &'a mut String,
    first: bool,
}

impl EventFields<'_> {
    fn key(&mut self, field: &Field) -> &mut String {
        if !std::mem::take(&mut self.first) {
            self.out.push(',');
        }
        push_str(self.out, field.name());
        self.out.push(':');
        self.out
    }
}

impl Visit for EventFields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let out = self.key(field);
        out.push('"');
        let _ = write!(Escaped(out), "{value:?}");
        out.push('"');
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let out = self.key(field);
        push_str(out, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        let _ = write!(self.key(field), "{value}");
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        let _ = write!(self.key(field), "{value}");
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        let _ = write!(self.key(field), "{value}");
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        push_f64(self.key(field), value);
    }
}

impl Visit for SpanFields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // Fields a `log` record carries are in the line's metadata already.
        let name = field.name();
        if name.starts_with("log.") {
            return;
        }
        let name = name.strip_prefix("r#").unwrap_or(name);
        let mut text = String::from("\"");
        let _ = write!(Escaped(&mut text), "{value:?}");
        text.push('"');
        self.0.insert(name, text);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let mut text = String::new();
        push_str(&mut text, value);
        self.0.insert(field.name(), text);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name(), value.to_string());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name(), value.to_string());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name(), value.to_string());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        let mut text = String::new();
        push_f64(&mut text, value);
        self.0.insert(field.name(), text);
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        // An array of numbers, as serde_json writes bytes.
        let mut text = String::from("[");
        for (i, byte) in value.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let _ = write!(text, "{byte}");
        }
        text.push(']');
        self.0.insert(field.name(), text);
    }
}

/// A number as serde_json writes it: shortest round-trip digits, `null`
/// for NaN and the infinities.
fn push_f64(out: &mut String, value: f64) {
    match serde_json::to_string(&value) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("null"),
    }
}

/// `value` as a JSON string.
fn push_str(out: &mut String, value: &str) {
    out.push('"');
    let _ = Escaped(out).write_str(value);
    out.push('"');
}

/// Writes text into a JSON string, escaped as serde_json escapes: quote,
/// backslash and control characters.
struct Escaped<'a>(&'a mut String);

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Every character escaped is ASCII, and no byte of a longer
        // character is: the bytes can be scanned as they are.
        let mut plain = 0;
        for (i, b) in s.bytes().enumerate() {
            let escape = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                b if b < b' ' => "",
                _ => continue,
            };
            self.0.push_str(&s[plain..i]);
            if escape.is_empty() {
                let _ = write!(self.0, "\\u{b:04x}");
            } else {
                self.0.push_str(escape);
            }
            plain = i + 1;
        }
        self.0.push_str(&s[plain..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Lines written into a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl tracing_subscriber::fmt::MakeWriter<'_> for Captured {
        type Writer = Captured;
        fn make_writer(&self) -> Captured {
            self.clone()
        }
    }

    impl Captured {
        fn lines(&self) -> Vec<String> {
            let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
            text.lines().map(str::to_owned).collect()
        }
    }

    /// Events of every kind of field, outside and inside nested spans.
    fn emit() {
        tracing::info!(port = 9443_u16, insecure = true, "serving \"functions\"\n");
        let outer =
            tracing::info_span!("run_function", tag = %"tag-7", zeta = 2_i64, alpha = "a\tb");
        let outer_guard = outer.enter();
        tracing::info!(
            script = "composition.star",
            ticks = 18_446_744_073_709_551_615_u64,
            delta = -3_i64,
            duration_ms = 1.847_872,
            whole = 2.0,
            nan = f64::NAN,
            error = "",
            control = "\u{1}\u{1f}é",
            "run function"
        );
        let inner = tracing::info_span!("inner", r#type = "x");
        inner.record("type", "changed");
        let inner_guard = inner.enter();
        tracing::warn!(debug = ?vec!["a", "b"], "nested");
        let error: &(dyn std::error::Error + 'static) = &std::fmt::Error;
        tracing::error!(big = 1_i128 << 100, error, "typed");
        let other = tracing::info_span!("other", raw = tracing::field::Empty);
        other.record("raw", [1_u8, 2, 255].as_slice());
        tracing::info!(parent: &other, "given a parent");
        drop(inner_guard);
        drop(outer_guard);
        tracing::info!(parent: &other, "a parent outside any span");
    }

    /// The line with its timestamp replaced, and the timestamp.
    fn untimed(line: &str) -> (String, String) {
        let start = line.find("\"timestamp\":\"").unwrap() + 13;
        let end = start + line[start..].find('"').unwrap();
        (
            format!("{}{}", &line[..start], &line[end..]),
            line[start..end].to_owned(),
        )
    }

    #[test]
    fn lines_are_the_sdk_formatters_byte_for_byte_but_the_time() {
        let ours = Captured::default();
        let writer = ours.clone();
        let subscriber =
            tracing_subscriber::registry().with(JsonLines::new(move || writer.clone()));
        tracing::subscriber::with_default(subscriber, emit);
        let theirs = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(theirs.clone())
            .with_file(true)
            .with_line_number(true)
            .json()
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        let (ours, theirs) = (ours.lines(), theirs.lines());
        assert_eq!(ours.len(), 6, "{ours:#?}");
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(untimed(a).0, untimed(b).0);
            let time = untimed(a).1;
            assert_eq!(time.len(), "2026-11-26T12:34:41.400445Z".len(), "{time}");
            assert!(time.ends_with('Z') && time.as_bytes()[10] == b'T', "{time}");
        }
        assert_eq!(ours.len(), theirs.len());
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for text in [
            "plain",
            "q\"b\\s/",
            "nl\nre\rtab\tbs\u{8}ff\u{c}",
            "\u{1}\u{1f}\u{7f}",
            "é ✓ 😀\n",
            "",
        ] {
            let mut out = String::new();
            push_str(&mut out, text);
            assert_eq!(out, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn rust_log_chooses_levels_and_a_bad_one_is_named() {
        let info = |t: &Targets, target: &str, level| t.would_enable(target, &level);
        let (filter, ignored) = levels(None, false);
        assert!(
            info(&filter, "x", tracing::Level::INFO) && !info(&filter, "x", tracing::Level::DEBUG)
        );
        assert!(ignored.is_none());
        let (filter, _) = levels(Some("warn,function_starlark=debug"), true);
        assert!(!info(&filter, "h2", tracing::Level::INFO));
        assert!(info(
            &filter,
            "function_starlark::function",
            tracing::Level::DEBUG
        ));
        let (filter, ignored) = levels(Some("function_starlark=loud"), false);
        assert!(
            info(&filter, "x", tracing::Level::INFO) && !info(&filter, "x", tracing::Level::DEBUG)
        );
        assert!(ignored.is_some());
    }

    #[test]
    fn debug_logs_everything_at_debug_but_the_transport() {
        let (filter, _) = levels(None, true);
        assert!(filter.would_enable("function_starlark::function", &tracing::Level::DEBUG));
        for target in TRANSPORT_TARGETS {
            let module = format!("{target}::proto");
            assert!(
                !filter.would_enable(&module, &tracing::Level::DEBUG),
                "{target}"
            );
            assert!(
                filter.would_enable(&module, &tracing::Level::INFO),
                "{target}"
            );
        }
    }
}
