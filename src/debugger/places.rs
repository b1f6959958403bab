//! Where the scripts a render runs are in the user's files. The runner
//! names a step's inline `source` `composition.star` and an inline module
//! by its key; the editor knows them as lines of the Composition's YAML.
//! A module read from a file is named by its path.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::input::INLINE_FILENAME;

/// A script written inside the Composition's YAML.
struct Inline {
    /// `composition.star` for a step's source, else the module's key.
    name: String,
    /// What the runner compiles of it, to tell steps apart.
    compiled_text: String,
    /// How many lines it has.
    lines: usize,
    /// The 0-based YAML line and the indentation its first line starts at.
    line: usize,
    indent: usize,
}

/// A place in a user's file: its path and the line (0-based) and column a
/// script's first line starts at there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

/// The scripts of one render and where they are.
pub struct Places {
    composition: PathBuf,
    base: PathBuf,
    inline: Vec<Inline>,
    /// The step whose `composition.star` was compiled last: the one running.
    step: Mutex<Option<usize>>,
}

impl Places {
    /// The places of the Composition at `composition` (absolute) whose YAML
    /// is `text`; modules named by a relative path are found from `base`.
    pub fn new(composition: PathBuf, text: &str, base: PathBuf) -> Self {
        let inline = crate::check::inline_scripts(text)
            .into_iter()
            .map(|(name, text, (line, indent))| Inline {
                compiled_text: crate::syntax::prepass::prepass(&text)
                    .map(|p| p.text)
                    .unwrap_or_default(),
                lines: text.lines().count().max(1),
                name,
                line,
                indent,
            })
            .collect();
        Places {
            composition,
            base,
            inline,
            step: Mutex::new(None),
        }
    }

    /// Notes that the runner compiled `name` from `text`: for a step's
    /// source, that step is the one running.
    pub fn compiled(&self, name: &str, text: &str) {
        if name != INLINE_FILENAME {
            return;
        }
        let steps = || {
            self.inline
                .iter()
                .enumerate()
                .filter(|(_, s)| s.name == name)
        };
        // A source with star imports is compiled expanded: the first step
        // stands in for it.
        let found = steps()
            .find(|(_, s)| s.compiled_text == text)
            .or_else(|| steps().next())
            .map(|(i, _)| i);
        *self
            .step
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = found;
    }

    /// Where the script the runner names `name` starts.
    pub fn of(&self, name: &str) -> Place {
        let step = *self
            .step
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let inline = if name == INLINE_FILENAME {
            step.and_then(|i| self.inline.get(i))
        } else {
            self.inline.iter().find(|s| s.name == name)
        };
        match inline {
            Some(s) => Place {
                path: self.composition.clone(),
                line: s.line,
                column: s.indent,
            },
            None => Place {
                path: self.base.join(name),
                line: 0,
                column: 0,
            },
        }
    }

    /// The script a breakpoint at `line` (0-based) of `path` is in, as the
    /// runner names it, and the line in that script; `None` outside every
    /// script of the render.
    pub fn script_line(&self, path: &Path, line: usize, name: &str) -> Option<usize> {
        let place = self.of(name);
        if !same_file(&place.path, path) {
            return None;
        }
        if place.path != self.composition {
            return Some(line);
        }
        let step = *self
            .step
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.inline
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                s.name == name && (name != INLINE_FILENAME || step.is_none_or(|at| at == *i))
            })
            .find(|(_, s)| (s.line..s.line + s.lines).contains(&line))
            .map(|(_, s)| line - s.line)
    }

    /// Whether `line` (0-based) of the Composition is inside one of its
    /// scripts.
    pub fn in_composition(&self, path: &Path, line: usize) -> Option<bool> {
        same_file(&self.composition, path).then(|| {
            self.inline
                .iter()
                .any(|s| (s.line..s.line + s.lines).contains(&line))
        })
    }
}

/// Whether two paths name one file (compared as given when either is not
/// there).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "\
apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: two
spec:
  compositeTypeRef:
    apiVersion: example.org/v1
    kind: XThing
  mode: Pipeline
  pipeline:
    - step: one
      functionRef:
        name: function-starlark
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          source: |
            a = 1
            b = 2
          modules:
            lib.star: |
              def f():
                  return 1
    - step: two
      functionRef:
        name: function-starlark
      input:
        apiVersion: starlark.fn.crossplane.io/v1alpha1
        kind: StarlarkInput
        spec:
          source: |
            c = 3
";

    fn places() -> Places {
        Places::new(PathBuf::from("/c/comp.yaml"), YAML, PathBuf::from("/c"))
    }

    #[test]
    fn each_step_and_module_is_placed_at_its_yaml_lines() {
        let p = places();
        assert_eq!(p.of("lib.star").line, 22);
        assert_eq!(p.of("lib.star").column, 14);
        p.compiled(INLINE_FILENAME, "c = 3\n");
        assert_eq!(p.of(INLINE_FILENAME).line, 32);
        p.compiled(INLINE_FILENAME, "a = 1\nb = 2\n");
        assert_eq!(p.of(INLINE_FILENAME).line, 18);
        assert_eq!(p.of("other.star").path, PathBuf::from("/c/other.star"));
    }

    #[test]
    fn a_breakpoint_line_reaches_the_script_it_is_in() {
        let p = places();
        let yaml = Path::new("/c/comp.yaml");
        p.compiled(INLINE_FILENAME, "a = 1\nb = 2\n");
        assert_eq!(p.script_line(yaml, 19, INLINE_FILENAME), Some(1));
        assert_eq!(p.script_line(yaml, 32, INLINE_FILENAME), None);
        assert_eq!(p.script_line(yaml, 23, "lib.star"), Some(1));
        assert_eq!(p.script_line(yaml, 5, "lib.star"), None);
        p.compiled(INLINE_FILENAME, "c = 3\n");
        assert_eq!(p.script_line(yaml, 32, INLINE_FILENAME), Some(0));
        assert_eq!(p.in_composition(yaml, 3), Some(false));
        assert_eq!(p.in_composition(yaml, 23), Some(true));
        assert_eq!(p.in_composition(Path::new("/elsewhere.star"), 1), None);
    }
}
