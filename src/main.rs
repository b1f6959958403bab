use function_starlark::cli::Cli;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::from_process();
    function_sdk_rust::logging::configure(cli.sdk.debug);
    match function_starlark::serve(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "function stopped");
            std::process::ExitCode::FAILURE
        }
    }
}
