//! Static checks on the parsed AST that the Go interpreter makes at compile
//! time and starlark-rust does not.
//!
//! The only check so far is Go's rule against rebinding a top-level name
//! (go.starlark.net with `GlobalReassign` off): every top-level name has at
//! most one binding site. It mirrors Go's resolver:
//!
//! * assignments (including tuple and list unpacking), augmented
//!   assignments, `def` names and `for` targets anywhere in top-level control
//!   flow bind globals; a second binding site of a name already bound (as a
//!   global or by `load`) is "cannot reassign global|local X declared at
//!   FILE:LINE:COL";
//! * `load` binds file-local names; loading a name the file already loaded is
//!   "cannot reassign top-level X". Like Go, `load` does not look at globals
//!   bound before it;
//! * `def` bodies, lambdas and comprehensions bind locals and are skipped;
//! * subscript and attribute targets bind nothing.
//!
//! Names made up by the pre-pass (the loop variables of rewritten `while`
//! loops) are ignored; `sl__assert` is reported as `assert`.

use std::collections::HashMap;
use std::fmt;

use starlark::codemap::Span;
use starlark::syntax::AstModule;
use starlark::syntax::ast::{AssignTargetP, AstAssignTarget, AstStmt, StmtP};

use super::line_map::LineMap;
use crate::go::names::{RESERVED_PREFIX, unreserve};

/// A compile-time error found on the AST. The position is 1-based and refers
/// to the original source (before the pre-pass).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticError {
    /// 1-based line in the original source.
    pub line: usize,
    /// 1-based column (in characters) in the original source.
    pub column: usize,
    /// Go's message, without position.
    pub message: String,
}

impl fmt::Display for StaticError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for StaticError {}

/// Go's rule against rebinding a top-level name (GlobalReassign=false).
///
/// Reports the first violation in source order.
pub fn check_global_reassignment(ast: &AstModule, map: &LineMap) -> Result<(), StaticError> {
    let mut checker = Checker {
        ast,
        map,
        filename: ast.file_span(ast.statement().span).filename().to_owned(),
        file: HashMap::new(),
        globals: HashMap::new(),
    };
    checker.stmt(ast.statement())
}

/// Go's scope of a top-level binding, as its messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Bound by an assignment, `def` or `for` at top level.
    Global,
    /// Bound by `load` (file-local).
    Local,
}

impl Scope {
    fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Local => "local",
        }
    }
}

/// The first binding site of a name: its scope and 1-based original position.
#[derive(Debug, Clone, Copy)]
struct Binding {
    scope: Scope,
    line: usize,
    column: usize,
}

struct Checker<'a> {
    ast: &'a AstModule,
    map: &'a LineMap,
    filename: String,
    /// Names bound by `load`.
    file: HashMap<String, Binding>,
    /// Names bound by assignments, `def` and `for`.
    globals: HashMap<String, Binding>,
}

impl Checker<'_> {
    /// Walks a statement executed at top level.
    fn stmt(&mut self, stmt: &AstStmt) -> Result<(), StaticError> {
        match &stmt.node {
            StmtP::Statements(stmts) => {
                for s in stmts {
                    self.stmt(s)?;
                }
            }
            StmtP::If(_, body) => self.stmt(body)?,
            StmtP::IfElse(_, branches) => {
                self.stmt(&branches.0)?;
                self.stmt(&branches.1)?;
            }
            StmtP::For(f) => {
                self.target(&f.var)?;
                self.stmt(&f.body)?;
            }
            // The body of a function binds locals.
            StmtP::Def(d) => self.bind(&d.name.node.ident, d.name.span)?,
            StmtP::Assign(a) => self.target(&a.lhs)?,
            StmtP::AssignModify(lhs, _, _) => self.target(lhs)?,
            StmtP::Load(load) => {
                for arg in &load.args {
                    // `load("m", "x")`: the span is the string's, and Go's
                    // position is just after the opening quote.
                    let after_quote = arg.local.span == arg.their.span;
                    self.load(&arg.local.node.ident, arg.local.span, after_quote)?;
                }
            }
            StmtP::Break
            | StmtP::Continue
            | StmtP::Pass
            | StmtP::Return(_)
            | StmtP::Expression(_) => {}
        }
        Ok(())
    }

    /// Binds the names of an assignment or `for` target.
    fn target(&mut self, target: &AstAssignTarget) -> Result<(), StaticError> {
        match &target.node {
            AssignTargetP::Identifier(id) => self.bind(&id.node.ident, id.span),
            AssignTargetP::Tuple(items) => {
                for item in items {
                    self.target(item)?;
                }
                Ok(())
            }
            AssignTargetP::Index(_) | AssignTargetP::Dot(..) => Ok(()),
        }
    }

    /// A top-level binding by an assignment, `def` or `for`.
    fn bind(&mut self, name: &str, span: Span) -> Result<(), StaticError> {
        if is_synthetic(name) {
            return Ok(());
        }
        let (line, column) = self.position(span, false);
        let first = self.file.get(name).or_else(|| self.globals.get(name));
        if let Some(first) = first {
            return Err(StaticError {
                line,
                column,
                message: format!(
                    "cannot reassign {} {} declared at {}:{}:{}",
                    first.scope.name(),
                    unreserve(name),
                    self.filename,
                    first.line,
                    first.column
                ),
            });
        }
        self.globals.insert(
            name.to_owned(),
            Binding {
                scope: Scope::Global,
                line,
                column,
            },
        );
        Ok(())
    }

    /// A file-local binding by `load`.
    fn load(&mut self, name: &str, span: Span, after_quote: bool) -> Result<(), StaticError> {
        if is_synthetic(name) {
            return Ok(());
        }
        let (line, column) = self.position(span, after_quote);
        if self.file.contains_key(name) {
            return Err(StaticError {
                line,
                column,
                message: format!("cannot reassign top-level {}", unreserve(name)),
            });
        }
        self.file.insert(
            name.to_owned(),
            Binding {
                scope: Scope::Local,
                line,
                column,
            },
        );
        Ok(())
    }

    /// 1-based (line, column) of the start of `span` in the original source,
    /// one column further when `skip_quote`.
    fn position(&self, span: Span, skip_quote: bool) -> (usize, usize) {
        let begin = self.ast.file_span(span).resolve_span().begin;
        let (line, column) = self.map.original(begin.line, begin.column);
        (line + 1, column + 1 + usize::from(skip_quote))
    }
}

/// A name the pre-pass made up (not one it renamed), such as the loop
/// variable of a rewritten `while`.
fn is_synthetic(name: &str) -> bool {
    name.starts_with(RESERVED_PREFIX) && unreserve(name) == name
}

#[cfg(test)]
mod tests {
    use starlark::syntax::AstModule;

    use super::*;
    use crate::syntax::prepass::prepass;

    use crate::syntax::dialect;

    /// Pre-passes, parses and checks `source` as `t.star`; the error as
    /// `LINE:COL: MESSAGE`.
    fn check(source: &str) -> Result<(), String> {
        let pre = prepass(source).expect("pre-pass");
        let ast = AstModule::parse("t.star", pre.text, &dialect()).expect("parse");
        check_global_reassignment(&ast, &pre.map).map_err(|e| e.to_string())
    }

    fn error(source: &str) -> String {
        check(source).expect_err("a static error")
    }

    #[test]
    fn distinct_top_level_names_are_accepted() {
        let source = "a = 1\nb, c = 2, 3\ndef f():\n    pass\nfor i in []:\n    pass\nload(\"m.star\", \"L\")\nprint(a)\n";
        assert_eq!(check(source), Ok(()));
    }

    #[test]
    fn a_second_assignment_is_an_error_at_the_second_site() {
        assert_eq!(
            error("x = 1\nx = 2\nprint(x)\n"),
            "2:1: cannot reassign global x declared at t.star:1:1"
        );
    }

    #[test]
    fn an_augmented_assignment_after_an_assignment_is_an_error() {
        assert_eq!(
            error("x = [1]\nx += [2]\nprint(x)\n"),
            "2:1: cannot reassign global x declared at t.star:1:1"
        );
    }

    #[test]
    fn an_augmented_assignment_alone_is_a_binding_site() {
        assert_eq!(check("x += 1\n"), Ok(()));
        assert_eq!(
            error("x += 1\nx = 2\n"),
            "2:1: cannot reassign global x declared at t.star:1:1"
        );
    }

    #[test]
    fn unpacking_targets_bind_each_name() {
        assert_eq!(
            error("a, b = 1, 2\nb = 3\n"),
            "2:1: cannot reassign global b declared at t.star:1:4"
        );
        assert_eq!(
            error("[c, (d, e)] = [1, (2, 3)]\ne = 4\n"),
            "2:1: cannot reassign global e declared at t.star:1:9"
        );
        assert_eq!(
            error("a, a = 1, 2\n"),
            "1:4: cannot reassign global a declared at t.star:1:1"
        );
    }

    #[test]
    fn a_def_and_an_assignment_of_the_same_name_conflict_either_way() {
        assert_eq!(
            error("def f():\n    pass\nf = 1\n"),
            "3:1: cannot reassign global f declared at t.star:1:5"
        );
        assert_eq!(
            error("f = 1\ndef f():\n    pass\n"),
            "2:5: cannot reassign global f declared at t.star:1:1"
        );
        assert_eq!(
            error("def f():\n    pass\ndef f():\n    pass\n"),
            "3:5: cannot reassign global f declared at t.star:1:5"
        );
    }

    #[test]
    fn one_for_loop_rebinding_its_own_variable_is_accepted() {
        assert_eq!(check("for i in range(3):\n    print(i)\n"), Ok(()));
        assert_eq!(check("for k, v in {}.items():\n    print(k, v)\n"), Ok(()));
    }

    #[test]
    fn a_second_top_level_for_reusing_the_variable_is_an_error() {
        assert_eq!(
            error("for i in [1]:\n    pass\nfor i in [2]:\n    print(i)\n"),
            "3:5: cannot reassign global i declared at t.star:1:5"
        );
    }

    #[test]
    fn a_for_target_reusing_an_assigned_name_is_an_error() {
        assert_eq!(
            error("i = 0\nfor i in []:\n    pass\n"),
            "2:5: cannot reassign global i declared at t.star:1:1"
        );
    }

    #[test]
    fn bindings_inside_top_level_if_and_for_bodies_are_globals() {
        assert_eq!(
            error("for i in [1]:\n    for j in [2]:\n        pass\nj = 3\n"),
            "4:1: cannot reassign global j declared at t.star:2:9"
        );
        assert_eq!(
            error("if True:\n    for i in []:\n        pass\ni = 1\n"),
            "4:1: cannot reassign global i declared at t.star:2:9"
        );
        assert_eq!(
            error("total = 0\nfor i in [1, 2]:\n    total += i\n"),
            "3:5: cannot reassign global total declared at t.star:1:1"
        );
        // One site, executed on each iteration: fine in Go.
        assert_eq!(check("for i in [1, 2]:\n    y = i\n"), Ok(()));
    }

    #[test]
    fn the_same_global_assigned_in_both_branches_of_a_top_level_if_is_an_error() {
        assert_eq!(
            error("if True:\n    a = 1\nelse:\n    a = 2\nprint(a)\n"),
            "4:5: cannot reassign global a declared at t.star:2:5"
        );
        assert_eq!(
            error("if x:\n    a = 1\nelif y:\n    b = 1\nelse:\n    b = 2\n"),
            "6:5: cannot reassign global b declared at t.star:4:5"
        );
    }

    #[test]
    fn assignments_inside_functions_are_locals() {
        let source = "x = 1\ndef f():\n    x = 2\n    x += 1\n    for x in []:\n        pass\n    return x\ndef g(x):\n    x = 3\n    return x\n";
        assert_eq!(check(source), Ok(()));
    }

    #[test]
    fn a_def_nested_in_a_top_level_if_binds_its_name_but_not_its_body() {
        let source =
            "y = 0\nif True:\n    def f():\n        y = 1\n        y = 2\n        return y\n";
        assert_eq!(check(source), Ok(()));
        assert_eq!(
            error("f = 0\nif True:\n    def f():\n        pass\n"),
            "3:9: cannot reassign global f declared at t.star:1:1"
        );
    }

    #[test]
    fn lambdas_and_comprehensions_bind_no_globals() {
        let source = "xs = [i for i in range(3)]\ni = 1\nf = lambda j: j\nj = 2\nd = {k: v for k, v in []}\nk = 3\n";
        assert_eq!(check(source), Ok(()));
    }

    #[test]
    fn subscript_and_attribute_targets_are_not_bindings() {
        let source = "x = {}\nx[\"k\"] = 1\nx[\"k\"] += 1\ns = struct()\ns.f = 1\n";
        assert_eq!(check(source), Ok(()));
    }

    #[test]
    fn loading_the_same_name_twice_is_an_error_after_the_quote() {
        assert_eq!(
            error("load(\"mod.star\", \"L\")\nload(\"mod.star\", \"L\")\nprint(L)\n"),
            "2:19: cannot reassign top-level L"
        );
        assert_eq!(
            error("load(\"m.star\", \"L\", \"L\")\n"),
            "1:22: cannot reassign top-level L"
        );
        assert_eq!(
            error("load(\"m.star\", x = \"a\")\nload(\"m.star\", x = \"b\")\n"),
            "2:16: cannot reassign top-level x"
        );
    }

    #[test]
    fn assigning_a_loaded_name_is_an_error_naming_a_local() {
        assert_eq!(
            error("load(\"mod.star\", \"L\")\nL = 1\n"),
            "2:1: cannot reassign local L declared at t.star:1:19"
        );
        assert_eq!(
            error("load(\"m.star\", y = \"L\")\ndef y():\n    pass\n"),
            "2:5: cannot reassign local y declared at t.star:1:16"
        );
        assert_eq!(
            error("load(\"m.star\", \"L\")\nfor L in []:\n    pass\n"),
            "2:5: cannot reassign local L declared at t.star:1:17"
        );
    }

    #[test]
    fn a_load_after_a_global_of_the_same_name_is_accepted_like_go() {
        assert_eq!(check("L = 1\nload(\"m.star\", \"L\")\n"), Ok(()));
    }

    #[test]
    fn top_level_while_loop_variables_are_ignored() {
        let source = "n = [0]\nwhile len(n) < 3:\n    n.append(1)\nwhile len(n) < 5:\n    n.append(2)\nprint(n)\n";
        let pre = prepass(source).expect("pre-pass");
        assert_eq!(pre.text.matches("for _sl_w").count(), 2);
        assert_eq!(check(source), Ok(()));
    }

    #[test]
    fn a_rebinding_inside_a_top_level_while_is_reported_at_its_original_line() {
        // The inserted `if not (...): break` line shifts the body down one.
        assert_eq!(
            error("i = 0\nwhile i < 3:\n    i += 1\n"),
            "3:5: cannot reassign global i declared at t.star:1:1"
        );
        assert_eq!(
            error("while True:\n    break\nwhile False:\n    pass\nx = 1\nx = 2\n"),
            "6:1: cannot reassign global x declared at t.star:5:1"
        );
    }

    #[test]
    fn assert_used_once_as_a_name_is_accepted() {
        assert_eq!(check("assert = 1\nprint(assert)\n"), Ok(()));
    }

    #[test]
    fn assert_bound_twice_is_reported_as_assert() {
        assert_eq!(
            error("assert = 1\nassert = 2\n"),
            "2:1: cannot reassign global assert declared at t.star:1:1"
        );
        assert_eq!(
            error("load(\"m.star\", \"assert\")\nload(\"m.star\", \"assert\")\n"),
            "2:17: cannot reassign top-level assert"
        );
    }

    #[test]
    fn columns_are_mapped_back_through_renames_and_tabs() {
        // `assert` is renamed to a longer name before `y` on the same line.
        assert_eq!(
            error("assert = 1; y = 2\ny = 3\n"),
            "2:1: cannot reassign global y declared at t.star:1:13"
        );
        // A tab counts as one column in the original.
        assert_eq!(
            error("if True:\n\tx = 1\nx = 2\n"),
            "3:1: cannot reassign global x declared at t.star:2:2"
        );
        assert_eq!(
            error("x = 1\nif True:\n\tx = 2\n"),
            "3:2: cannot reassign global x declared at t.star:1:1"
        );
    }

    #[test]
    fn the_first_violation_in_source_order_is_reported() {
        assert_eq!(
            error("a = 1\nb = 1\nb = 2\na = 2\n"),
            "3:1: cannot reassign global b declared at t.star:2:1"
        );
    }

    #[test]
    fn the_error_displays_as_line_colon_column_colon_message() {
        let e = StaticError {
            line: 4,
            column: 5,
            message: "cannot reassign global a declared at f.star:2:5".to_owned(),
        };
        assert_eq!(
            e.to_string(),
            "4:5: cannot reassign global a declared at f.star:2:5"
        );
    }
}
