//! The documents the editor has open, as it last sent them. A Composition
//! (`.yaml`) is shown to starlark_lsp as its first Starlark step's inline
//! `source`, on the same lines with the block's indentation taken off, so
//! its parser, completion and go-to-definition work on the script; the
//! front translates columns by that indentation both ways.

use std::collections::HashMap;
use std::sync::Mutex;

/// One open document.
#[derive(Debug, Clone)]
pub struct Document {
    /// What the editor holds.
    pub text: String,
    /// Whether it is a YAML file.
    pub yaml: bool,
    /// For a Composition: where its inline script is.
    pub block: Option<Block>,
}

/// An inline script in a YAML file: its lines and their indentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The first line of the script (0-based).
    pub first: usize,
    /// One past its last line.
    pub end: usize,
    /// The indentation taken off each line.
    pub indent: usize,
}

impl Block {
    /// Whether `line` is inside the script.
    pub fn holds(&self, line: usize) -> bool {
        (self.first..self.end).contains(&line)
    }
}

/// Whether a document is a YAML file.
pub fn is_yaml(uri: &str) -> bool {
    std::path::Path::new(uri)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

impl Document {
    /// A document as the editor sent it.
    pub fn new(uri: &str, text: String) -> Document {
        let yaml = is_yaml(uri);
        let block = if yaml {
            crate::check::inline_source(&text).map(|(source, (first, indent))| Block {
                first,
                end: first + source.lines().count(),
                indent,
            })
        } else {
            None
        };
        Document { text, yaml, block }
    }

    /// What starlark_lsp is given: the text itself, or a Composition's
    /// script on its own lines (every other line empty).
    pub fn starlark(&self) -> String {
        let Some(block) = self.block else {
            return if self.yaml {
                String::new()
            } else {
                self.text.clone()
            };
        };
        let mut out = String::with_capacity(self.text.len());
        for (i, line) in self.text.lines().enumerate() {
            if block.holds(i) {
                out.push_str(line.get(block.indent..).unwrap_or_default());
            }
            out.push('\n');
        }
        out
    }

    /// The columns to add to starlark_lsp's positions on `line`.
    pub fn shift(&self, line: usize) -> usize {
        self.block.filter(|b| b.holds(line)).map_or(0, |b| b.indent)
    }
}

impl Document {
    /// The top-level names its script binds (none when it does not parse).
    pub fn bound_names(&self) -> std::collections::HashSet<String> {
        crate::syntax::parse_quietly("s.star", &self.starlark())
            .map(|(ast, _)| crate::check::top_level_names(&ast))
            .unwrap_or_default()
    }
}

/// The URI text an editor uses for a starlark_lsp URI (the key of
/// [`Documents`]).
pub fn editor_uri(uri: &starlark_lsp::server::LspUri) -> Option<String> {
    lsp_types::Uri::try_from(uri)
        .ok()
        .map(|u| u.as_str().to_owned())
}

/// The open documents, by URI.
#[derive(Default)]
pub struct Documents {
    open: Mutex<HashMap<String, Document>>,
}

impl Documents {
    /// Records a document's new text; returns what starlark_lsp is given.
    pub fn set(&self, uri: &str, text: String) -> String {
        let doc = Document::new(uri, text);
        let starlark = doc.starlark();
        self.lock().insert(uri.to_owned(), doc);
        starlark
    }

    /// Forgets a closed document.
    pub fn close(&self, uri: &str) {
        self.lock().remove(uri);
    }

    /// The document at `uri`, if open.
    pub fn get(&self, uri: &str) -> Option<Document> {
        self.lock().get(uri).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Document>> {
        // A panic elsewhere leaves the map whole: each update is one insert.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::Document;

    #[test]
    fn a_compositions_script_keeps_its_lines() {
        let yaml = "kind: Composition\nspec:\n  pipeline:\n  - step: s\n    functionRef:\n      name: f\n    input:\n      apiVersion: starlark.fn.crossplane.io/v1alpha1\n      kind: StarlarkInput\n      spec:\n        source: |\n          x = 1\n          Resource(\"a\", {})\n";
        let doc = Document::new("file:///c.yaml", yaml.to_owned());
        let block = doc.block.expect("the inline script");
        assert_eq!((block.first, block.end, block.indent), (11, 13, 10));
        let lines: Vec<String> = doc.starlark().lines().map(str::to_owned).collect();
        assert_eq!(lines[11], "x = 1");
        assert_eq!(lines[12], "Resource(\"a\", {})");
        assert!(lines[..11].iter().all(String::is_empty));
        assert_eq!(doc.shift(12), 10);
        assert_eq!(doc.shift(3), 0);
    }
}
