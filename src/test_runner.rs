//! `function-starlark test [PATH...]`: finds the tests under the paths and
//! runs them in-process, with no Docker and no cluster.
//!
//! * `*_test.star`: Starlark unit tests (see [`star`]), with the `assert`
//!   module ([`assert`]);
//! * `*_test.yaml`: Composition tests (see [`compositions`]), rendered as
//!   `function-starlark render` renders and checked with `expect:`.
//!
//! Each test prints `ok` or `FAIL` with its name; a failure prints what was
//! expected, what came out and where. A summary line `N passed, M failed`
//! ends the run, and the exit status is 1 when a test failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::function::StarlarkFunction;
use crate::render::Options;

pub mod assert;
mod compositions;
mod diff;
mod expect;
mod junit;
mod star;

/// `test`'s arguments and flags.
#[derive(clap::Args, Debug, Clone)]
pub struct TestArgs {
    /// Files or directories to search for `*_test.star` and `*_test.yaml`
    /// (default: the current directory).
    pub paths: Vec<PathBuf>,
    /// Run only the tests whose name (`FILE::TEST`) matches this regular
    /// expression.
    #[arg(long, value_name = "PATTERN")]
    pub run: Option<String>,
    /// Also write the results as JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Record what came out as the expected output (`expect.output` files)
    /// instead of comparing.
    #[arg(long)]
    pub update: bool,
}

/// One test to run.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file it is in.
    pub file: PathBuf,
    /// Its name within the file.
    pub name: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A `test_*` function, or (`None`) the whole file.
    Star(Option<String>),
    /// A case of a `*_test.yaml`, read with its file, or why the file
    /// could not be read.
    Composition(Result<serde_json::Value, String>),
}

impl Case {
    fn star(file: &Path, function: Option<String>) -> Case {
        Case {
            file: file.to_path_buf(),
            name: function.clone().unwrap_or_else(|| "(top level)".to_owned()),
            kind: Kind::Star(function),
        }
    }

    fn composition(file: &Path, name: String, case: Result<serde_json::Value, String>) -> Case {
        Case {
            file: file.to_path_buf(),
            name,
            kind: Kind::Composition(case),
        }
    }

    /// `FILE::NAME`, what `--run` matches.
    pub fn full_name(&self) -> String {
        format!("{}::{}", self.file.display(), self.name)
    }
}

/// How a test went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Why it failed.
    pub failure: Option<String>,
    /// How long it took.
    pub seconds: f64,
}

/// How `run` went, and how long it took.
async fn timed(run: impl std::future::Future<Output = Result<(), String>>) -> Outcome {
    let started = std::time::Instant::now();
    let failure = run.await.err();
    Outcome {
        failure,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The tests under `paths`.
pub fn discover(paths: &[PathBuf]) -> Vec<Case> {
    let files = crate::render::load::files_under(paths, &|name| {
        name.ends_with("_test.star") || name.ends_with("_test.yaml")
    });
    files
        .iter()
        .flat_map(|file| {
            if file.extension().is_some_and(|e| e == "star") {
                star::cases(file)
            } else {
                compositions::cases(file)
            }
        })
        .collect()
}

async fn run_case(function: &StarlarkFunction, case: &Case, update: bool) -> Outcome {
    match &case.kind {
        // Boxed: a whole render's future is large.
        Kind::Star(test) => Box::pin(timed(star::run(function, &case.file, test.as_deref()))).await,
        Kind::Composition(Ok(test)) => {
            Box::pin(timed(compositions::run(function, &case.file, test, update))).await
        }
        Kind::Composition(Err(why)) => timed(async { Err(why.clone()) }).await,
    }
}

/// Runs the tests and prints the report; the exit status.
pub fn main(args: &TestArgs, options: Options) -> ExitCode {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let filter = match args.run.as_deref().map(regex::Regex::new).transpose() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("function-starlark: error: --run: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cases: Vec<Case> = discover(&paths)
        .into_iter()
        .filter(|c| filter.as_ref().is_none_or(|f| f.is_match(&c.full_name())))
        .collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(16 << 20)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("function-starlark: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let function = crate::render::function(options, assert::register);
    let mut outcomes = Vec::new();
    for case in &cases {
        let outcome = runtime.block_on(run_case(&function, case, args.update));
        match &outcome.failure {
            None => println!("ok    {}", case.full_name()),
            Some(why) => {
                println!("FAIL  {}", case.full_name());
                for line in why.lines() {
                    println!("      {line}");
                }
            }
        }
        outcomes.push(outcome);
    }
    let failed = outcomes.iter().filter(|o| o.failure.is_some()).count();
    println!("{} passed, {failed} failed", outcomes.len() - failed);
    if let Some(file) = &args.junit
        && let Err(e) = std::fs::write(file, junit::report(&cases, &outcomes))
    {
        eprintln!("function-starlark: error: --junit {}: {e}", file.display());
        return ExitCode::FAILURE;
    }
    if cases.is_empty() {
        eprintln!(
            "function-starlark: error: no tests found (files named *_test.star or *_test.yaml)"
        );
        return ExitCode::FAILURE;
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
