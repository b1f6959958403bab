//! `function-starlark fmt`: Starlark printed one canonical way, the way
//! buildifier prints `.bzl` files (`buildifier --type=bzl`), so that the
//! scripts of a team read alike and diffs show only what changed. Every
//! comment is kept; a second run changes nothing. In a Composition, the
//! inline `source` and `modules` of StarlarkInput steps are formatted in
//! place and the YAML around them is left as it was.
//!
//! [`lex`], [`parse`] (expressions) and [`statements`] build the tree
//! ([`tree`]) as buildifier's parser does, [`comments`] attaches the comments inside statements,
//! [`rewrite`] applies buildifier's `.bzl` rewrites (loads first, merged
//! and sorted; docstrings re-indented; call arguments ordered; number
//! spellings), [`print`] lays it out; [`quote`] is its string spelling;
//! [`yaml`] finds the scripts of a Composition.

pub mod comments;
pub mod lex;
pub mod parse;
pub mod print;
pub mod quote;
pub mod rewrite;
pub mod statements;
pub mod tree;
pub mod yaml;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use lex::SyntaxError;

/// `fmt`'s arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct FmtArgs {
    /// Only report the files that are not formatted (exit status 1 when
    /// any is), changing nothing.
    #[arg(long)]
    pub check: bool,
    /// `.star` files, Compositions (YAML) and directories to format in
    /// place (directories recursively). Without any, stdin is formatted to
    /// stdout.
    pub paths: Vec<PathBuf>,
}

/// The stack formatting runs on: enough for [`parse::MAX_DEPTH`] levels
/// in a debug build.
const STACK_BYTES: usize = 256 << 20;

/// `source` formatted (on a thread of its own, whose stack holds the
/// deepest tree the parser accepts).
pub fn format(source: &str) -> Result<String, SyntaxError> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("fmt".to_owned())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || format_here(source))
            .map_or_else(
                |e| {
                    Err(lex::error(
                        tree::Pos::default(),
                        format!("cannot start the formatter: {e}"),
                    ))
                },
                |h| {
                    h.join().unwrap_or_else(|_| {
                        Err(lex::error(tree::Pos::default(), "the formatter failed"))
                    })
                },
            )
    })
}

fn format_here(source: &str) -> Result<String, SyntaxError> {
    let lexed = lex::lex(source)?;
    let mut stmts = parse::Parser::new(lexed.tokens).file()?;
    let (before, after) = comments::assign(&mut stmts, lexed.line_comments, lexed.suffix_comments);
    rewrite::rewrite(&mut stmts);
    let mut printer = print::Printer::default();
    printer.file(&before, &stmts, &after);
    Ok(printer.finish())
}

/// What formatting one file gave.
enum Outcome {
    Unchanged,
    Changed(String),
}

/// The text of the file at `path` formatted: a `.star` file whole, a YAML
/// file's inline scripts; or why it cannot be.
pub fn format_file_text(path: &Path, text: &str) -> Result<String, String> {
    if is_yaml(path) {
        yaml::format_scripts(text)
    } else {
        format(text).map_err(|e| e.to_string())
    }
}

/// A file formatted, or left as it was.
fn format_file(path: &Path, text: &str) -> Result<Outcome, String> {
    let formatted = format_file_text(path, text)?;
    Ok(if formatted == text {
        Outcome::Unchanged
    } else {
        Outcome::Changed(formatted)
    })
}

fn is_yaml(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

/// The files under `path` that `fmt` formats.
fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if !path.is_dir() {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "star")
            || (is_yaml(&p)
                && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("StarlarkInput")))
        {
            out.push(p);
        }
    }
}

/// Runs `fmt`; the process's exit status.
pub fn main(args: &FmtArgs) -> ExitCode {
    if args.paths.is_empty() {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("function-starlark fmt: cannot read stdin: {e}");
            return ExitCode::FAILURE;
        }
        return match format(&text) {
            Ok(formatted) if args.check => {
                if formatted == text {
                    ExitCode::SUCCESS
                } else {
                    println!("<stdin>");
                    ExitCode::FAILURE
                }
            }
            Ok(formatted) => {
                print!("{formatted}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("<stdin>:{e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut all = Vec::new();
    for p in &args.paths {
        files(p, &mut all);
    }
    let mut failed = false;
    for path in all {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("{}: cannot read: {e}", path.display());
                failed = true;
                continue;
            }
        };
        match format_file(&path, &text) {
            Ok(Outcome::Unchanged) => {}
            Ok(Outcome::Changed(_)) if args.check => {
                println!("{}", path.display());
                failed = true;
            }
            Ok(Outcome::Changed(formatted)) => {
                if let Err(e) = std::fs::write(&path, formatted) {
                    eprintln!("{}: cannot write: {e}", path.display());
                    failed = true;
                }
            }
            Err(e) => {
                eprintln!("{}:{e} (left as it was)", path.display());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
