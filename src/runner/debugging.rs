//! What a debugger needs from the runs of a runtime: every script about to
//! run, compiled (to place breakpoints on its statements), and every
//! script run's evaluator (to stop it there).

use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;

use super::compiled::Compiled;

/// A debugger watching a runtime's runs (`function-starlark dap`).
pub trait Debugger: Send + Sync {
    /// `compiled` is about to run, as a request's script or a loaded
    /// module.
    fn compiled(&self, compiled: &Compiled);
    /// A request's script starts running on `eval`.
    fn attach(&self, eval: &mut Evaluator<'_, '_, '_>);
    /// Adds the globals the debugger reads runs through (scripts that are
    /// not debugged never see them).
    fn globals(&self, builder: &mut GlobalsBuilder);
    /// What a script printed, for the person debugging it.
    fn print(&self, text: &str);
}
