//! The value types this function adds to Starlark.

pub mod attr_dict;
pub mod dict_methods;
pub mod mapping;
pub mod module;
pub mod mutable_struct;
pub mod range;
pub mod receiver_fn;
pub mod refs;
pub mod schema;
pub mod schema_dict;
pub mod string_iter;
pub mod structs;
pub mod text;
pub mod when;
