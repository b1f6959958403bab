//! Hostile inputs: scripts and requests written to knock the server over,
//! each with what it must get instead. Shared by `tests/it/hostile.rs`
//! (what the answer says) and `benches/hostile.rs` (how fast it comes, how
//! soon the worker is free, how much memory the server took meanwhile).

use bytes::Bytes;
use function_sdk_rust::proto::v1::RunFunctionRequest;
use prost::Message;
use serde_json::Value;

/// What a hostile input must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A normal answer: the Go implementation accepts it too.
    Success,
    /// A Fatal result whose message contains the text.
    Fatal(&'static str),
    /// A gRPC error whose message contains the text.
    Refused(&'static str),
    /// A Fatal result naming the memory budget, or the wall-clock limit
    /// when the run is slow enough to reach it first (as it does in debug
    /// builds).
    Budget,
    /// A Fatal result whose message contains the text, or names the
    /// wall-clock limit (slow debug builds) or the memory budget (the
    /// allocator keeps freed memory resident for a while, so a run that
    /// copies 100 MB a few times can hold more than the budget at once).
    FatalOrLate(&'static str),
}

impl Expect {
    /// Whether a Fatal message is what this expects.
    pub fn fatal_matches(self, message: &str) -> bool {
        match self {
            Expect::Fatal(text) => message.contains(text),
            Expect::Budget => {
                message.contains("memory budget") || message.contains("wall-clock limit")
            }
            Expect::FatalOrLate(text) => {
                message.contains(text)
                    || message.contains("wall-clock limit")
                    || message.contains("memory budget")
            }
            Expect::Success | Expect::Refused(_) => false,
        }
    }
}

/// One hostile input.
pub struct Case {
    pub name: &'static str,
    pub request: Bytes,
    pub expect: Expect,
}

fn script(name: &'static str, source: &str, expect: Expect) -> Case {
    Case {
        name,
        request: super::request(source, &Value::Null, Vec::new()),
        expect,
    }
}

/// A request whose observed composite nests `depth` maps.
fn deep_observed(depth: usize) -> Bytes {
    let input = super::to_struct(&serde_json::json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"source": "def depth():\n    n = 0\n    v = oxr\n    for i in range(100000):\n        if not v.get(\"a\"):\n            break\n        v = v[\"a\"]\n        n += 1\n    return n\ndxr[\"status\"] = {\"depth\": depth()}\n"},
    }));
    let mut bytes = RunFunctionRequest {
        input: Some(input),
        ..RunFunctionRequest::default()
    }
    .encode_to_vec();
    bytes.extend(super::deep_observed(depth + 1, 0));
    Bytes::from(bytes)
}

const MEMORY: Expect = Expect::Budget;

/// Every hostile input.
pub fn cases() -> Vec<Case> {
    let shared = |encode: &str| {
        format!(
            "def build():\n    d = {{}}\n    for i in range(64):\n        d = {{\"a\": d, \"b\": d}}\n    return d\nx = {encode}(build())\n"
        )
    };
    vec![
        script(
            "1,500 nested brackets",
            &format!("x = {}{}\n", "[".repeat(1500), "]".repeat(1500)),
            Expect::Success,
        ),
        script(
            "2,000 nested parentheses",
            &format!("x = {}1{}\n", "(".repeat(2000), ")".repeat(2000)),
            Expect::Success,
        ),
        script(
            "5,000-deep dict literal",
            &format!("x = {}1{}\n", "{\"a\": ".repeat(5000), "}".repeat(5000)),
            Expect::Success,
        ),
        script(
            "20,000 nested brackets",
            &format!("x = {}{}\n", "[".repeat(20_000), "]".repeat(20_000)),
            Expect::Fatal("nests more than 10000 levels"),
        ),
        script(
            "a chain of 1,000,000 additions",
            &format!("x = 1{}\n", " + 1".repeat(1_000_000)),
            Expect::Fatal("nests more than 10000 levels"),
        ),
        Case {
            name: "observed object 40 maps deep",
            request: deep_observed(40),
            expect: Expect::Success,
        },
        Case {
            name: "observed object 3,000 maps deep",
            request: deep_observed(3000),
            expect: Expect::Success,
        },
        Case {
            name: "observed object 4,000 maps deep",
            request: deep_observed(4000),
            expect: Expect::Refused("nests more than 10000 protobuf messages"),
        },
        script(
            "list.extend doubling",
            "l = [1]\nfor i in range(100):\n    l.extend(l)\n",
            MEMORY,
        ),
        script(
            "list += doubling in a function",
            "def f():\n    l = [1]\n    for i in range(100):\n        l += l\nf()\n",
            MEMORY,
        ),
        script(
            "string += doubling",
            "def f():\n    s = \"ab\"\n    for i in range(100):\n        s += s\nf()\n",
            MEMORY,
        ),
        script(
            "yaml.encode of shared values",
            &shared("yaml.encode"),
            MEMORY,
        ),
        script(
            "json.encode of shared values",
            &shared("json.encode"),
            MEMORY,
        ),
        script("str of shared values", &shared("str"), MEMORY),
        script(
            "regex.find_all matching every position",
            "x = regex.find_all(\"\", \"a\" * 20000000)\n",
            MEMORY,
        ),
        script(
            "big-int shifts",
            "def f():\n    x = 3\n    for i in range(100000):\n        x = x << 100000\nf()\n",
            Expect::Fatal("shift count too large"),
        ),
        script(
            "big-int squaring",
            "def f():\n    x = 3\n    for i in range(100):\n        x = x * x\nf()\n",
            // Multiplying ints of tens of MB takes seconds: the clock
            // stops it before the result passes the budget.
            Expect::Fatal("wall-clock limit"),
        ),
        script(
            "deep recursion",
            "def f(n):\n    return f(n + 1)\nf(0)\n",
            Expect::Fatal("starlark execution"),
        ),
        script(
            // A million, of 10 KB each: the 256 MiB budget runs out after
            // some 25,000 calls, long before the step limit (about 125,000
            // calls). With small bodies the two raced, and which came
            // first hung on how busy the machine was: the budget counts a
            // worker's resident memory, which moves with the allocator's
            // timing.
            "1,000,000 Resource() calls",
            "def f():\n    pad = \"x\" * 10000\n    for i in range(1000000):\n        Resource(\"r%d\" % i, {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"data\": {\"i\": str(i), \"pad\": pad}})\nf()\n",
            MEMORY,
        ),
        script(
            "a 100 MB fail() message",
            "fail(\"x\" * 100000000)\n",
            Expect::FatalOrLate("bytes in all]"),
        ),
        script(
            "print of 100 MB",
            "s = \"x\" * 50000000\nprint(s, s)\n",
            Expect::FatalOrLate("printed more than 1 MiB"),
        ),
        script(
            "billion laughs in YAML",
            "def laughs():\n    doc = \"a: &a [\\\"lol\\\",\\\"lol\\\",\\\"lol\\\",\\\"lol\\\",\\\"lol\\\",\\\"lol\\\",\\\"lol\\\",\\\"lol\\\",\\\"lol\\\"]\\n\"\n    for n in \"bcdefghi\".elems():\n        prev = chr(ord(n) - 1)\n        doc += n + \": &\" + n + \" [\" + \",\".join([\"*\" + prev] * 9) + \"]\\n\"\n    return doc\nx = yaml.decode(laughs())\n",
            Expect::Fatal("excessive aliasing"),
        ),
        script(
            "JSON 1,000,000 arrays deep",
            "x = json.decode(\"[\" * 1000000 + \"]\" * 1000000)\n",
            Expect::Fatal("json.decode"),
        ),
        script(
            "an endless loop",
            "while True:\n    pass\n",
            // The step limit stops it within a second, unless the machine
            // is so busy that the run gets less than a tenth of a core
            // for ten seconds; then the clock does, as it should.
            Expect::FatalOrLate("1000000 steps"),
        ),
        script(
            "equality of shared values",
            "def build():\n    d = {\"end\": 1}\n    for i in range(64):\n        d = {\"a\": d, \"b\": d}\n    return d\nx = build() == build()\n",
            Expect::Fatal("wall-clock limit"),
        ),
        script(
            "a list of a billion numbers",
            "x = list(range(1000000000))\n",
            MEMORY,
        ),
        script(
            "str.format of shared values",
            &shared("\"{}\".format"),
            MEMORY,
        ),
        script(
            "str.join of one big string repeated",
            "x = \",\".join([\"x\" * 1000000] * 10000)\n",
            MEMORY,
        ),
        script(
            "str.replace growing quadratically",
            "s = \"a\" * 100000\nx = s.replace(\"a\", s)\n",
            MEMORY,
        ),
        script(
            "a string built piece by piece in a function",
            "def f():\n    s = \"\"\n    for i in range(10000):\n        s += str(i)\n    return s\ndxr[\"status\"] = {\"length\": len(f())}\n",
            Expect::Success,
        ),
    ]
}
