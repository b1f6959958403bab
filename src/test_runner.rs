//! `function-starlark test [PATH...]`: finds the tests under the paths and
//! runs them in-process, with no Docker and no cluster.
//!
//! * `*_test.star`: Starlark unit tests (see [`star`]), with the `assert`
//!   module ([`assert`]); one that loads `assert.star` is written for the
//!   Go implementation's test runner and runs as it does ([`go_format`]);
//! * `*_test.yaml`: Composition tests (see [`compositions`]), rendered as
//!   `function-starlark render` renders and checked with `expect:`.
//!
//! Each test prints `ok` or `FAIL` with its name; a failure prints what was
//! expected, what came out and where. A summary line `N passed, M failed`
//! ends the run, and the exit status is 1 when a test failed. With
//! `--format go` the report is the Go runner's (`=== RUN`, `--- PASS`,
//! `--- FAIL`, `ok` or `FAIL` with the counts).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::function::StarlarkFunction;
use crate::render::Options;

pub mod assert;
mod compositions;
mod diff;
mod expect;
mod go_assert;
pub mod go_format;
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
    /// How the report reads: this function's (`ok`/`FAIL` per test), or
    /// the Go implementation's test runner's (`=== RUN`, `--- PASS`, ...).
    #[arg(long, value_enum, default_value_t = Format::Default)]
    pub format: Format,
}

/// The report's format.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `ok    FILE::TEST`, `FAIL  FILE::TEST` and what failed, then
    /// `N passed, M failed`.
    Default,
    /// The Go implementation's: `# FILE`, `=== RUN   TEST`, `--- PASS: TEST
    /// (0.00s)`, then `ok\tN tests passed` or `FAIL\tN tests: P passed, F
    /// failed`.
    Go,
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
    /// A file written for the Go implementation's runner: all its tests.
    Go,
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

    fn go(file: &Path, name: &str) -> Case {
        Case {
            file: file.to_path_buf(),
            name: name.to_owned(),
            kind: Kind::Go,
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
                let source = std::fs::read_to_string(file).unwrap_or_default();
                if go_format::is_go_format(&source) {
                    vec![Case::go(file, "(file)")]
                } else {
                    star::cases(file)
                }
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
        Kind::Go => timed(async { Err("run through go_format".to_owned()) }).await,
    }
}

/// What a run reports, test by test, in the format asked for.
struct Report {
    format: Format,
    /// The file whose header was printed last (Go format).
    file: Option<PathBuf>,
    /// Every test reported, with how it went.
    ran: Vec<(Case, Outcome)>,
}

impl Report {
    fn base(file: &Path) -> String {
        file.file_name().map_or_else(
            || file.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        )
    }

    /// The Go format's `# FILE` before a file's first test.
    fn enter(&mut self, file: &Path) {
        if self.format == Format::Go && self.file.as_deref() != Some(file) {
            println!("# {}", Report::base(file));
            self.file = Some(file.to_path_buf());
        }
    }

    /// A test and how it went.
    fn test(&mut self, case: Case, outcome: Outcome) {
        let failures: Vec<String> = outcome.failure.iter().cloned().collect();
        self.test_failing(case, outcome.seconds, failures);
    }

    /// A test and why it failed, each failure on its own (the Go format
    /// indents each one).
    fn test_failing(&mut self, case: Case, seconds: f64, failures: Vec<String>) {
        self.enter(&case.file);
        match self.format {
            Format::Default if failures.is_empty() => println!("ok    {}", case.full_name()),
            Format::Default => {
                println!("FAIL  {}", case.full_name());
                for line in failures.iter().flat_map(|f| f.lines()) {
                    println!("      {line}");
                }
            }
            Format::Go => {
                println!("=== RUN   {}", case.name);
                for failure in &failures {
                    println!("{}", go_format::indented(failure));
                }
                println!(
                    "{}",
                    go_format::verdict(&case.name, failures.is_empty(), seconds)
                );
            }
        }
        let failure = (!failures.is_empty()).then(|| failures.join("\n"));
        self.ran.push((case, Outcome { failure, seconds }));
    }

    /// A Go-format file whose top level failed: one failure.
    fn file_failed(&mut self, case: Case, why: String) {
        match self.format {
            Format::Default => self.test(
                case,
                Outcome {
                    failure: Some(why),
                    seconds: 0.0,
                },
            ),
            Format::Go => {
                self.enter(&case.file);
                println!("FAIL  {}", Report::base(&case.file));
                println!("{}", go_format::indented(&why));
                self.ran.push((
                    case,
                    Outcome {
                        failure: Some(why),
                        seconds: 0.0,
                    },
                ));
            }
        }
    }

    /// A test that takes parameters, so it was not called.
    fn skipped(&mut self, file: &Path, name: &str) {
        self.enter(file);
        match self.format {
            Format::Default => println!("skip  {}::{name} (has parameters)", file.display()),
            Format::Go => println!("  SKIP  {name} (has parameters)"),
        }
    }

    /// The closing line.
    fn summary(&self) -> (usize, usize) {
        let failed = self.ran.iter().filter(|(_, o)| o.failure.is_some()).count();
        let passed = self.ran.len() - failed;
        match (self.format, failed) {
            (Format::Default, _) => println!("{passed} passed, {failed} failed"),
            (Format::Go, 0) if passed > 0 => println!("ok\t{passed} tests passed"),
            (Format::Go, 0) => {}
            (Format::Go, _) => println!(
                "FAIL\t{} tests: {passed} passed, {failed} failed",
                self.ran.len()
            ),
        }
        (passed, failed)
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
    let selected = |full_name: &str| filter.as_ref().is_none_or(|f| f.is_match(full_name));
    let cases: Vec<Case> = discover(&paths)
        .into_iter()
        .filter(|c| matches!(c.kind, Kind::Go) || selected(&c.full_name()))
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
    let go_runtime = crate::runner::Runtime::for_tests(options.limits.clone());
    let function = crate::render::function(options, assert::register);
    let mut report = Report {
        format: args.format,
        file: None,
        ran: Vec::new(),
    };
    for case in cases {
        if !matches!(case.kind, Kind::Go) {
            let outcome = runtime.block_on(run_case(&function, &case, args.update));
            report.test(case, outcome);
            continue;
        }
        let file = case.file.clone();
        let select = |name: &str| selected(&format!("{}::{name}", file.display()));
        let outcome = runtime.block_on(go_format::run(&go_runtime, function.oci(), &file, &select));
        match outcome {
            crate::runner::test_file::FileOutcome::Failed(why) => report.file_failed(case, why),
            crate::runner::test_file::FileOutcome::Tests(tests) => {
                for test in tests {
                    for line in &test.printed {
                        eprintln!("{line}");
                    }
                    if test.skipped {
                        report.skipped(&file, &test.name);
                        continue;
                    }
                    report.test_failing(Case::go(&file, &test.name), test.seconds, test.failures);
                }
            }
        }
    }
    let (passed, failed) = report.summary();
    if let Some(file) = &args.junit {
        let (cases, outcomes): (Vec<Case>, Vec<Outcome>) = report.ran.into_iter().unzip();
        if let Err(e) = std::fs::write(file, junit::report(&cases, &outcomes)) {
            eprintln!("function-starlark: error: --junit {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    if passed + failed == 0 && args.format == Format::Default {
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
