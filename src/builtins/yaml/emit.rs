//! The emitter: go-yaml v2's port of libyaml's, for the events its encoder
//! produces (block collections, implicit plain/quoted/literal scalars).

use super::node::{Node, natural_less, sort_by_less, yaml_float_text};
use super::resolve::{Resolved, is_base60_float, resolve_plain};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// libyaml's scalar analysis (its flags, as it keeps them).
#[derive(Clone, Copy)]
#[allow(clippy::struct_excessive_bools)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn byte_at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn width(c: u8) -> usize {
    if c & 0x80 == 0 {
        1
    } else if c & 0xE0 == 0xC0 {
        2
    } else if c & 0xF0 == 0xE0 {
        3
    } else if c & 0xF8 == 0xF0 {
        4
    } else {
        1
    }
}

fn is_printable(b: &[u8], i: usize) -> bool {
    let c = byte_at(b, i);
    let c1 = byte_at(b, i + 1);
    let c2 = byte_at(b, i + 2);
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && c1 >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && c1 < 0xA0)
        || c == 0xEE
        || (c == 0xEF && !(c1 == 0xBB && c2 == 0xBF) && !(c1 == 0xBF && (c2 == 0xBE || c2 == 0xBF)))
}

fn is_space(b: &[u8], i: usize) -> bool {
    byte_at(b, i) == b' '
}

fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(byte_at(b, i), b' ' | b'\t')
}

fn is_break(b: &[u8], i: usize) -> bool {
    let c = byte_at(b, i);
    let c1 = byte_at(b, i + 1);
    let c2 = byte_at(b, i + 2);
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && c1 == 0x85)
        || (c == 0xE2 && c1 == 0x80 && (c2 == 0xA8 || c2 == 0xA9))
}

fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || byte_at(b, i) == 0
}

fn analyze_scalar(value: &str) -> Analysis {
    let b = value.as_bytes();
    if b.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    // libyaml also tracks flow indicators; they only matter inside flow
    // collections, which hold no scalars here.
    let mut block_indicators = false;
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;

    if b.starts_with(b"---") || b.starts_with(b"...") {
        block_indicators = true;
    }
    let mut preceded_by_whitespace = true;
    let mut i = 0;
    while i < b.len() {
        let w = width(b[i]);
        let followed_by_whitespace = i + w >= b.len() || is_blank(b, i + w);
        let indicator = if i == 0 {
            match b[i] {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                | b'\'' | b'"' | b'%' | b'@' | b'`' => true,
                b'?' | b':' | b'-' => followed_by_whitespace,
                _ => false,
            }
        } else {
            match b[i] {
                b':' => followed_by_whitespace,
                b'#' => preceded_by_whitespace,
                _ => false,
            }
        };
        block_indicators |= indicator;
        if !is_printable(b, i) {
            special_characters = true;
        }
        if is_space(b, i) {
            if i == 0 {
                leading_space = true;
            }
            if i + w == b.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(b, i) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == b.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(b, i);
        i += w;
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.block_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// A scalar as go-yaml's encoder hands it to the emitter.
struct Scalar {
    value: String,
    style: Style,
}

/// go-yaml's `stringv`: the style it asks for.
fn string_scalar(s: &str) -> Scalar {
    let can_use_plain = resolve_plain(s) == Resolved::Str && !is_base60_float(s);
    let style = if s.contains('\n') {
        Style::Literal
    } else if can_use_plain {
        Style::Plain
    } else {
        Style::DoubleQuoted
    };
    Scalar {
        value: s.to_owned(),
        style,
    }
}

fn node_scalar(n: &Node) -> Option<Scalar> {
    let plain = |value: String| Scalar {
        value,
        style: Style::Plain,
    };
    Some(match n {
        Node::Null => plain("null".to_owned()),
        Node::Bool(b) => plain(b.to_string()),
        Node::Int(i) => plain(i.to_string()),
        Node::Float(f) => plain(yaml_float_text(*f)),
        Node::Str(s) => string_scalar(s),
        Node::Seq(_) | Node::Map(_) => return None,
    })
}

const BEST_INDENT: i64 = 2;
const BEST_WIDTH: usize = 80;

/// libyaml's emitter state, flags included.
#[allow(clippy::struct_excessive_bools)]
pub(super) struct Emitter {
    out: String,
    column: usize,
    indent: i64,
    indents: Vec<i64>,
    whitespace: bool,
    indention: bool,
    mapping_context: bool,
    simple_key_context: bool,
}

impl Emitter {
    pub(super) fn new() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
            mapping_context: false,
            simple_key_context: false,
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Copies the character at `*i` of `b` and advances.
    fn write(&mut self, b: &[u8], i: &mut usize) {
        let w = width(b[*i]).min(b.len() - *i);
        self.out
            .push_str(std::str::from_utf8(&b[*i..*i + w]).unwrap_or("\u{fffd}"));
        self.column += 1;
        *i += w;
    }

    fn write_all(&mut self, s: &str) {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            self.write(b, &mut i);
        }
    }

    fn write_break(&mut self, b: &[u8], i: &mut usize) {
        if b[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write(b, i);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent.max(0)).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        self.write_all(indicator);
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn emit_node(&mut self, n: &Node, mapping: bool, simple_key: bool) {
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match n {
            Node::Seq(items) if items.is_empty() => self.emit_empty("[", "]"),
            Node::Map(entries) if entries.is_empty() => self.emit_empty("{", "}"),
            Node::Seq(items) => self.emit_block_sequence(items),
            Node::Map(entries) => self.emit_block_mapping(entries),
            scalar => {
                if let Some(s) = node_scalar(scalar) {
                    self.emit_scalar(&s, analyze_scalar(&s.value));
                }
            }
        }
    }

    fn emit_empty(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn emit_block_sequence(&mut self, items: &[Node]) {
        let indentless = self.mapping_context && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.emit_node(item, false, false);
        }
        self.pop_indent();
    }

    fn emit_block_mapping(&mut self, entries: &[(String, Node)]) {
        self.increase_indent(false, false);
        let sorted = sort_by_less(
            entries.iter().collect(),
            &|a: &&(String, Node), b: &&(String, Node)| natural_less(&a.0, &b.0),
        );
        for (key, value) in sorted {
            self.write_indent();
            let key_scalar = string_scalar(key);
            let analysis = analyze_scalar(&key_scalar.value);
            let simple = !analysis.multiline && key_scalar.value.len() <= 128;
            if simple {
                self.mapping_context = true;
                self.simple_key_context = true;
                self.emit_scalar(&key_scalar, analysis);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.mapping_context = true;
                self.simple_key_context = false;
                self.emit_scalar(&key_scalar, analysis);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.emit_node(value, true, false);
        }
        self.pop_indent();
    }

    fn select_style(&self, s: &Scalar, a: Analysis) -> Style {
        let mut style = s.style;
        if self.simple_key_context && a.multiline {
            style = Style::DoubleQuoted;
        }
        // Only empty collections are written in flow style, so every
        // scalar is in block context (libyaml's `flow_level == 0`).
        if style == Style::Plain {
            if !a.block_plain_allowed {
                style = Style::SingleQuoted;
            }
            if s.value.is_empty() && self.simple_key_context {
                style = Style::SingleQuoted;
            }
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || self.simple_key_context) {
            style = Style::DoubleQuoted;
        }
        style
    }

    fn emit_scalar(&mut self, s: &Scalar, a: Analysis) {
        let style = self.select_style(s, a);
        self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_context;
        let value = s.value.as_bytes();
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, b: &[u8], allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < b.len() {
            if is_space(b, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !is_space(b, i + 1) {
                    self.write_indent();
                    i += width(b[i]);
                } else {
                    self.write(b, &mut i);
                }
                spaces = true;
            } else if is_break(b, i) {
                if !breaks && b[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(b, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(b, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, b: &[u8], allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < b.len() {
            if is_space(b, i) {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < b.len() - 1
                    && !is_space(b, i + 1)
                {
                    self.write_indent();
                    i += width(b[i]);
                } else {
                    self.write(b, &mut i);
                }
                spaces = true;
            } else if is_break(b, i) {
                if !breaks && b[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(b, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if b[i] == b'\'' {
                    self.put('\'');
                }
                self.write(b, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, b: &[u8], allow_breaks: bool) {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        // libyaml's `is_bom` looks at the start of the value, whatever the
        // position: a value starting with U+FEFF is escaped throughout.
        let bom = b.starts_with(&[0xEF, 0xBB, 0xBF]);
        let mut spaces = false;
        self.write_indicator("\"", true, false, false);
        let mut i = 0;
        while i < b.len() {
            if !is_printable(b, i) || bom || is_break(b, i) || b[i] == b'"' || b[i] == b'\\' {
                let w = width(b[i]).min(b.len() - i);
                let v = std::str::from_utf8(&b[i..i + w])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or(0xFFFD, u32::from);
                i += w;
                self.put('\\');
                match v {
                    0x00 => self.put('0'),
                    0x07 => self.put('a'),
                    0x08 => self.put('b'),
                    0x09 => self.put('t'),
                    0x0A => self.put('n'),
                    0x0B => self.put('v'),
                    0x0C => self.put('f'),
                    0x0D => self.put('r'),
                    0x1B => self.put('e'),
                    0x22 => self.put('"'),
                    0x5C => self.put('\\'),
                    0x85 => self.put('N'),
                    0xA0 => self.put('_'),
                    0x2028 => self.put('L'),
                    0x2029 => self.put('P'),
                    _ => {
                        let (letter, digits) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            self.put(char::from(HEX[((v >> (k * 4)) & 0xF) as usize]));
                        }
                    }
                }
                spaces = false;
            } else if is_space(b, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < b.len() - 1 {
                    self.write_indent();
                    if is_space(b, i + 1) {
                        self.put('\\');
                    }
                    i += width(b[i]);
                } else {
                    self.write(b, &mut i);
                }
                spaces = true;
            } else {
                self.write(b, &mut i);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_block_scalar_hints(&mut self, b: &[u8]) {
        if is_space(b, 0) || is_break(b, 0) {
            self.write_indicator("2", false, false, false);
        }
        let mut chomp = None;
        if b.is_empty() {
            chomp = Some("-");
        } else {
            let mut i = b.len() - 1;
            while i > 0 && b[i] & 0xC0 == 0x80 {
                i -= 1;
            }
            if !is_break(b, i) {
                chomp = Some("-");
            } else if i == 0 {
                chomp = Some("+");
            } else {
                i -= 1;
                while i > 0 && b[i] & 0xC0 == 0x80 {
                    i -= 1;
                }
                if is_break(b, i) {
                    chomp = Some("+");
                }
            }
        }
        if let Some(c) = chomp {
            self.write_indicator(c, false, false, false);
        }
    }

    fn write_literal(&mut self, b: &[u8]) {
        self.write_indicator("|", true, false, false);
        self.write_block_scalar_hints(b);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < b.len() {
            if is_break(b, i) {
                self.write_break(b, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(b, &mut i);
                self.indention = false;
                breaks = false;
            }
        }
    }

    /// The whole document: the root node, then the document end's indent.
    pub(super) fn document(mut self, root: &Node) -> String {
        self.emit_node(root, false, false);
        self.write_indent();
        self.out
    }
}
