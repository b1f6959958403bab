//! `yaml.decode`'s first stage: YAML text → a tree of nodes, as go-yaml
//! v2's parser builds it.
//!
//! The events come from libyaml-safer, a safe translation of libyaml, the
//! C library go-yaml v2's scanner and parser were ported from, so token
//! rules, line breaks (NEL, LS and PS are breaks in YAML 1.1) and error
//! texts agree. Where go-yaml v2 and libyaml 0.2.5 part ways, this module
//! follows go-yaml:
//!
//! - only `%YAML 1.1` documents are accepted;
//! - `\/` is not an escape in double-quoted scalars;
//! - a `?` ends a plain scalar in a flow collection (and is then out of
//!   place), and a `:` right before a flow indicator does not: it is text;
//! - a byte order mark is skipped only at the start of the input (go-yaml
//!   means to skip one at the start of any line but looks at the wrong
//!   place), elsewhere it is text;
//! - text may start with any character (libyaml-safer takes U+F000 to
//!   U+FFFF there for a broken byte order mark);
//! - a block scalar whose last line runs to the end of the input without a
//!   line break is read as libyaml reads it (libyaml-safer panics there), by
//!   parsing the input with an LS appended and taking the LS back out.
//!
//! libyaml-safer's other panics (a double-quoted scalar ending in `\`, a
//! tag followed by `,` in a flow collection) are caught and answered as
//! errors, and reading stops at the run's deadline: libyaml's scanner slows
//! with the square of the flow nesting depth.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, BufRead, Read};
use std::time::Instant;

use libyaml_safer::{
    ErrorKind, Event, EventData, MappingStyle, Parser, ScalarStyle, Scanner, SequenceStyle,
    TokenData,
};

use crate::builtins::json::MAX_DEPTH;

/// A parsed node, as go-yaml's parser builds them.
pub(super) enum YNode {
    Scalar {
        value: String,
        tag: String,
        /// Plain and untagged (or tagged `!`): subject to resolution.
        implicit: bool,
    },
    Seq(Vec<usize>),
    /// Keys and values, alternating.
    Map(Vec<usize>),
    Alias {
        target: usize,
        name: String,
    },
}

/// The nodes of a document and the index of its root.
pub(super) type Document = (Vec<YNode>, usize);

/// The line separator appended to inputs that end inside a line.
const SENTINEL: char = '\u{2028}';

/// The nodes of the first document of `source` (`None` for an empty
/// stream). Reading stops with an error once `deadline` has passed.
pub(super) fn parse_first_document(
    source: &str,
    deadline: Option<Instant>,
) -> Result<Option<Document>, String> {
    // go-yaml reads an empty input as a single line break.
    if source.is_empty() {
        let job = Job {
            source,
            bom: None,
            colon: None,
            deadline,
            refused_colon: Cell::default(),
        };
        return job.parse("\n").map(|p| p.document);
    }
    // The reader drops a leading byte order mark, and marks count from
    // after it.
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let (text, bom) = hide_inner_byte_order_marks(source);
    // In a flow collection libyaml refuses a `:` directly before `,`, `?`,
    // `[`, `]`, `{` or `}` inside a plain scalar, where go-yaml reads it as
    // text: each such `:` is replaced by a stand-in that reads as text, and
    // turned back in scalar values.
    let mut text = text;
    let mut colon = None;
    for _ in 0..MAX_REFUSED_COLONS {
        let job = Job {
            source: &text,
            bom,
            colon,
            deadline,
            refused_colon: Cell::default(),
        };
        let result = read(&job);
        let Some(at) = job.refused_colon.get().filter(|_| result.is_err()) else {
            return result;
        };
        if !text.get(at..).is_some_and(|t| t.starts_with(':')) {
            return result;
        }
        let Some(stand_in) =
            colon.or_else(|| ('\u{e100}'..='\u{e1ff}').find(|&c| !text.contains(c)))
        else {
            return result;
        };
        colon = Some(stand_in);
        text.to_mut()
            .replace_range(at..=at, stand_in.encode_utf8(&mut [0; 4]));
    }
    Err("yaml: found unexpected ':'".to_owned())
}

/// The most `:` characters [`parse_first_document`] reads as text.
const MAX_REFUSED_COLONS: usize = 64;

/// The nodes of `job`'s first document.
fn read(job: &Job) -> Result<Option<Document>, String> {
    if job.source.ends_with(is_break) {
        return job.parse(job.source).map(|p| p.document);
    }
    // libyaml-safer panics on a block scalar whose content runs to the end
    // of the input. With a line break appended no block scalar does; libyaml
    // keeps an LS in a block scalar's value, so the one it read from the
    // sentinel can be taken out again, which leaves what libyaml reads
    // without it. Nothing else that parses changes. A failure may: an error
    // at the end of the input is a line further down, so the input is
    // parsed as it is unless that would run into the panic.
    let padded = format!("{}{SENTINEL}", job.source);
    match job.parse(&padded) {
        Ok(mut parsed) => {
            if let Some((nodes, _)) = &mut parsed.document {
                for &index in &parsed.reached_end {
                    if let YNode::Scalar { value, .. } = &mut nodes[index]
                        && value.ends_with(SENTINEL)
                    {
                        value.pop();
                    }
                }
            }
            Ok(parsed.document)
        }
        Err(e) if e == TIME_LIMIT || job.block_scalar_reaches_end(&padded) => Err(e),
        Err(_) => job.parse(job.source).map(|p| p.document),
    }
}

/// What the error says when the deadline passes during a read.
const TIME_LIMIT: &str = "yaml: the script's time limit ran out while reading this document \
                          (flow collections nested thousands deep are slow to read)";

/// One document's text and how to read it.
struct Job<'s> {
    /// The text, its leading byte order mark dropped and inner ones hidden.
    source: &'s str,
    /// What stands for a byte order mark in `source`.
    bom: Option<char>,
    /// What stands for a `:` libyaml refused in `source`.
    colon: Option<char>,
    deadline: Option<Instant>,
    /// Where the last parse failed on a `:` libyaml refuses and go-yaml
    /// reads as text.
    refused_colon: Cell<Option<usize>>,
}

impl Job<'_> {
    /// Parses `input`, which is the source or the source with something
    /// appended.
    fn parse(&self, input: &str) -> Result<Parsed, String> {
        guarded(|| self.parse_events(input))
            .unwrap_or_else(|panic| Err(panic_error(self.source, &panic)))
    }

    /// [`Job::parse`], unguarded.
    fn parse_events(&self, input: &str) -> Result<Parsed, String> {
        let mut parser = Parser::new();
        parser.set_input(TimedInput::new(input, self.deadline));
        let mut builder = Builder {
            bom: self.bom,
            colon: self.colon,
            ..Builder::default()
        };
        loop {
            let event = parser.parse().map_err(|e| {
                if e.problem() == "found unexpected ':'" {
                    let at = e.problem_mark().map(|m| m.index);
                    self.refused_colon
                        .set(at.and_then(|i| usize::try_from(i).ok()));
                }
                parser_error(&e)
            })?;
            if !builder.add(self.source, event)? {
                break;
            }
        }
        Ok(Parsed {
            document: builder.root.map(|r| (builder.nodes, r)),
            reached_end: builder.reached_end,
        })
    }

    /// Whether scanning `padded` (the source and a line break) comes to a
    /// block scalar that runs to the end of the source.
    fn block_scalar_reaches_end(&self, padded: &str) -> bool {
        guarded(|| {
            let mut scanner = Scanner::new();
            scanner.set_input(TimedInput::new(padded, self.deadline));
            scanner.map_while(Result::ok).any(|token| {
                matches!(
                    token.data,
                    TokenData::Scalar {
                        style: ScalarStyle::Literal | ScalarStyle::Folded,
                        ..
                    }
                ) && usize::try_from(token.end_mark.index).unwrap_or(usize::MAX)
                    >= self.source.len()
            })
        })
        .unwrap_or(false)
    }
}

/// The input as libyaml-safer reads it: in pieces of at most [`PIECE`]
/// bytes, failing once the deadline has passed. libyaml's scanner spends
/// time on every token in proportion to how deeply flow collections are
/// nested, so a document of a few hundred kilobytes of `[` takes minutes;
/// this stops it with the run rather than leaving it to outlive the run.
///
/// libyaml-safer also takes any input that starts with the byte 0xEF for a
/// byte order mark and fails when it is another character (U+F000 to
/// U+FFFF), so the input is always read with a real mark in front, which it
/// drops; marks count from after it.
struct TimedInput<'a> {
    /// The byte order mark, then the text.
    parts: [&'a [u8]; 2],
    deadline: Option<Instant>,
}

/// How many bytes the reader gets at a time.
const PIECE: usize = 1024;

impl<'a> TimedInput<'a> {
    fn new(text: &'a str, deadline: Option<Instant>) -> Self {
        TimedInput {
            parts: ["\u{feff}".as_bytes(), text.as_bytes()],
            deadline,
        }
    }

    /// The part being read.
    fn current(&self) -> usize {
        usize::from(self.parts[0].is_empty())
    }
}

impl Read for TimedInput<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for TimedInput<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(io::Error::other(TIME_LIMIT));
        }
        let part = self.parts[self.current()];
        Ok(&part[..part.len().min(PIECE)])
    }

    fn consume(&mut self, amount: usize) {
        let current = self.current();
        self.parts[current] = &self.parts[current][amount..];
    }
}

/// `source` (its own leading byte order mark dropped) with every other
/// mark but one at its very start replaced by a private-use character that
/// occurs nowhere in it, and that character. A mark right after the leading
/// one is at the start of a line to both libyaml and go-yaml, which skip
/// it; elsewhere libyaml skips one at the start of a line and go-yaml (but
/// for a quirk of its buffer) never does, while both read any other
/// non-ASCII letter as text. So the stand-in is read as go-yaml reads the
/// mark, and is turned back in scalar values. Both are three bytes long, so
/// marks keep their offsets.
fn hide_inner_byte_order_marks(source: &str) -> (Cow<'_, str>, Option<char>) {
    const BOM: char = '\u{feff}';
    let (head, rest) = source.split_at(if source.starts_with(BOM) {
        BOM.len_utf8()
    } else {
        0
    });
    if !rest.contains(BOM) {
        return (Cow::Borrowed(source), None);
    }
    let Some(stand_in) = ('\u{e000}'..='\u{e0ff}').find(|&c| !source.contains(c)) else {
        return (Cow::Borrowed(source), None);
    };
    let text = format!(
        "{head}{}",
        rest.replace(BOM, stand_in.encode_utf8(&mut [0; 4]))
    );
    (Cow::Owned(text), Some(stand_in))
}

/// A parse of one input.
struct Parsed {
    document: Option<Document>,
    /// Block scalars that run to the end of the input.
    reached_end: Vec<usize>,
}

/// Builds the node tree of the first document from parser events.
#[derive(Default)]
struct Builder {
    nodes: Vec<YNode>,
    anchors: HashMap<String, usize>,
    /// Open collections, innermost last, with the character that closes
    /// the flow collection each is in (a single-pair mapping in a flow
    /// sequence is in the sequence), `None` in block context.
    open: Vec<(usize, Option<char>)>,
    root: Option<usize>,
    reached_end: Vec<usize>,
    /// What stands for a byte order mark in the text.
    bom: Option<char>,
    /// What stands for a `:` in the text.
    colon: Option<char>,
}

impl Builder {
    /// Takes in one event; `false` once the first document is complete.
    fn add(&mut self, source: &str, event: Event) -> Result<bool, String> {
        let (anchor, opens) = match event.data {
            EventData::StreamStart { .. } => return Ok(true),
            EventData::DocumentStart {
                version_directive, ..
            } => {
                if version_directive.is_some_and(|v| (v.major, v.minor) != (1, 1)) {
                    return Err(incompatible_version(source));
                }
                return Ok(true);
            }
            EventData::StreamEnd | EventData::DocumentEnd { .. } => return Ok(false),
            EventData::SequenceEnd | EventData::MappingEnd => {
                self.open.pop();
                return Ok(true);
            }
            EventData::Alias { anchor } => {
                let Some(&target) = self.anchors.get(&anchor) else {
                    return Err(format!("yaml: unknown anchor '{anchor}' referenced"));
                };
                self.nodes.push(YNode::Alias {
                    target,
                    name: anchor,
                });
                (None, None)
            }
            EventData::Scalar {
                anchor,
                tag,
                value,
                plain_implicit,
                style,
                ..
            } => {
                let start = usize::try_from(event.start_mark.index).unwrap_or(usize::MAX);
                let end = usize::try_from(event.end_mark.index).unwrap_or(usize::MAX);
                match style {
                    ScalarStyle::Plain => {
                        if let Some(&(_, Some(closing))) = self.open.last() {
                            check_flow_plain(source, start, end, closing)?;
                        }
                    }
                    ScalarStyle::DoubleQuoted => check_escapes(source, start, end)?,
                    ScalarStyle::Literal | ScalarStyle::Folded if end >= source.len() => {
                        self.reached_end.push(self.nodes.len());
                    }
                    _ => {}
                }
                let mut value = value;
                for (stand_in, original) in [(self.bom, "\u{feff}"), (self.colon, ":")] {
                    if let Some(stand_in) = stand_in
                        && value.contains(stand_in)
                    {
                        value = value.replace(stand_in, original);
                    }
                }
                self.nodes.push(YNode::Scalar {
                    value,
                    tag: tag.unwrap_or_default(),
                    implicit: plain_implicit,
                });
                (anchor, None)
            }
            EventData::SequenceStart { anchor, style, .. } => {
                self.nodes.push(YNode::Seq(Vec::new()));
                (anchor, Some((style == SequenceStyle::Flow).then_some(']')))
            }
            EventData::MappingStart { anchor, style, .. } => {
                self.nodes.push(YNode::Map(Vec::new()));
                let opening = usize::try_from(event.start_mark.index)
                    .ok()
                    .and_then(|i| source.get(i..))
                    .and_then(|rest| rest.chars().next());
                let closing = match (style, opening) {
                    (MappingStyle::Block, _) => None,
                    (_, Some('{')) => Some('}'),
                    _ => self.open.last().and_then(|&(_, c)| c),
                };
                (anchor, Some(closing))
            }
        };
        let index = self.nodes.len() - 1;
        if let Some(name) = anchor {
            self.anchors.insert(name, index);
        }
        match self.open.last().map(|&(p, _)| &mut self.nodes[p]) {
            Some(YNode::Seq(children) | YNode::Map(children)) => children.push(index),
            _ => {
                self.root.get_or_insert(index);
            }
        }
        if let Some(closing) = opens {
            self.open.push((index, closing));
            if self.open.len() > MAX_DEPTH {
                return Err(format!(
                    "yaml: line {}: exceeded max depth of {MAX_DEPTH}",
                    event.start_mark.line + 1
                ));
            }
        }
        Ok(true)
    }
}

/// go-yaml ends a plain scalar in a flow collection at a `?`, which then
/// starts a key where a `,` or the collection's end (`closing`) must come:
/// the parser error at the `?` (on the first line, shown without a line).
fn check_flow_plain(source: &str, start: usize, end: usize, closing: char) -> Result<(), String> {
    let Some(text) = source.get(start..end.min(source.len())) else {
        return Ok(());
    };
    match text.char_indices().skip(1).find(|&(_, c)| c == '?') {
        Some((at, _)) => Err(with_line(
            line_of(source, start + at),
            &format!("did not find expected ',' or '{closing}'"),
        )),
        None => Ok(()),
    }
}

/// Runs `f`, which drives libyaml-safer, turning a panic into its message.
///
/// libyaml-safer panics where libyaml reads the NUL after the input (a
/// double-quoted scalar ending in `\\`) and where libyaml-safer has a
/// `TODO` (a tag followed by `,` in a flow collection). Its panics are
/// answered as errors and kept out of the log.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    crate::panics::quietly(f)
}

/// The error for a parse of `source` that panicked with `message`.
fn panic_error(source: &str, message: &str) -> String {
    if message.starts_with("TODO") {
        // go-yaml reads the `,` as part of the tag.
        return "yaml: a tag followed directly by ',' in a flow collection is not \
                supported; put a space between them"
            .to_owned();
    }
    if source.ends_with('\\') {
        // What go-yaml makes of the NUL after the backslash.
        let at = source.len() - 1;
        let line = line_of(source, at);
        let line = if line == 0 { 0 } else { line + 1 };
        return with_line(line, "found unknown escape character");
    }
    format!("yaml: the YAML reader failed on this input ({message}); simplify the document")
}

/// go-yaml v2's rendering of a parser problem: `yaml: line N: PROBLEM`,
/// where N is the problem's line counted from one for scanner errors and
/// from zero for parser errors, else the context's line, and no line is
/// shown when that comes to 0.
fn parser_error(e: &libyaml_safer::Error) -> String {
    if e.kind() == ErrorKind::Io {
        // The only failure of the input is the deadline.
        return TIME_LIMIT.to_owned();
    }
    let problem_line = e.problem_mark().map_or(0, |m| m.line);
    let line = if problem_line != 0 {
        problem_line + u64::from(e.kind() == ErrorKind::Scanner)
    } else {
        e.context_mark().map_or(0, |m| m.line)
    };
    let problem = match e.problem() {
        "" => "unknown problem parsing YAML content",
        p => p,
    };
    with_line(line, problem)
}

/// `yaml: line N: PROBLEM`, without the line when it is 0.
fn with_line(line: u64, problem: &str) -> String {
    if line == 0 {
        format!("yaml: {problem}")
    } else {
        format!("yaml: line {line}: {problem}")
    }
}

/// YAML 1.1's line breaks.
fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The zero-based line of byte `at` in `source`, counting breaks as the
/// scanner does (CR LF is one).
fn line_of(source: &str, at: usize) -> u64 {
    let mut line = 0;
    let mut chars = source[..at.min(source.len())].chars().peekable();
    while let Some(c) = chars.next() {
        if is_break(c) && !(c == '\r' && chars.peek() == Some(&'\n')) {
            line += 1;
        }
    }
    line
}

/// go-yaml's error for a `%YAML` directive other than 1.1, a parser error
/// at the directive.
fn incompatible_version(source: &str) -> String {
    let mut at = 0;
    for line in source.split_inclusive(is_break) {
        if line.starts_with("%YAML") {
            break;
        }
        at += line.len();
    }
    with_line(line_of(source, at), "found incompatible YAML document")
}

/// go-yaml's scanner error for `\/`, which libyaml 0.2.5 reads as `/`, in
/// the double-quoted scalar at `source[start..end]`.
fn check_escapes(source: &str, start: usize, end: usize) -> Result<(), String> {
    let Some(text) = source.get(start..end.min(source.len())) else {
        return Ok(());
    };
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\\' && chars.next().is_some_and(|(_, e)| e == '/') {
            // Scanner errors count lines from one but, on the first line,
            // fall back to the scalar's own line, which is shown as 0.
            let line = line_of(source, start + i);
            let line = if line == 0 { 0 } else { line + 1 };
            return Err(with_line(line, "found unknown escape character"));
        }
    }
    Ok(())
}
