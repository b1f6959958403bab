//! Encoded `google.protobuf.Struct` bytes straight to Starlark values,
//! with the same result as decoding them with prost and converting the
//! decoded struct ([`super::struct_to`]): keys sorted, a repeated map key
//! keeps its last entry, a value given in several pieces merges them as
//! protobuf does (the last kind wins; structs and lists of the same kind
//! in a row combine), unknown fields are skipped, strings must be UTF-8.

use bytes::Buf;
use prost::encoding::{DecodeContext, WireType, decode_key, decode_varint, skip_field};
use smallvec::SmallVec;

use super::{ConvertError, Flavor, MALFORMED, Target, field, index, number_to};

/// `Struct.fields`, `ListValue.values`, a map entry's key.
const TAG_1: u32 = 1;
/// A map entry's value.
const ENTRY_VALUE: u32 = 2;

/// The encoded pieces of one value, merged in order: one, unless the
/// sender split it.
type Pieces<'a> = SmallVec<[&'a [u8]; 1]>;

/// A `google.protobuf.Value` being read: its kind so far.
enum Kind<'a> {
    Unset,
    Null,
    Number(f64),
    Str(&'a str),
    Bool(bool),
    /// The pieces of a struct value, merged in order.
    Struct(Pieces<'a>),
    /// The pieces of a list value, appended in order.
    List(Pieces<'a>),
}

fn malformed(what: &str) -> ConvertError {
    ConvertError::new(format!("{MALFORMED} {what}"))
}

fn decode_error(e: &prost::DecodeError) -> ConvertError {
    ConvertError::new(format!("{MALFORMED}: {e}"))
}

/// The next field's key, when there is one.
fn next_key(buf: &mut &[u8]) -> Result<Option<(u32, WireType)>, ConvertError> {
    if !buf.has_remaining() {
        return Ok(None);
    }
    decode_key(buf).map(Some).map_err(|e| decode_error(&e))
}

/// A length-delimited field's payload.
fn delimited<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], ConvertError> {
    let length = decode_varint(buf).map_err(|e| decode_error(&e))?;
    let length = usize::try_from(length).map_err(|_| malformed("length"))?;
    if length > buf.len() {
        return Err(malformed("length"));
    }
    let (payload, rest) = buf.split_at(length);
    *buf = rest;
    Ok(payload)
}

fn skip(wire_type: WireType, tag: u32, buf: &mut &[u8]) -> Result<(), ConvertError> {
    skip_field(wire_type, tag, buf, DecodeContext::default()).map_err(|e| decode_error(&e))
}

fn expect(wire_type: WireType, expected: WireType) -> Result<(), ConvertError> {
    if wire_type == expected {
        Ok(())
    } else {
        Err(malformed("wire type"))
    }
}

/// Converts an encoded struct (given in pieces, merged in order).
pub(super) fn struct_to<T: Target>(
    t: &T,
    pieces: &[&[u8]],
    flavor: Flavor,
) -> Result<T::V, ConvertError> {
    let mut entries: Vec<(&str, Pieces<'_>)> = Vec::new();
    for piece in pieces {
        let mut buf = *piece;
        while let Some((tag, wire_type)) = next_key(&mut buf)? {
            if tag != TAG_1 {
                skip(wire_type, tag, &mut buf)?;
                continue;
            }
            expect(wire_type, WireType::LengthDelimited)?;
            entries.push(entry(delimited(&mut buf)?)?);
        }
    }
    // Stable: among entries of one key, the last is kept (given to the
    // first, which stays).
    if !entries.is_sorted_by(|a, b| a.0 < b.0) {
        entries.sort_by(|a, b| a.0.cmp(b.0));
        entries.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(&mut later.1, &mut kept.1);
            }
            same
        });
    }
    let mut converted = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let v = value_to(t, &value, flavor).map_err(|e| e.at(field(key)))?;
        converted.push((key.to_owned(), v));
    }
    Ok(t.dict(converted, flavor))
}

/// A map entry: its key (the last given) and its value's pieces.
fn entry(mut buf: &[u8]) -> Result<(&str, Pieces<'_>), ConvertError> {
    let mut key = "";
    let mut value = Pieces::new();
    while let Some((tag, wire_type)) = next_key(&mut buf)? {
        match tag {
            TAG_1 => {
                expect(wire_type, WireType::LengthDelimited)?;
                key = utf8(delimited(&mut buf)?)?;
            }
            ENTRY_VALUE => {
                expect(wire_type, WireType::LengthDelimited)?;
                value.push(delimited(&mut buf)?);
            }
            _ => skip(wire_type, tag, &mut buf)?,
        }
    }
    Ok((key, value))
}

fn utf8(bytes: &[u8]) -> Result<&str, ConvertError> {
    std::str::from_utf8(bytes).map_err(|_| malformed("string: invalid UTF-8"))
}

/// An encoded value's kind (given in pieces, merged in order): the last
/// given, where struct or list pieces in a row combine.
fn kind_of<'a>(pieces: &[&'a [u8]]) -> Result<Kind<'a>, ConvertError> {
    let mut kind = Kind::Unset;
    for piece in pieces {
        let mut buf = *piece;
        while let Some((tag, wire_type)) = next_key(&mut buf)? {
            kind = match tag {
                1 => {
                    expect(wire_type, WireType::Varint)?;
                    decode_varint(&mut buf).map_err(|e| decode_error(&e))?;
                    Kind::Null
                }
                2 => {
                    expect(wire_type, WireType::SixtyFourBit)?;
                    if buf.len() < 8 {
                        return Err(malformed("number"));
                    }
                    Kind::Number(buf.get_f64_le())
                }
                3 => {
                    expect(wire_type, WireType::LengthDelimited)?;
                    Kind::Str(utf8(delimited(&mut buf)?)?)
                }
                4 => {
                    expect(wire_type, WireType::Varint)?;
                    Kind::Bool(decode_varint(&mut buf).map_err(|e| decode_error(&e))? != 0)
                }
                5 | 6 => {
                    expect(wire_type, WireType::LengthDelimited)?;
                    let piece = delimited(&mut buf)?;
                    // The same kind again merges; another starts afresh.
                    let mut pieces = match (tag, kind) {
                        (5, Kind::Struct(pieces)) | (6, Kind::List(pieces)) => pieces,
                        _ => Pieces::new(),
                    };
                    pieces.push(piece);
                    if tag == 5 {
                        Kind::Struct(pieces)
                    } else {
                        Kind::List(pieces)
                    }
                }
                _ => {
                    skip(wire_type, tag, &mut buf)?;
                    kind
                }
            };
        }
    }
    Ok(kind)
}

/// The strings at `paths` (each the keys of nested structs) in an encoded
/// struct given in pieces, into `out` (one per path), as reading the
/// decoded struct would find them: `None` where a key is missing, a step
/// is not a struct, the last is not a string, or the bytes on the way are
/// malformed. Each struct on the way is scanned once for all the paths
/// through it.
pub(super) fn strings_at<'a>(pieces: &[&'a [u8]], paths: &[&[&str]], out: &mut [Option<&'a str>]) {
    let mut found: SmallVec<[Option<Pieces<'a>>; 4]> = SmallVec::from_elem(None, paths.len());
    if scan_entries(pieces, |key, value| {
        for (path, slot) in paths.iter().zip(found.iter_mut()) {
            // A repeated key: the last entry is the one decoding keeps.
            if path.first().is_some_and(|first| first.as_bytes() == key) {
                *slot = Some(value.clone());
            }
        }
    })
    .is_none()
    {
        return;
    }
    let mut done: SmallVec<[bool; 4]> = SmallVec::from_elem(false, paths.len());
    for i in 0..paths.len() {
        let Some(value) = found[i].take().filter(|_| !done[i]) else {
            continue;
        };
        match kind_of(&value) {
            Ok(Kind::Str(s)) if paths[i].len() == 1 => out[i] = Some(s),
            Ok(Kind::Struct(inner)) if paths[i].len() > 1 => {
                // The paths through the same key go on together.
                let group: SmallVec<[usize; 4]> = (i..paths.len())
                    .filter(|&j| !done[j] && paths[j].len() > 1 && paths[j][0] == paths[i][0])
                    .collect();
                let rests: SmallVec<[&[&str]; 4]> = group.iter().map(|&j| &paths[j][1..]).collect();
                let mut sub: SmallVec<[Option<&'a str>; 4]> =
                    SmallVec::from_elem(None, group.len());
                strings_at(&inner, &rests, &mut sub);
                for (&j, s) in group.iter().zip(sub) {
                    out[j] = s;
                    done[j] = true;
                }
            }
            _ => {}
        }
    }
}

/// Calls `f` with each entry of an encoded struct given in pieces (its
/// key's bytes, unchecked, and its value's pieces); `None` when the bytes
/// are malformed.
fn scan_entries<'a>(pieces: &[&'a [u8]], mut f: impl FnMut(&[u8], &Pieces<'a>)) -> Option<()> {
    for piece in pieces {
        let mut buf = *piece;
        while let Some((tag, wire_type)) = next_key(&mut buf).ok()? {
            if tag != TAG_1 {
                skip(wire_type, tag, &mut buf).ok()?;
                continue;
            }
            expect(wire_type, WireType::LengthDelimited).ok()?;
            let mut entry = delimited(&mut buf).ok()?;
            let mut key: &[u8] = &[];
            let mut value = Pieces::new();
            while let Some((tag, wire_type)) = next_key(&mut entry).ok()? {
                match tag {
                    TAG_1 | ENTRY_VALUE => {
                        expect(wire_type, WireType::LengthDelimited).ok()?;
                        let bytes = delimited(&mut entry).ok()?;
                        if tag == TAG_1 {
                            key = bytes;
                        } else {
                            value.push(bytes);
                        }
                    }
                    _ => skip(wire_type, tag, &mut entry).ok()?,
                }
            }
            f(key, &value);
        }
    }
    Some(())
}

/// Converts an encoded value (given in pieces, merged in order).
fn value_to<T: Target>(t: &T, pieces: &[&[u8]], flavor: Flavor) -> Result<T::V, ConvertError> {
    let kind = kind_of(pieces)?;
    Ok(match kind {
        Kind::Unset | Kind::Null => t.none(),
        Kind::Number(n) => number_to(t, n)?,
        Kind::Str(s) => t.str(s),
        Kind::Bool(b) => t.bool(b),
        Kind::Struct(pieces) => struct_to(t, &pieces, flavor)?,
        Kind::List(pieces) => {
            let mut items = Vec::new();
            for piece in pieces {
                let mut buf = piece;
                while let Some((tag, wire_type)) = next_key(&mut buf)? {
                    if tag != TAG_1 {
                        skip(wire_type, tag, &mut buf)?;
                        continue;
                    }
                    expect(wire_type, WireType::LengthDelimited)?;
                    let item = delimited(&mut buf)?;
                    let i = items.len();
                    items.push(value_to(t, &[item], flavor).map_err(|e| e.at(index(i)))?);
                }
            }
            t.list(items)
        }
    })
}

#[cfg(test)]
mod tests {
    use pbjson_types::value::Kind as PbKind;
    use pbjson_types::{ListValue, Struct, Value as PbValue};
    use proptest::prelude::*;
    use prost::Message;
    use starlark::values::FrozenHeap;

    use super::super::{Flavor, encoded_struct_to_frozen, struct_to_frozen};

    /// What both conversions give: the value's repr, or the error.
    fn both(encoded: &[u8]) -> (Result<String, String>, Result<String, String>) {
        let heap = FrozenHeap::new();
        let direct = encoded_struct_to_frozen(&heap, encoded, Flavor::Attr)
            .map(|v| v.to_value().to_repr())
            .map_err(|e| e.to_string());
        let decoded = Struct::decode(encoded)
            .map_err(|e| e.to_string())
            .and_then(|s| {
                struct_to_frozen(&heap, &s, Flavor::Attr)
                    .map(|v| v.to_value().to_repr())
                    .map_err(|e| e.to_string())
            });
        (direct, decoded)
    }

    fn value() -> impl Strategy<Value = PbValue> {
        let leaf = prop_oneof![
            Just(PbKind::NullValue(0)),
            any::<bool>().prop_map(PbKind::BoolValue),
            "[a-zé ]{0,6}".prop_map(PbKind::StringValue),
            prop_oneof![
                any::<f64>(),
                (-1_000_000i32..1_000_000).prop_map(f64::from),
                Just(1e19),
                Just(9_007_199_254_740_993.0),
                Just(-0.0),
            ]
            .prop_map(PbKind::NumberValue),
        ]
        .prop_map(|k| PbValue { kind: Some(k) });
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|values| PbKind::ListValue(ListValue { values })),
                prop::collection::hash_map("[a-d]{1,3}", inner, 0..5)
                    .prop_map(|fields| PbKind::StructValue(Struct { fields })),
            ]
            .prop_map(|k| PbValue { kind: Some(k) })
        })
    }

    proptest! {
        #[test]
        fn converts_as_decoding_then_converting(
            fields in prop::collection::hash_map("[a-e]{1,4}", value(), 0..6)
        ) {
            let encoded = Struct { fields }.encode_to_vec();
            let (direct, decoded) = both(&encoded);
            prop_assert_eq!(direct, decoded);
        }
    }

    proptest! {
        #[test]
        fn strings_are_found_as_in_the_decoded_struct(
            fields in prop::collection::hash_map("[a-e]{1,2}", value(), 0..6),
            paths in prop::collection::vec(prop::collection::vec("[a-e]{1,2}", 1..4), 1..5),
        ) {
            let decoded = Struct { fields };
            let encoded = decoded.encode_to_vec();
            let paths: Vec<Vec<&str>> = paths.iter().map(|p| p.iter().map(String::as_str).collect()).collect();
            let paths: Vec<&[&str]> = paths.iter().map(Vec::as_slice).collect();
            let mut found = vec![None; paths.len()];
            super::strings_at(&[&encoded], &paths, &mut found);
            for (path, found) in paths.iter().zip(found) {
                prop_assert_eq!(found, super::super::string_at(&decoded, path), "{:?}", path);
            }
        }
    }

    /// A map entry with the given key and encoded value.
    fn entry(key: &str, value: &PbValue) -> Vec<u8> {
        let mut entry = Vec::new();
        prost::encoding::string::encode(1, &key.to_owned(), &mut entry);
        prost::encoding::message::encode(2, value, &mut entry);
        let mut field = Vec::new();
        prost::encoding::bytes::encode(1, &entry, &mut field);
        field
    }

    fn string(s: &str) -> PbValue {
        PbValue {
            kind: Some(PbKind::StringValue(s.to_owned())),
        }
    }

    fn nested(key: &str, value: PbValue) -> PbValue {
        PbValue {
            kind: Some(PbKind::StructValue(Struct {
                fields: [(key.to_owned(), value)].into(),
            })),
        }
    }

    #[test]
    fn a_repeated_key_keeps_its_last_entry() {
        let mut encoded = entry("a", &string("first"));
        encoded.extend(entry("b", &string("b")));
        encoded.extend(entry("a", &string("last")));
        let (direct, decoded) = both(&encoded);
        assert_eq!(direct, decoded);
        assert_eq!(direct.unwrap(), r#"{"a": "last", "b": "b"}"#);
    }

    #[test]
    fn a_value_in_pieces_merges_as_protobuf_does() {
        // Two struct pieces for one entry's value merge; a string piece
        // between two list pieces leaves only the last list.
        let mut value = Vec::new();
        prost::encoding::string::encode(1, &"k".to_owned(), &mut value);
        prost::encoding::message::encode(2, &nested("x", string("1")), &mut value);
        prost::encoding::message::encode(2, &nested("y", string("2")), &mut value);
        let mut encoded = Vec::new();
        prost::encoding::bytes::encode(1, &value, &mut encoded);
        let list = |s: &str| PbValue {
            kind: Some(PbKind::ListValue(ListValue {
                values: vec![string(s)],
            })),
        };
        let mut pieces = Vec::new();
        prost::encoding::string::encode(1, &"l".to_owned(), &mut pieces);
        prost::encoding::message::encode(2, &list("a"), &mut pieces);
        prost::encoding::message::encode(2, &string("s"), &mut pieces);
        prost::encoding::message::encode(2, &list("b"), &mut pieces);
        prost::encoding::message::encode(2, &list("c"), &mut pieces);
        prost::encoding::bytes::encode(1, &pieces, &mut encoded);
        let (direct, decoded) = both(&encoded);
        assert_eq!(direct, decoded);
        assert_eq!(
            direct.unwrap(),
            r#"{"k": {"x": "1", "y": "2"}, "l": ["b", "c"]}"#
        );
    }

    #[test]
    fn unknown_fields_are_skipped_and_missing_parts_are_empty() {
        let mut encoded = Vec::new();
        prost::encoding::uint64::encode(9, &7, &mut encoded);
        // An entry with neither key nor value: "" -> None.
        prost::encoding::bytes::encode(1, &Vec::<u8>::new(), &mut encoded);
        encoded.extend(entry("a", &PbValue { kind: None }));
        let (direct, decoded) = both(&encoded);
        assert_eq!(direct, decoded);
        assert_eq!(direct.unwrap(), r#"{"": None, "a": None}"#);
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let mut bad_utf8 = Vec::new();
        prost::encoding::bytes::encode(1, &vec![0xff, 0xfe], &mut bad_utf8);
        let mut invalid_entry = Vec::new();
        prost::encoding::bytes::encode(1, &bad_utf8, &mut invalid_entry);
        let mut cut = entry("a", &string("abc"));
        cut.truncate(cut.len() - 1);
        let mut wrong_wire_type = Vec::new();
        prost::encoding::uint64::encode(1, &3, &mut wrong_wire_type);
        for encoded in [invalid_entry, cut, wrong_wire_type] {
            let (direct, decoded) = both(&encoded);
            assert!(direct.is_err(), "{encoded:?}: {direct:?}");
            assert!(decoded.is_err(), "{encoded:?}: {decoded:?}");
        }
    }
}
