#![no_main]

use function_starlark::fuzzing;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::run(fuzzing::syntax::syntax, data));
