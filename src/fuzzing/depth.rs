//! The request's depth check (`wire::depth`), which reads the wire bytes of
//! a RunFunctionRequest before anything that recurses does.
//!
//! Any bytes: the check ends without a panic. Then the input is a recipe
//! for a request nested within a few levels of the limit: its first byte
//! picks how many messages deep (the limit less 3 to the limit plus 4), its
//! second where the nesting starts (context, input, observed composite,
//! desired resource, extra or required resources), and the bits of the
//! rest whether each level is a map or a list. The check refuses it
//! exactly when it nests deeper than the limit, as Go's decoder does, and
//! what it accepts decodes on a run's stack.

use bytes::Bytes;

use crate::limits::Limits;
use crate::wire::codec;
use crate::wire::depth::{MAX_MESSAGE_DEPTH, TooDeep, check_request};

/// One message on the way down: the bytes it holds before its child, and
/// the field number of that child.
#[derive(Clone, Copy)]
struct Level {
    before: &'static [u8],
    child: u8,
}

/// A map entry's key field: `k`.
const KEY: &[u8] = &[0x0a, 0x01, b'k'];

/// From the request to the first `Struct`, by the field that holds it.
const ROUTES: [&[Level]; 6] = [
    // context
    &[Level {
        before: &[],
        child: 5,
    }],
    // input
    &[Level {
        before: &[],
        child: 4,
    }],
    // observed.composite.resource
    &[
        Level {
            before: &[],
            child: 2,
        },
        Level {
            before: &[],
            child: 1,
        },
        Level {
            before: &[],
            child: 1,
        },
    ],
    // desired.resources["k"].resource
    &[
        Level {
            before: &[],
            child: 3,
        },
        Level {
            before: &[],
            child: 2,
        },
        Level {
            before: KEY,
            child: 2,
        },
        Level {
            before: &[],
            child: 1,
        },
    ],
    // extra_resources["k"].items[0].resource
    &[
        Level {
            before: &[],
            child: 6,
        },
        Level {
            before: KEY,
            child: 2,
        },
        Level {
            before: &[],
            child: 1,
        },
        Level {
            before: &[],
            child: 1,
        },
    ],
    // required_resources["k"].items[0].resource
    &[
        Level {
            before: &[],
            child: 8,
        },
        Level {
            before: KEY,
            child: 2,
        },
        Level {
            before: &[],
            child: 1,
        },
        Level {
            before: &[],
            child: 1,
        },
    ],
];

/// The target's body.
pub fn depth(data: &[u8]) {
    let _ = check_request(data);
    let (Some(&deep), Some(&route)) = (data.first(), data.get(1)) else {
        return;
    };
    let messages = MAX_MESSAGE_DEPTH - 3 + usize::from(deep % 8);
    let bytes = nested(
        messages,
        ROUTES[usize::from(route) % ROUTES.len()],
        &data[2..],
    );
    let want = if messages > MAX_MESSAGE_DEPTH {
        Err(TooDeep)
    } else {
        Ok(())
    };
    assert_eq!(
        check_request(&bytes),
        want,
        "a request {messages} messages deep"
    );
    if want.is_ok() {
        let bytes = Bytes::from(bytes);
        let decoded = std::thread::Builder::new()
            .stack_size(Limits::default().stack_bytes)
            .spawn(move || codec::decode(&bytes).is_ok())
            .expect("a thread")
            .join()
            .expect("decoding does not panic");
        assert!(
            decoded,
            "a request {messages} messages deep does not decode"
        );
    }
}

/// A request exactly `messages` messages deep (itself included) down
/// `route`, then maps or lists as `shape`'s bits say.
fn nested(messages: usize, route: &[Level], shape: &[u8]) -> Vec<u8> {
    // The route's first level is the request itself.
    let mut levels = route.to_vec();
    let mut bits = shape
        .iter()
        .flat_map(|b| (0..8).map(move |i| b >> i & 1 == 1))
        .chain(std::iter::repeat(true));
    // Where the last level's child is: a Struct, or a Value.
    let mut at_struct = true;
    while levels.len() < messages {
        if at_struct {
            levels.push(Level {
                before: &[],
                child: 1,
            }); // Struct.fields
            levels.push(Level {
                before: KEY,
                child: 2,
            }); // the entry's value
            at_struct = false;
        } else if bits.next().unwrap_or(true) {
            levels.push(Level {
                before: &[],
                child: 5,
            }); // Value.struct_value
            at_struct = true;
        } else {
            levels.push(Level {
                before: &[],
                child: 6,
            }); // Value.list_value
            levels.push(Level {
                before: &[],
                child: 1,
            }); // ListValue.values
        }
    }
    // The innermost message is empty: cut the chain where it holds `messages`.
    levels.truncate(messages - 1);
    // Each level's content length, innermost first.
    let mut lengths = vec![0usize; levels.len() + 1];
    for (i, level) in levels.iter().enumerate().rev() {
        let child = lengths[i + 1];
        lengths[i] = level.before.len() + 1 + varint_len(child) + child;
    }
    let mut out = Vec::with_capacity(lengths[0]);
    for (i, level) in levels.iter().enumerate() {
        out.extend_from_slice(level.before);
        out.push(level.child << 3 | 2);
        varint(&mut out, lengths[i + 1]);
    }
    out
}

fn varint_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

fn varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push(u8::try_from(n & 0x7f).expect("seven bits") | 0x80);
        n >>= 7;
    }
    out.push(u8::try_from(n).expect("seven bits"));
}
