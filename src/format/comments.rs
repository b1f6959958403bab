//! Comments inside statements, attached as buildifier attaches them: a
//! whole-line comment to the first node starting after it, an end-of-line
//! comment to the last node ending before it (never to a block statement).

use super::tree::{Comment, Comments, End, Kind, Node, Pos};

/// A place comments hang on, met in the walk.
struct Slot<'a> {
    com: &'a mut Comments,
    span: (Pos, Pos),
    /// Whether end-of-line comments may attach here.
    takes_suffix: bool,
}

/// Walks `node` in buildifier's order, calling `pre` before its children
/// and `post` after them.
fn walk(node: &mut Node, visit: &mut dyn FnMut(bool, Slot)) {
    let span = node.span();
    let takes_suffix = !matches!(
        node.kind,
        Kind::Def { .. }
            | Kind::If { .. }
            | Kind::For { .. }
            | Kind::While { .. }
            | Kind::CommentBlock { .. }
    );
    visit(
        true,
        Slot {
            com: &mut node.com,
            span,
            takes_suffix,
        },
    );
    children(&mut node.kind, visit);
    visit(
        false,
        Slot {
            com: &mut node.com,
            span,
            takes_suffix,
        },
    );
}

fn end(end: &mut End, visit: &mut dyn FnMut(bool, Slot)) {
    let span = (end.pos, end.pos.after(")"));
    for pre in [true, false] {
        visit(
            pre,
            Slot {
                com: &mut end.com,
                span,
                takes_suffix: true,
            },
        );
    }
}

fn all(nodes: &mut [Node], visit: &mut dyn FnMut(bool, Slot)) {
    for n in nodes {
        walk(n, visit);
    }
}

fn some(node: &mut Option<Box<Node>>, visit: &mut dyn FnMut(bool, Slot)) {
    if let Some(n) = node {
        walk(n, visit);
    }
}

fn children(kind: &mut Kind, visit: &mut dyn FnMut(bool, Slot)) {
    match kind {
        Kind::CommentBlock { .. }
        | Kind::Literal { .. }
        | Kind::Ident { .. }
        | Kind::Str { .. }
        | Kind::Branch { .. } => {}
        Kind::Dot { x, .. } => walk(x, visit),
        Kind::Index { x, y, .. } | Kind::Binary { x, y, .. } => {
            walk(x, visit);
            walk(y, visit);
        }
        Kind::Slice {
            x, from, to, step, ..
        } => {
            walk(x, visit);
            some(from, visit);
            some(to, visit);
            some(step, visit);
        }
        Kind::KeyValue { key, value } => {
            walk(key, visit);
            walk(value, visit);
        }
        Kind::Unary { x, .. } => some(x, visit),
        Kind::Assign { lhs, rhs, .. } => {
            walk(lhs, visit);
            walk(rhs, visit);
        }
        Kind::Paren { x, end: e, .. } => {
            walk(x, visit);
            end(e, visit);
        }
        Kind::Call {
            x, list, end: e, ..
        } => {
            walk(x, visit);
            all(list, visit);
            end(e, visit);
        }
        Kind::Load {
            module,
            args,
            end: e,
            ..
        } => {
            walk(module, visit);
            for (to, from) in args {
                walk(to, visit);
                walk(from, visit);
            }
            end(e, visit);
        }
        Kind::List { list, end: e, .. } | Kind::Dict { list, end: e, .. } => {
            all(list, visit);
            end(e, visit);
        }
        Kind::Tuple {
            list,
            end: e,
            brackets,
            ..
        } => {
            all(list, visit);
            if *brackets {
                end(e, visit);
            }
        }
        Kind::Comprehension {
            body,
            clauses,
            end: e,
            ..
        } => {
            walk(body, visit);
            all(clauses, visit);
            end(e, visit);
        }
        Kind::ForClause { vars, x, .. } => {
            walk(vars, visit);
            walk(x, visit);
        }
        Kind::IfClause { cond, .. } => walk(cond, visit),
        Kind::Conditional {
            then,
            test,
            otherwise,
        } => {
            walk(then, visit);
            walk(test, visit);
            walk(otherwise, visit);
        }
        Kind::Lambda { params, body, .. } => {
            all(params, visit);
            walk(body, visit);
        }
        Kind::Return { result, .. } => some(result, visit),
        Kind::Def {
            params,
            params_end,
            colon,
            body,
            ..
        } => {
            all(params, visit);
            end(params_end, visit);
            end(colon, visit);
            all(body, visit);
        }
        Kind::For { vars, x, body, .. } => {
            walk(vars, visit);
            walk(x, visit);
            all(body, visit);
        }
        Kind::While { cond, body, .. } => {
            walk(cond, visit);
            all(body, visit);
        }
        Kind::If {
            cond,
            then,
            else_pos,
            otherwise,
            ..
        } => {
            walk(cond, visit);
            all(then, visit);
            if !otherwise.is_empty() {
                end(else_pos, visit);
            }
            all(otherwise, visit);
        }
    }
}

/// Attaches the comments found inside statements; returns those left for
/// the file's start (end-of-line ones before everything) and end.
pub fn assign(
    stmts: &mut [Node],
    line: Vec<Comment>,
    suffix: Vec<Comment>,
) -> (Vec<Comment>, Vec<Comment>) {
    if line.is_empty() && suffix.is_empty() {
        return (Vec::new(), Vec::new());
    }
    // First pass: every slot's span, in pre- and post-order.
    let mut pre: Vec<(Pos, Pos)> = Vec::new();
    let mut post: Vec<(usize, (Pos, Pos), bool)> = Vec::new();
    let mut ids: Vec<usize> = Vec::new();
    {
        let mut next = 0;
        let mut record = |is_pre: bool, slot: Slot| {
            if is_pre {
                ids.push(next);
                pre.push(slot.span);
                next += 1;
            } else {
                let id = ids.pop().expect("a slot visited before");
                post.push((id, slot.span, slot.takes_suffix));
            }
        };
        for s in stmts.iter_mut() {
            walk(s, &mut record);
        }
    }
    let mut before: Vec<Vec<Comment>> = vec![Vec::new(); pre.len()];
    let mut after_of: Vec<Vec<Comment>> = vec![Vec::new(); pre.len()];
    // End-of-line comments: to the last slot ending before each.
    let mut suffix = suffix;
    for (id, span, takes) in post.iter().rev() {
        if !takes {
            continue;
        }
        while let Some(c) = suffix.last() {
            if span.1.byte > c.start.byte {
                break;
            }
            after_of[*id].push(suffix.pop().expect("a comment"));
        }
    }
    for list in &mut after_of {
        list.reverse();
    }
    // Whole-line comments: to the first slot starting after each.
    let mut line = std::collections::VecDeque::from(line);
    for (id, span) in pre.iter().enumerate() {
        while let Some(c) = line.front() {
            if span.0.byte < c.start.byte {
                break;
            }
            before[id].push(line.pop_front().expect("a comment"));
        }
    }
    // Second pass: the same walk, handing each slot its comments.
    {
        let mut next = 0;
        let mut apply = |is_pre: bool, slot: Slot| {
            if !is_pre {
                return;
            }
            let id = next;
            next += 1;
            if !before[id].is_empty() {
                slot.com.before.append(&mut before[id]);
                slot.com.before.sort_by_key(|c| c.start.byte);
            }
            slot.com.suffix.append(&mut after_of[id]);
        };
        for s in stmts.iter_mut() {
            walk(s, &mut apply);
        }
    }
    (suffix, line.into_iter().collect())
}
