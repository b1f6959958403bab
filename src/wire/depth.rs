//! How deep a RunFunctionRequest nests, measured on its wire bytes without
//! recursion, before anything decodes it.
//!
//! protobuf decoders recurse once per nested message, and so do the drop,
//! the conversion to Starlark values and the encoding of the response.
//! The Go implementation's decoder stops at 10,000 nested messages; this
//! function accepts the same, so that every request Go accepts is accepted
//! here, and refuses deeper ones with a message naming the limit, before
//! any code that recurses sees them. A map of a `Struct` costs three
//! levels (the struct, its entry, the value), a list two.

use std::fmt;

/// The deepest message nesting accepted: go-protobuf's default recursion
/// limit, which the Go implementation decodes with.
pub const MAX_MESSAGE_DEPTH: usize = 10_000;

/// The message types that can appear in a request, as far as nesting goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Msg {
    Request,
    /// Anything that holds no messages that can nest further.
    Leaf,
    State,
    ResourceEntry,
    Resource,
    ResourcesEntry,
    Resources,
    CredentialsEntry,
    Credentials,
    CredentialData,
    Struct,
    StructEntry,
    Value,
    ListValue,
}

/// The message type of field `field` of a `msg`, if it is a message.
fn child(msg: Msg, field: u64) -> Option<Msg> {
    let inner = match msg {
        Msg::Request => match field {
            2 | 3 => Msg::State,
            4 | 5 => Msg::Struct,
            6 | 8 => Msg::ResourcesEntry,
            7 => Msg::CredentialsEntry,
            _ => Msg::Leaf,
        },
        Msg::State => match field {
            1 => Msg::Resource,
            2 => Msg::ResourceEntry,
            _ => Msg::Leaf,
        },
        Msg::ResourceEntry if field == 2 => Msg::Resource,
        Msg::Resources if field == 1 => Msg::Resource,
        Msg::Resource if field == 1 => Msg::Struct,
        Msg::ResourcesEntry if field == 2 => Msg::Resources,
        Msg::CredentialsEntry if field == 2 => Msg::Credentials,
        Msg::Credentials if field == 1 => Msg::CredentialData,
        Msg::Struct if field == 1 => Msg::StructEntry,
        Msg::StructEntry if field == 2 => Msg::Value,
        Msg::ListValue if field == 1 => Msg::Value,
        Msg::Value if field == 5 => Msg::Struct,
        Msg::Value if field == 6 => Msg::ListValue,
        _ => Msg::Leaf,
    };
    Some(inner)
}

/// A request nested deeper than [`MAX_MESSAGE_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep;

impl fmt::Display for TooDeep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the request nests more than {MAX_MESSAGE_DEPTH} protobuf messages deep (about {} levels of maps inside maps), which neither this function nor the Go implementation decodes; flatten the deepest object of the observed or desired state, the context or the input",
            MAX_MESSAGE_DEPTH / 3
        )
    }
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Checks that `bytes`, a RunFunctionRequest, nests at most
/// [`MAX_MESSAGE_DEPTH`] messages deep. Malformed bytes pass: the decoder
/// that follows reports them.
pub fn check_request(bytes: &[u8]) -> Result<(), TooDeep> {
    // The open messages: their type and where each ends.
    let mut open: Vec<(Msg, usize)> = vec![(Msg::Request, bytes.len())];
    let mut at = 0;
    while let Some(&(msg, end)) = open.last() {
        if at >= end {
            open.pop();
            continue;
        }
        let Some(key) = varint(bytes, &mut at) else {
            return Ok(());
        };
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                if varint(bytes, &mut at).is_none() {
                    return Ok(());
                }
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let Some(len) = varint(bytes, &mut at) else {
                    return Ok(());
                };
                let Some(inner_end) = usize::try_from(len)
                    .ok()
                    .and_then(|len| at.checked_add(len))
                    .filter(|&e| e <= end)
                else {
                    return Ok(());
                };
                match child(msg, field) {
                    Some(inner) if inner != Msg::Leaf => {
                        if open.len() >= MAX_MESSAGE_DEPTH {
                            return Err(TooDeep);
                        }
                        open.push((inner, inner_end));
                    }
                    _ => at = inner_end,
                }
            }
            // Groups (3, 4) and unknown wire types: not in these messages.
            _ => return Ok(()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // The limit's boundary on encoded requests is in tests/it/hostile.rs,
    // whose support builds deep encodings in linear time.

    #[test]
    fn malformed_bytes_are_left_to_the_decoder() {
        for bytes in [&[0x12, 0xff][..], &[0x12, 0x05, 0x0a][..], &[0xff; 12][..]] {
            assert_eq!(check_request(bytes), Ok(()));
        }
    }
}
