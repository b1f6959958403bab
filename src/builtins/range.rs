//! `range`: go.starlark.net's, with 64-bit bounds (see
//! [`crate::values::range`]).

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::tuple::UnpackTuple;
use starlark::values::{Heap, Value};

use crate::go::types::go_type;
use crate::values::range::GoRange;
use crate::values::text::int_of;

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// The ints from `start` (0 when left out) up to `stop` (excluded), by
    /// `step` (1 when left out): computed as needed, never stored.
    ///
    /// # Arguments
    /// `range(stop)`, `range(start, stop)` or `range(start, stop, step)`:
    /// ints in the signed 64-bit range; `step` must not be zero.
    ///
    /// # Example
    /// ```python
    /// list(range(3)), list(range(10, 0, -4))  # [0, 1, 2], [10, 6, 2]
    /// ```
    fn range<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        if !kwargs.is_empty() {
            return Err(anyhow!("range: unexpected keyword arguments"));
        }
        let args = args.items;
        match args.len() {
            0 => return Err(anyhow!("range: got 0 arguments, want at least 1")),
            n if n > 3 => return Err(anyhow!("range: got {n} arguments, want at most 3")),
            _ => {}
        }
        let mut ints = [0i64, 0, 1];
        for (i, v) in args.iter().enumerate() {
            if v.get_type() != "int" {
                return Err(anyhow!(
                    "range: for parameter {}: got {}, want int",
                    i + 1,
                    go_type(*v)
                ));
            }
            ints[i] = int_of(*v)
                .and_then(|n| i64::try_from(&n).ok())
                .ok_or_else(|| {
                    anyhow!(
                        "range: for parameter {}: {} out of range (want value in signed 64-bit range)",
                        i + 1,
                        v.to_str()
                    )
                })?;
        }
        let (start, stop, step) = match args.len() {
            1 => (0, ints[0], 1),
            2 => (ints[0], ints[1], 1),
            _ => (ints[0], ints[1], ints[2]),
        };
        if step == 0 {
            return Err(anyhow!("range: step argument must not be zero"));
        }
        Ok(heap.alloc_simple(GoRange::new(start, stop, step)))
    }
}
