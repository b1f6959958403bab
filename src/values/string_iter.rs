//! What go.starlark.net's `s.codepoints()`, `s.codepoint_ords()`,
//! `s.elems()` and `s.elem_ords()` return: iterables of type
//! `string.codepoints` (not indexable, no length) and `string.elems`
//! (indexable, with a length), shown as the call that made them.
//!
//! Strings here are sequences of code points (see docs/migration.md), so an
//! `elems()` element is a one-code-point string where Go's is one byte; the
//! `_ords` forms give what Go gives: code points, and the bytes of the
//! UTF-8 encoding.

use std::fmt;

use allocative::Allocative;
use starlark::starlark_simple_value;
use starlark::values::{
    Heap, NoSerialize, ProvidesStaticType, StarlarkValue, Value, starlark_value,
};

use crate::go::quote::go_quote;

/// The code points of a string, as one-code-point strings or as ints.
#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative)]
pub struct Codepoints {
    text: String,
    /// The text's code points, so that taking the n-th costs nothing.
    #[allocative(skip)]
    chars: Vec<char>,
    ords: bool,
}

/// The elements of a string, as one-code-point strings, or the bytes of
/// its UTF-8 encoding as ints.
#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative)]
pub struct Elems {
    text: String,
    /// The text's code points, so that taking the n-th costs nothing.
    #[allocative(skip)]
    chars: Vec<char>,
    ords: bool,
}

starlark_simple_value!(Codepoints);
starlark_simple_value!(Elems);

impl Codepoints {
    /// `text.codepoints()` or, with `ords`, `text.codepoint_ords()`.
    pub fn new(text: &str, ords: bool) -> Codepoints {
        Codepoints {
            text: text.to_owned(),
            chars: text.chars().collect(),
            ords,
        }
    }
}

impl Elems {
    /// `text.elems()` or, with `ords`, `text.elem_ords()`.
    pub fn new(text: &str, ords: bool) -> Elems {
        Elems {
            text: text.to_owned(),
            chars: text.chars().collect(),
            ords,
        }
    }

    fn len(&self) -> usize {
        if self.ords {
            self.text.len()
        } else {
            self.chars.len()
        }
    }

    fn nth<'v>(&self, index: usize, heap: Heap<'v>) -> Option<Value<'v>> {
        if self.ords {
            self.text
                .as_bytes()
                .get(index)
                .map(|b| heap.alloc(i32::from(*b)))
        } else {
            self.chars
                .get(index)
                .map(|c| heap.alloc_str(c.encode_utf8(&mut [0; 4])).to_value())
        }
    }
}

impl fmt::Display for Codepoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = if self.ords {
            "codepoint_ords"
        } else {
            "codepoints"
        };
        write!(f, "{}.{method}()", go_quote(&self.text))
    }
}

impl fmt::Display for Elems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = if self.ords { "elem_ords" } else { "elems" };
        write!(f, "{}.{method}()", go_quote(&self.text))
    }
}

fn error(message: String) -> starlark::Error {
    starlark::Error::new_other(anyhow::anyhow!(message))
}

#[starlark_value(type = "string.codepoints")]
impl<'v> StarlarkValue<'v> for Codepoints {
    fn to_bool(&self) -> bool {
        true
    }

    fn length(&self) -> starlark::Result<i32> {
        Err(error(
            "len: value of type string.codepoints has no len".to_owned(),
        ))
    }

    fn at(&self, index: Value, _heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        Err(error(format!(
            "unhandled index operation string.codepoints[{}]",
            crate::go::types::go_type(index)
        )))
    }

    #[allow(unsafe_code)]
    unsafe fn iterate(&self, me: Value<'v>, _heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        Ok(me)
    }

    #[allow(unsafe_code)]
    unsafe fn iter_next(&self, index: usize, heap: Heap<'v>) -> Option<Value<'v>> {
        let c = *self.chars.get(index)?;
        Some(if self.ords {
            heap.alloc(u32::from(c))
        } else {
            heap.alloc_str(c.encode_utf8(&mut [0; 4])).to_value()
        })
    }

    #[allow(unsafe_code)]
    unsafe fn iter_size_hint(&self, index: usize) -> (usize, Option<usize>) {
        let left = self.chars.len().saturating_sub(index);
        (left, Some(left))
    }

    #[allow(unsafe_code)]
    unsafe fn iter_stop(&self) {}
}

#[starlark_value(type = "string.elems")]
impl<'v> StarlarkValue<'v> for Elems {
    fn to_bool(&self) -> bool {
        true
    }

    fn length(&self) -> starlark::Result<i32> {
        i32::try_from(self.len()).map_err(|_| error("len: string too long".to_owned()))
    }

    fn at(&self, index: Value, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        let len = self.len();
        let Some(i) = index.unpack_i32().filter(|_| index.get_type() == "int") else {
            return Err(error(format!(
                "string.elems index: got {}, want int",
                crate::go::types::go_type(index)
            )));
        };
        let n = i64::try_from(len).unwrap_or(i64::MAX);
        let at = if i < 0 {
            i64::from(i) + n
        } else {
            i64::from(i)
        };
        usize::try_from(at)
            .ok()
            .and_then(|at| self.nth(at, heap))
            .ok_or_else(|| {
                error(format!(
                    "string.elems index {i} out of range [{}:{}]",
                    -n,
                    n - 1
                ))
            })
    }

    #[allow(unsafe_code)]
    unsafe fn iterate(&self, me: Value<'v>, _heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        Ok(me)
    }

    #[allow(unsafe_code)]
    unsafe fn iter_next(&self, index: usize, heap: Heap<'v>) -> Option<Value<'v>> {
        self.nth(index, heap)
    }

    #[allow(unsafe_code)]
    unsafe fn iter_size_hint(&self, index: usize) -> (usize, Option<usize>) {
        let left = self.len().saturating_sub(index);
        (left, Some(left))
    }

    #[allow(unsafe_code)]
    unsafe fn iter_stop(&self) {}
}
