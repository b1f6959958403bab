use function_starlark::cli::{Cli, Command};
use function_starlark::runner::Runtime;
use function_starlark::transport::worker;

fn main() -> std::process::ExitCode {
    function_starlark::panics::install();
    let mut args = std::env::args();
    if args.nth(1).as_deref() == Some(worker::ARG) {
        // A worker process: the transport's end of the socket, running each
        // job on a runtime of its own.
        return worker::main(&args.next().unwrap_or_default(), Runtime::new);
    }
    let cli = Cli::from_process();
    // No log subscriber for a subcommand: the output is on stdout, and
    // what scripts print goes to stderr.
    match &cli.command {
        Some(Command::Render(args)) => {
            return function_starlark::render::main(args, cli.render_options());
        }
        Some(Command::Test(args)) => {
            return function_starlark::test_runner::main(args, cli.render_options());
        }
        Some(Command::Check(args)) => {
            return function_starlark::check::main(args, cli.render_options());
        }
        Some(Command::Gen(args)) => return function_starlark::generate::main(args),
        Some(Command::Push(args)) => return function_starlark::push::main(args),
        Some(Command::Lsp(args)) => return function_starlark::lsp::main(args),
        Some(Command::Fmt(args)) => return function_starlark::format::main(args),
        Some(Command::Dap) => return function_starlark::debugger::main(cli.render_options()),
        None => {}
    }
    function_starlark::server::logging::configure(cli.sdk.debug);
    let result = function_starlark::server::run(cli);
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "function stopped");
            std::process::ExitCode::FAILURE
        }
    }
}
