//! The user reference of every builtin, rendered from the builtins' doc
//! comments (`docs/builtins.md`, kept in sync by a test).

use std::fmt::Write as _;

use starlark::docs::{DocFunction, DocItem, DocMember, DocModule, DocParam, DocString};
use starlark::environment::GlobalsBuilder;
use starlark::values::ValueLike;

use crate::builtins;

/// The names scripts see that this project defines, in registration order,
/// without the operator redirections scripts cannot name.
pub fn project_names() -> Vec<String> {
    let mut builder = GlobalsBuilder::new();
    builtins::register(&mut builder);
    builder
        .build()
        .names()
        .map(|n| n.as_str().to_owned())
        .filter(|n| !n.starts_with(crate::syntax::prepass::RESERVED_PREFIX))
        .collect()
}

/// The sorted member names of the namespace module `name`, if it is one.
pub fn module_members(name: &str) -> Option<Vec<String>> {
    let mut builder = GlobalsBuilder::new();
    builtins::register(&mut builder);
    let globals = builder.build();
    let (_, value) = globals.iter().find(|(n, _)| *n == name)?;
    value
        .to_value()
        .downcast_ref::<crate::values::module::ModuleValue>()
        .map(crate::values::module::ModuleValue::member_names)
}

/// A function scripts can call, as an editor shows it.
#[derive(Debug, Clone)]
pub struct FunctionDoc {
    /// `Resource`, or `dict.merge` for a namespace's member.
    pub name: String,
    /// The parameter list as a script calls it.
    pub params: String,
    /// The first line of its doc comment.
    pub summary: String,
    /// Its whole reference entry, as `docs/builtins.md` renders it.
    pub markdown: String,
}

/// Every function of the registry, namespace members included, with its
/// signature and doc, in `docs/builtins.md`'s order.
pub fn functions() -> Vec<FunctionDoc> {
    let mut builder = GlobalsBuilder::new();
    builtins::register(&mut builder);
    let docs = builder.build().documentation();
    let entry = |name: String, f: &DocFunction| {
        let mut markdown = String::new();
        render_function(&mut markdown, "###", &name, f);
        FunctionDoc {
            params: signature(&name, f),
            summary: f
                .docs
                .as_ref()
                .map(|d| d.summary.clone())
                .unwrap_or_default(),
            markdown: markdown.trim().to_owned(),
            name,
        }
    };
    let mut out = Vec::new();
    for name in project_names() {
        match docs.members.get(&name) {
            Some(DocItem::Module(module)) => {
                for (member, item) in &module.members {
                    if let DocItem::Member(DocMember::Function(f)) = item {
                        out.push(entry(format!("{name}.{member}"), f));
                    }
                }
            }
            Some(DocItem::Member(DocMember::Function(f))) => out.push(entry(name, f)),
            _ => {}
        }
    }
    out
}

/// Everything a script sees without binding it, documented: the Starlark
/// universe and every builtin and namespace of the registry.
pub fn environment() -> DocModule {
    let mut builder = GlobalsBuilder::extended_by(builtins::EXTENSIONS);
    builtins::register(&mut builder);
    builder
        .build()
        .documentation()
        .filter(|(name, _)| !name.starts_with(crate::syntax::prepass::RESERVED_PREFIX))
}

/// `docs/builtins.md`.
pub fn builtins_markdown() -> String {
    let mut builder = GlobalsBuilder::new();
    builtins::register(&mut builder);
    let docs = builder.build().documentation();
    let mut out = String::from(
        "# Builtins reference\n\n\
         Generated from the builtins' doc comments by `cargo test --test docs` \
         (`UPDATE_GOLDEN=1` rewrites it). Besides these, scripts see the request \
         globals `oxr`, `dxr`, `observed`, `context`, `environment` and \
         `extra_resources`, and the Starlark universe.\n",
    );
    for name in project_names() {
        let Some(item) = docs.members.get(&name) else {
            continue;
        };
        match item {
            DocItem::Module(module) => {
                let _ = write!(out, "\n## `{name}`\n");
                for (member, item) in &module.members {
                    if let DocItem::Member(DocMember::Function(f)) = item {
                        render_function(&mut out, "###", &format!("{name}.{member}"), f);
                    }
                }
            }
            DocItem::Member(DocMember::Function(f)) => render_function(&mut out, "##", &name, f),
            _ => {}
        }
    }
    out
}

fn param(p: &DocParam, prefix: &str) -> String {
    match &p.default_value {
        Some(default) => format!("{prefix}{}={default}", p.name),
        None => format!("{prefix}{}", p.name),
    }
}

/// The parameter list of `f` as a script calls it: the Rust signature, or
/// for a builtin that binds by hand its line in
/// [`builtins::signatures::SIGNATURES`].
fn signature(name: &str, f: &DocFunction) -> String {
    if let Some(params) = builtins::signatures::of(name) {
        return params.to_owned();
    }
    let p = &f.params;
    let mut params: Vec<String> = Vec::new();
    params.extend(
        p.pos_only
            .iter()
            .chain(&p.pos_or_named)
            .map(|x| param(x, "")),
    );
    if let Some(args) = &p.args {
        params.push(param(args, "*"));
    } else if !p.named_only.is_empty() {
        params.push("*".to_owned());
    }
    params.extend(p.named_only.iter().map(|x| param(x, "")));
    if let Some(kwargs) = &p.kwargs {
        params.push(param(kwargs, "**"));
    }
    params.join(", ")
}

fn render_function(out: &mut String, heading: &str, name: &str, f: &DocFunction) {
    let p = &f.params;
    let _ = write!(out, "\n{heading} `{name}({})`\n\n", signature(name, f));
    if let Some(DocString {
        summary, details, ..
    }) = &f.docs
    {
        let _ = writeln!(out, "{summary}");
        let documented: Vec<&DocParam> = p
            .pos_only
            .iter()
            .chain(&p.pos_or_named)
            .chain(&p.args)
            .chain(&p.named_only)
            .chain(&p.kwargs)
            .filter(|x| x.docs.is_some())
            .collect();
        if !documented.is_empty() {
            out.push_str("\n**Arguments**\n\n");
            for x in documented {
                let text = x
                    .docs
                    .as_ref()
                    .map(|d| d.summary.clone())
                    .unwrap_or_default();
                let _ = writeln!(out, "* `{}`: {text}", x.name);
            }
        }
        if let Some(details) = details {
            let _ = write!(
                out,
                "\n{}\n",
                details
                    .replace("# Arguments", "**Arguments**")
                    .replace("# Returns", "**Returns**")
                    .replace("# Example", "**Example**")
            );
        }
    }
}
