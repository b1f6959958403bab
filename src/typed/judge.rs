//! Constructor calls judged as written, by the rules the runtime applies
//! when they run (`crate::values::schema`), in its words: an unknown field
//! (naming the nearest), a required field missing, a literal of the wrong
//! type, a value outside the allowed ones. Nested objects written as dict
//! literals (or lists of them) are judged against their field's
//! constructor. What is computed is left to the run.

use std::collections::{HashMap, HashSet};

use starlark::codemap::Span;
use starlark::syntax::AstModule;
use starlark::syntax::ast::{ArgumentP, AstExpr, AstLiteral, ExprP};

use super::{Constructor, Field, FieldType, Literal, Module, callee_span};

/// A field given that the constructor does not declare.
pub const UNKNOWN_FIELD: &str = "unknown-field";
/// A required field not given.
pub const MISSING_FIELD: &str = "missing-field";
/// A literal of a type the field does not take.
pub const FIELD_TYPE: &str = "field-type";
/// A literal outside the field's allowed values.
pub const FIELD_ENUM: &str = "field-enum";

/// One problem with a constructor call.
#[derive(Debug, Clone)]
pub struct Problem {
    /// The keyword, the callee's name, or the value at fault.
    pub span: Span,
    pub message: String,
    pub rule: &'static str,
    /// What would fix it: the nearest declared name for an unknown field;
    /// the required fields missing, and the call to add them to.
    pub fix: Fix,
}

/// What a quick fix needs to know.
#[derive(Debug, Clone, PartialEq)]
pub enum Fix {
    None,
    /// Replace the unknown name with this one.
    Rename(String),
    /// Add these fields (name, placeholder) to the call or dict (`dict`)
    /// `span` covers (its closing bracket is its last character); `empty`
    /// when it has no entries yet.
    Add {
        fields: Vec<(String, String)>,
        span: Span,
        empty: bool,
        dict: bool,
    },
}

/// A placeholder for a field: its first allowed value, else an empty
/// value of its type; a nested object is a dict of its own required
/// fields' placeholders (a dict, since its constructor may not be loaded).
fn placeholder(field: &Field) -> String {
    placeholder_within(field, 3)
}

fn placeholder_within(field: &Field, depth: usize) -> String {
    if let Some(first) = field.values.first() {
        return first.repr();
    }
    match &field.ty {
        FieldType::Primitive("string") => "\"\"".to_owned(),
        FieldType::Primitive("int") => "0".to_owned(),
        FieldType::Primitive("float") => "0.0".to_owned(),
        FieldType::Primitive("bool") => "False".to_owned(),
        FieldType::Primitive("list") | FieldType::ListOf(_) => "[]".to_owned(),
        FieldType::Nested(c) if depth > 0 => {
            let entries: Vec<String> = c
                .fields
                .iter()
                .filter(|f| f.required)
                .map(|f| {
                    format!(
                        "{}: {}",
                        crate::syntax::string_literal(&f.name),
                        placeholder_within(f, depth - 1)
                    )
                })
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        _ => "{}".to_owned(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The type a literal expression has, and how it prints, when it is one.
fn literal_kind(
    expr: &AstExpr,
    constants: &HashMap<String, Literal>,
) -> Option<(&'static str, String)> {
    if let Some(l) = Literal::of(expr, constants) {
        return Some((l.type_name(), l.repr()));
    }
    match &expr.node {
        ExprP::List(items) if items.is_empty() => Some(("list", "[]".to_owned())),
        ExprP::List(_) => Some(("list", "[...]".to_owned())),
        ExprP::Dict(items) if items.is_empty() => Some(("dict", "{}".to_owned())),
        ExprP::Dict(_) => Some(("dict", "{...}".to_owned())),
        _ => None,
    }
}

struct Judge<'a> {
    scope: &'a Module,
    constants: HashMap<String, Literal>,
    out: Vec<Problem>,
}

impl Judge<'_> {
    fn problem(&mut self, span: Span, rule: &'static str, message: String, fix: Fix) {
        self.out.push(Problem {
            span,
            message,
            rule,
            fix,
        });
    }

    /// The entries given to `ctor` at `path` (keywords or a dict
    /// literal's string keys): each known, each judged, and the required
    /// ones all there unless `open` (a `**` that is not a literal).
    fn entries(
        &mut self,
        ctor: &Constructor,
        path: &str,
        given: &[(String, Span, &AstExpr)],
        open: bool,
        (at, whole): (Span, Span),
        empty: bool,
    ) {
        let names: Vec<&str> = ctor.fields.iter().map(|f| f.name.as_str()).collect();
        let mut seen = HashSet::new();
        for (key, key_span, value) in given {
            seen.insert(key.as_str());
            let at_key = join(path, key);
            let Some(field) = ctor.field(key) else {
                let (message, fix) = match crate::values::schema::suggest(key, &names) {
                    Some(s) => (
                        format!(
                            "{}: {at_key}: unknown field (did you mean {:?}?)",
                            ctor.name, s
                        ),
                        Fix::Rename(s.to_owned()),
                    ),
                    None => (
                        format!(
                            "{}: {at_key}: unknown field; valid fields: {}",
                            ctor.name,
                            names.join(", ")
                        ),
                        Fix::None,
                    ),
                };
                self.problem(*key_span, UNKNOWN_FIELD, message, fix);
                continue;
            };
            if matches!(&value.node, ExprP::Identifier(i) if i.node.ident == "None") {
                if field.required {
                    self.problem(
                        *key_span,
                        MISSING_FIELD,
                        format!("{}: {at_key}: required field missing", ctor.name),
                        Fix::None,
                    );
                }
                continue;
            }
            self.value(ctor, field, &at_key, value);
        }
        if open {
            return;
        }
        let missing: Vec<&Field> = ctor
            .fields
            .iter()
            .filter(|f| f.required && !seen.contains(f.name.as_str()))
            .collect();
        if missing.is_empty() {
            return;
        }
        let list: Vec<String> = missing.iter().map(|f| join(path, &f.name)).collect();
        let message = if let [one] = list.as_slice() {
            format!("{}: {one}: required field missing", ctor.name)
        } else {
            format!(
                "{}: required fields missing: {}",
                ctor.name,
                list.join(", ")
            )
        };
        let fields = missing
            .iter()
            .map(|f| (f.name.clone(), placeholder(f)))
            .collect();
        let dict = at == whole;
        self.problem(
            at,
            MISSING_FIELD,
            message,
            Fix::Add {
                fields,
                span: whole,
                empty,
                dict,
            },
        );
    }

    /// One value given for `field`.
    fn value(&mut self, ctor: &Constructor, field: &Field, path: &str, value: &AstExpr) {
        let literal = literal_kind(value, &self.constants);
        match &field.ty {
            FieldType::Nested(nested) => match &value.node {
                ExprP::Dict(pairs) => self.dict(nested, path, pairs, value.span),
                _ => {
                    if let Some((got, _)) = literal {
                        self.problem(
                            value.span,
                            FIELD_TYPE,
                            format!(
                                "{}: {path}: expected {} or dict, got {got}",
                                ctor.name, nested.name
                            ),
                            Fix::None,
                        );
                    }
                }
            },
            FieldType::ListOf(item) => match &value.node {
                ExprP::List(items) => {
                    for (i, element) in items.iter().enumerate() {
                        let at = format!("{path}[{i}]");
                        match &element.node {
                            ExprP::Dict(pairs) => self.dict(item, &at, pairs, element.span),
                            _ => {
                                if let Some((got, _)) = literal_kind(element, &self.constants) {
                                    self.problem(
                                        element.span,
                                        FIELD_TYPE,
                                        format!(
                                            "{}: {at}: expected {} or dict, got {got}",
                                            ctor.name, item.name
                                        ),
                                        Fix::None,
                                    );
                                }
                            }
                        }
                    }
                }
                _ => {
                    if let Some((got, _)) = literal.filter(|(t, _)| *t != "list") {
                        self.problem(
                            value.span,
                            FIELD_TYPE,
                            format!("{}: {path}: expected list, got {got}", ctor.name),
                            Fix::None,
                        );
                    }
                }
            },
            FieldType::Primitive(ty) => {
                let Some((got, repr)) = literal else {
                    return;
                };
                if got != *ty {
                    self.problem(
                        value.span,
                        FIELD_TYPE,
                        format!("{}: {path}: expected {ty}, got {got} ({repr})", ctor.name),
                        Fix::None,
                    );
                    return;
                }
                self.allowed(ctor, field, path, value);
            }
            FieldType::Any => self.allowed(ctor, field, path, value),
        }
    }

    /// A literal outside the field's allowed values.
    fn allowed(&mut self, ctor: &Constructor, field: &Field, path: &str, value: &AstExpr) {
        if field.values.is_empty() {
            return;
        }
        let Some(given) = Literal::of(value, &self.constants) else {
            return;
        };
        if field.values.contains(&given) {
            return;
        }
        let values: Vec<String> = field.values.iter().map(Literal::repr).collect();
        let fix = match &given {
            Literal::String(s) => {
                let names: Vec<&str> = field
                    .values
                    .iter()
                    .filter_map(|v| match v {
                        Literal::String(s) => Some(s.as_str()),
                        _ => None,
                    })
                    .collect();
                crate::values::schema::suggest(s, &names)
                    .map_or(Fix::None, |s| Fix::Rename(crate::syntax::string_literal(s)))
            }
            _ => Fix::None,
        };
        self.problem(
            value.span,
            FIELD_ENUM,
            format!(
                "{}: {path}: value {} not in enum [{}]",
                ctor.name,
                given.repr(),
                values.join(", ")
            ),
            fix,
        );
    }

    /// A dict literal given for a nested constructor's object.
    fn dict(&mut self, ctor: &Constructor, path: &str, pairs: &[(AstExpr, AstExpr)], span: Span) {
        let mut given = Vec::new();
        for (k, v) in pairs {
            match &k.node {
                ExprP::Literal(AstLiteral::String(s)) => given.push((s.node.clone(), k.span, v)),
                // A computed key may name any field.
                _ => return,
            }
        }
        self.entries(ctor, path, &given, false, (span, span), pairs.is_empty());
    }

    /// A call of a constructor.
    fn call(
        &mut self,
        ctor: &Constructor,
        callee: &AstExpr,
        args: &[starlark::syntax::ast::AstArgument],
        span: Span,
    ) {
        let mut given = Vec::new();
        let mut open = false;
        for arg in args {
            match &arg.node {
                ArgumentP::Named(key, value) => given.push((key.node.clone(), key.span, value)),
                ArgumentP::KwArgs(e) => match &e.node {
                    ExprP::Dict(pairs) => {
                        for (k, v) in pairs {
                            match &k.node {
                                ExprP::Literal(AstLiteral::String(s)) => {
                                    given.push((s.node.clone(), k.span, v));
                                }
                                _ => open = true,
                            }
                        }
                    }
                    _ => open = true,
                },
                // The runtime refuses positional arguments on its own.
                ArgumentP::Positional(_) | ArgumentP::Args(_) => return,
            }
        }
        self.entries(
            ctor,
            "",
            &given,
            open,
            (callee_span(callee), span),
            args.is_empty(),
        );
    }
}

/// Every problem of the constructor calls of `ast`, whose names `scope`
/// binds.
pub fn judge(ast: &AstModule, scope: &Module) -> Vec<Problem> {
    let mut judge = Judge {
        scope,
        constants: scope.constants(),
        out: Vec::new(),
    };
    crate::syntax::visit::each_expr(ast.statement(), &mut |e| {
        if let ExprP::Call(f, call) = &e.node
            && let Some(ctor) = judge.scope.constructor(f)
        {
            let ctor = ctor.clone();
            judge.call(&ctor, f, &call.args, e.span);
        }
    });
    judge.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<(String, &'static str, String)> {
        let (ast, map) = crate::syntax::parse_quietly("s.star", text).expect("parses");
        let scope = super::super::read(&ast, &map, None, &|_| None);
        judge(&ast, &scope)
            .into_iter()
            .map(|p| {
                let begin = ast.file_span(p.span).resolve_span().begin;
                let token = ast.file_span(p.span).source_span().to_owned();
                let _ = begin;
                (token, p.rule, p.message)
            })
            .collect()
    }

    const SCHEMAS: &str = "\
Rule = schema(\"Rule\", port = field(type = \"int\", required = True))
Spec = schema(\"Spec\",
    region = field(type = \"string\", required = True),
    size = field(type = \"int\"),
    tier = field(type = \"string\", enum = [\"gold\", \"silver\"]),
    rule = field(type = Rule),
    rules = field(type = \"list\", items = Rule),
)
";

    #[test]
    fn each_kind_of_problem_is_found_at_its_token_in_the_runtimes_words() {
        let found = problems(&format!(
            "{SCHEMAS}Spec(regoin = \"x\", size = \"ten\", tier = \"gould\", rule = {{\"prt\": 1}}, rules = [{{\"port\": \"80\"}}, 3])\n"
        ));
        let expected = [
            (
                "regoin",
                UNKNOWN_FIELD,
                "Spec: regoin: unknown field (did you mean \"region\"?)",
            ),
            (
                "\"ten\"",
                FIELD_TYPE,
                "Spec: size: expected int, got string (\"ten\")",
            ),
            (
                "\"gould\"",
                FIELD_ENUM,
                "Spec: tier: value \"gould\" not in enum [\"gold\", \"silver\"]",
            ),
            (
                "\"prt\"",
                UNKNOWN_FIELD,
                "Rule: rule.prt: unknown field (did you mean \"port\"?)",
            ),
            (
                "{\"prt\": 1}",
                MISSING_FIELD,
                "Rule: rule.port: required field missing",
            ),
            (
                "\"80\"",
                FIELD_TYPE,
                "Rule: rules[0].port: expected int, got string (\"80\")",
            ),
            (
                "3",
                FIELD_TYPE,
                "Spec: rules[1]: expected Rule or dict, got int",
            ),
            (
                "Spec",
                MISSING_FIELD,
                "Spec: region: required field missing",
            ),
        ];
        for want in expected {
            assert!(
                found
                    .iter()
                    .any(|(t, r, m)| (t.as_str(), *r, m.as_str()) == want),
                "{want:?} in {found:#?}"
            );
        }
        assert_eq!(found.len(), expected.len(), "{found:#?}");
    }

    #[test]
    fn what_is_computed_or_correct_is_left_alone() {
        let found = problems(&format!(
            "{SCHEMAS}r = \"x\"\nSpec(region = r, size = len([]), tier = \"gold\", rule = Rule(port = 1), **{{\"rules\": []}})\nSpec(**computed)\n"
        ));
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn missing_fields_come_with_placeholders_to_add() {
        let (ast, map) =
            crate::syntax::parse_quietly("s.star", &format!("{SCHEMAS}Spec()\n")).unwrap();
        let scope = super::super::read(&ast, &map, None, &|_| None);
        let found = judge(&ast, &scope);
        let [problem] = found.as_slice() else {
            panic!("{found:#?}")
        };
        let Fix::Add {
            fields,
            empty,
            dict: false,
            ..
        } = &problem.fix
        else {
            panic!("{problem:?}")
        };
        assert!(*empty);
        assert_eq!(fields, &[("region".to_owned(), "\"\"".to_owned())]);
    }
}
