//! The value types this function adds to Starlark.

pub mod attr_dict;
pub mod refs;
pub mod structs;
