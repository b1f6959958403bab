//! The rewrites buildifier applies to `.bzl` files before printing: loads
//! first, one per module, in order, their names sorted; docstrings
//! re-indented; call arguments in order (positional, keyword, `*args`,
//! `**kwargs`); octal and float literals spelled one way.

use std::cmp::Ordering;

use super::tree::{Kind, Node};

pub fn rewrite(stmts: &mut Vec<Node>) {
    move_loads_on_top(stmts);
    merge_same_origin_loads(stmts);
    sort_load_statements(stmts);
    for s in stmts.iter_mut() {
        if let Kind::Load { args, .. } = &mut s.kind {
            sort_load_args(args);
        }
    }
    for s in stmts.iter_mut() {
        edit(s, 0);
    }
}

fn module_of(n: &Node) -> Option<String> {
    match &n.kind {
        Kind::Load { module, .. } => match &module.kind {
            Kind::Str { value, .. } => Some(String::from_utf8_lossy(value).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

/// Loads after other statements move up, after any leading docstring and
/// comments and the loads already there.
fn move_loads_on_top(stmts: &mut Vec<Node>) {
    let Some(first) = stmts
        .iter()
        .position(|s| !s.is_load() && !s.is_comment_block() && !matches!(s.kind, Kind::Str { .. }))
    else {
        return;
    };
    let misplaced: Vec<usize> = (first..stmts.len())
        .filter(|&i| stmts[i].is_load())
        .collect();
    if misplaced.is_empty() {
        return;
    }
    let mut moved = Vec::new();
    for &i in misplaced.iter().rev() {
        moved.push(stmts.remove(i));
    }
    moved.reverse();
    let tail = stmts.split_off(first);
    stmts.extend(moved);
    stmts.extend(tail);
}

/// A second load of a module gives its names to the first and goes.
fn merge_same_origin_loads(stmts: &mut Vec<Node>) {
    let mut first_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut remove = Vec::new();
    for i in 0..stmts.len() {
        let Some(module) = module_of(&stmts[i]) else {
            continue;
        };
        match first_of.get(&module) {
            None => {
                first_of.insert(module, i);
            }
            Some(&j) => {
                let Kind::Load { args, .. } = &mut stmts[i].kind else {
                    continue;
                };
                let taken = std::mem::take(args);
                if let Kind::Load { args, .. } = &mut stmts[j].kind {
                    args.extend(taken);
                }
                remove.push(i);
            }
        }
    }
    for i in remove.into_iter().rev() {
        stmts.remove(i);
    }
}

/// Runs of loads are sorted by module (see [`compare_labels`]).
fn sort_load_statements(stmts: &mut [Node]) {
    let mut i = 0;
    while i < stmts.len() {
        if !stmts[i].is_load() {
            i += 1;
            continue;
        }
        let start = i;
        while i < stmts.len() && stmts[i].is_load() {
            i += 1;
        }
        stmts[start..i].sort_by(|a, b| {
            let (a, b) = (
                module_of(a).unwrap_or_default(),
                module_of(b).unwrap_or_default(),
            );
            if compare_labels(&a, &b) {
                Ordering::Less
            } else if compare_labels(&b, &a) {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        });
    }
}

/// Whether label `a` sorts before `b`: explicit repositories first, then
/// by repository, package (empty first, relative last) and target, each
/// compared as a path.
fn compare_labels(a: &str, b: &str) -> bool {
    let (ra, rb) = (a.starts_with('@'), b.starts_with('@'));
    if ra != rb {
        return ra;
    }
    let (la, lb) = (Label::relative(a), Label::relative(b));
    if la.repository != lb.repository {
        return la.repository < lb.repository;
    }
    if la.package.is_empty() != lb.package.is_empty() {
        return la.package.is_empty();
    }
    if la.package != lb.package {
        return compare_paths(&la.package, &lb.package);
    }
    compare_paths(&la.target, &lb.target)
}

struct Label {
    repository: String,
    package: String,
    target: String,
}

impl Label {
    fn relative(input: &str) -> Label {
        if !input.starts_with('@') && !input.starts_with("//") {
            return Label {
                repository: String::new(),
                package: "\u{7f}".to_owned(),
                target: input.trim_start_matches(':').to_owned(),
            };
        }
        let mut target = input;
        let mut repository = String::new();
        let rest;
        if let Some(stripped) = target.strip_prefix('@') {
            let t = stripped.trim_start_matches('@');
            match t.split_once('/') {
                None => {
                    return Label {
                        repository: t.to_owned(),
                        package: String::new(),
                        target: t.to_owned(),
                    };
                }
                Some((repo, after)) => {
                    repo.clone_into(&mut repository);
                    rest = format!("/{after}");
                    target = &rest;
                }
            }
        }
        let (package, name) = match target.split_once(':') {
            Some((p, n)) => (p, Some(n)),
            None => (target, None),
        };
        let package = package.trim_start_matches("//");
        match name {
            Some(n) if !n.is_empty() => Label {
                repository,
                package: package.to_owned(),
                target: n.to_owned(),
            },
            _ if !target.starts_with("//") => Label {
                repository,
                package: String::new(),
                target: target.to_owned(),
            },
            _ => Label {
                repository,
                package: package.to_owned(),
                target: package.rsplit('/').next().unwrap_or_default().to_owned(),
            },
        }
    }
}

/// Path order: `/` before everything, case-insensitive first.
fn compare_paths(a: &str, b: &str) -> bool {
    if a == b {
        return false;
    }
    let (ca, cb): (Vec<&str>, Vec<&str>) = (a.split('/').collect(), b.split('/').collect());
    for (i, x) in ca.iter().enumerate() {
        let Some(y) = cb.get(i) else {
            return false;
        };
        let (x, y) = (x.to_lowercase(), y.to_lowercase());
        if x != y {
            return x < y;
        }
    }
    a <= b
}

fn ident_name(n: &Node) -> &str {
    match &n.kind {
        Kind::Ident { name, .. } => name,
        _ => "",
    }
}

/// Names bound under their own name first, then by local name; a name
/// bound twice keeps its last binding.
fn sort_load_args(args: &mut Vec<(Node, Node)>) {
    args.sort_by(|(ta, fa), (tb, fb)| {
        let (ea, eb) = (
            ident_name(ta) == ident_name(fa),
            ident_name(tb) == ident_name(fb),
        );
        eb.cmp(&ea).then_with(|| ident_name(ta).cmp(ident_name(tb)))
    });
    let mut out: Vec<(Node, Node)> = Vec::with_capacity(args.len());
    for arg in args.drain(..) {
        match out.last_mut() {
            Some(last) if ident_name(&last.0) == ident_name(&arg.0) => *last = arg,
            _ => out.push(arg),
        }
    }
    *args = out;
}

fn argument_rank(n: &Node) -> u8 {
    match &n.kind {
        Kind::Unary { op, .. } if op == "**" => 4,
        Kind::Unary { op, .. } if op == "*" => 3,
        Kind::Assign { .. } => 2,
        _ => 1,
    }
}

/// The rewrites inside statements; `blocks` is how many blocks enclose
/// `n`.
fn edit(n: &mut Node, blocks: usize) {
    match &mut n.kind {
        Kind::Literal { token, .. } => {
            let b = token.as_bytes();
            if b.len() > 1 && b[0] == b'0' && b[1].is_ascii_digit() {
                *token = format!("0o{}", &token[1..]);
            }
            if token.contains('.') {
                if token.starts_with('.') {
                    *token = format!("0{token}");
                }
                if let Some(at) = token.find(['e', 'E']) {
                    let (mantissa, exponent) = token.split_at(at);
                    *token = format!(
                        "{mantissa}e{}",
                        exponent[1..].trim_start_matches(['0', '+'])
                    );
                }
            }
        }
        Kind::Call { list, .. } => {
            list.sort_by_key(argument_rank);
        }
        Kind::Def { body, .. } => {
            if let Some(first) = body.first_mut()
                && let Kind::Str {
                    token,
                    value,
                    triple: true,
                    start,
                    ..
                } = &mut first.kind
            {
                let old = start.col.saturating_sub(1);
                let new = 4 * (blocks + 1);
                let updated = reindent(token, old, new);
                if updated != *token {
                    if let Ok((v, _)) = super::quote::unquote(&updated) {
                        *value = v;
                    }
                    *token = updated;
                }
            }
        }
        _ => {}
    }
    let inner = blocks
        + usize::from(matches!(
            n.kind,
            Kind::Def { .. } | Kind::For { .. } | Kind::While { .. } | Kind::If { .. }
        ));
    each_child(n, &mut |c| edit(c, inner));
}

/// A docstring's lines moved from `old` to `new` indentation, trailing
/// spaces trimmed (but on the last line).
fn reindent(token: &str, old: usize, new: usize) -> String {
    let lines: Vec<&str> = token.split('\n').collect();
    let last = lines.len() - 1;
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            if i == 0 {
                return (*line).to_owned();
            }
            let mut l = if new >= old {
                format!("{}{line}", " ".repeat(new - old))
            } else {
                let strip = line
                    .char_indices()
                    .find(|&(k, c)| k == old - new || c != ' ')
                    .map_or(line.len(), |(k, _)| k);
                line[strip..].to_owned()
            };
            if i != last {
                l.truncate(l.trim_end_matches(' ').len());
            }
            l
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Calls `f` on each child node of `n` (statements and expressions).
pub fn each_child(n: &mut Node, f: &mut dyn FnMut(&mut Node)) {
    let opt = |x: &mut Option<Box<Node>>, f: &mut dyn FnMut(&mut Node)| {
        if let Some(x) = x {
            f(x);
        }
    };
    match &mut n.kind {
        Kind::CommentBlock { .. }
        | Kind::Literal { .. }
        | Kind::Ident { .. }
        | Kind::Str { .. }
        | Kind::Branch { .. } => {}
        Kind::Dot { x, .. } | Kind::Paren { x, .. } => f(x),
        Kind::Index { x, y, .. } | Kind::Binary { x, y, .. } => {
            f(x);
            f(y);
        }
        Kind::Slice {
            x, from, to, step, ..
        } => {
            f(x);
            opt(from, f);
            opt(to, f);
            opt(step, f);
        }
        Kind::KeyValue { key, value } => {
            f(key);
            f(value);
        }
        Kind::Unary { x, .. } => opt(x, f),
        Kind::Assign { lhs, rhs, .. } => {
            f(lhs);
            f(rhs);
        }
        Kind::Call { x, list, .. } => {
            f(x);
            list.iter_mut().for_each(&mut *f);
        }
        Kind::Load { module, .. } => f(module),
        Kind::List { list, .. } | Kind::Dict { list, .. } | Kind::Tuple { list, .. } => {
            list.iter_mut().for_each(&mut *f);
        }
        Kind::Comprehension { body, clauses, .. } => {
            f(body);
            clauses.iter_mut().for_each(&mut *f);
        }
        Kind::ForClause { vars, x, .. } => {
            f(vars);
            f(x);
        }
        Kind::IfClause { cond, .. } => f(cond),
        Kind::Conditional {
            then,
            test,
            otherwise,
        } => {
            f(then);
            f(test);
            f(otherwise);
        }
        Kind::Lambda { params, body, .. } => {
            params.iter_mut().for_each(&mut *f);
            f(body);
        }
        Kind::Return { result, .. } => opt(result, f),
        Kind::Def { params, body, .. } => {
            params.iter_mut().for_each(&mut *f);
            body.iter_mut().for_each(&mut *f);
        }
        Kind::For { vars, x, body, .. } => {
            f(vars);
            f(x);
            body.iter_mut().for_each(&mut *f);
        }
        Kind::While { cond, body, .. } => {
            f(cond);
            body.iter_mut().for_each(&mut *f);
        }
        Kind::If {
            cond,
            then,
            otherwise,
            ..
        } => {
            f(cond);
            then.iter_mut().for_each(&mut *f);
            otherwise.iter_mut().for_each(&mut *f);
        }
    }
}
