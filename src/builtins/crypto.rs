//! The `crypto` namespace: digests, HMAC and deterministic ids, each
//! returned as lowercase hexadecimal text.

use anyhow::anyhow;
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::Value;
use starlark::values::bytes::StarlarkBytes;

/// The bytes a `str` (its UTF-8 encoding) or `bytes` argument holds, or the
/// reference's "FN: got T, want string or bytes".
pub(crate) fn str_or_bytes<'v>(fn_name: &str, v: Value<'v>) -> anyhow::Result<&'v [u8]> {
    if let Some(s) = v.unpack_str() {
        return Ok(s.as_bytes());
    }
    if let Some(b) = StarlarkBytes::from_value(v) {
        return Ok(b.as_bytes());
    }
    Err(anyhow!(
        "{fn_name}: got {}, want string or bytes",
        v.get_type()
    ))
}

/// The hex SHA-256 digest `stable_id` truncates.
fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// `length` of `stable_id`: an int (not a bool) in 1..=64.
fn stable_id_length(length: Option<Value>) -> anyhow::Result<usize> {
    const FN: &str = "crypto.stable_id";
    let Some(length) = length else {
        return Ok(8);
    };
    if length.get_type() != "int" {
        return Err(anyhow!(
            "{FN}: for parameter length: got {}, want int",
            length.get_type()
        ));
    }
    // Integers outside i32 (big ints included) are out of range anyway.
    match length.unpack_i32().and_then(|n| usize::try_from(n).ok()) {
        Some(n @ 1..=64) => Ok(n),
        _ => Err(anyhow!(
            "{FN}: length must be between 1 and 64, got {}",
            length.to_str()
        )),
    }
}

/// Registers the `crypto` module.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "crypto", crypto_members, None);
}

#[starlark_module]
fn crypto_members(builder: &mut GlobalsBuilder) {
    /// The SHA-256 digest of `data` as 64 lowercase hex characters.
    ///
    /// `data` is a string (hashed as its UTF-8 bytes) or bytes.
    ///
    /// # Example
    /// ```python
    /// crypto.sha256("hello world")
    /// # "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
    /// ```
    fn sha256<'v>(data: Value<'v>) -> anyhow::Result<String> {
        Ok(sha256_hex(str_or_bytes("crypto.sha256", data)?))
    }

    /// The SHA-512 digest of `data` as 128 lowercase hex characters.
    ///
    /// `data` is a string (hashed as its UTF-8 bytes) or bytes.
    ///
    /// # Example
    /// ```python
    /// checksum = crypto.sha512(oxr["spec"]["parameters"]["config"])
    /// ```
    fn sha512<'v>(data: Value<'v>) -> anyhow::Result<String> {
        let data = str_or_bytes("crypto.sha512", data)?;
        Ok(hex::encode(Sha512::digest(data)))
    }

    /// The SHA-1 digest of `data` as 40 lowercase hex characters; for
    /// interoperability, not security.
    ///
    /// `data` is a string (hashed as its UTF-8 bytes) or bytes.
    ///
    /// # Example
    /// ```python
    /// crypto.sha1("hello world")  # "2aae6c35c94fcfb415dbe95f408b9ce91ee846ed"
    /// ```
    fn sha1<'v>(data: Value<'v>) -> anyhow::Result<String> {
        let data = str_or_bytes("crypto.sha1", data)?;
        Ok(hex::encode(Sha1::digest(data)))
    }

    /// The MD5 digest of `data` as 32 lowercase hex characters; for
    /// checksums and legacy interoperability, not security.
    ///
    /// `data` is a string (hashed as its UTF-8 bytes) or bytes.
    ///
    /// # Example
    /// ```python
    /// crypto.md5("hello world")  # "5eb63bbbe01eeed093cb22bb8f5acdc3"
    /// ```
    fn md5<'v>(data: Value<'v>) -> anyhow::Result<String> {
        let data = str_or_bytes("crypto.md5", data)?;
        Ok(hex::encode(Md5::digest(data)))
    }

    /// The HMAC-SHA256 of `message` under `key` as 64 lowercase hex
    /// characters. Any key length works, including empty.
    ///
    /// `key` and `message` are strings (their UTF-8 bytes) or bytes.
    ///
    /// # Example
    /// ```python
    /// crypto.hmac_sha256("secret", "hello")
    /// # "88aab3ede8d3adf94d26ab90d3bafd4a2083070c3bcce9c014ee04a443847c0b"
    /// ```
    fn hmac_sha256<'v>(key: Value<'v>, message: Value<'v>) -> anyhow::Result<String> {
        const FN: &str = "crypto.hmac_sha256";
        let key = str_or_bytes(FN, key)?;
        let message = str_or_bytes(FN, message)?;
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
        mac.update(message);
        Ok(hex::encode(mac.finalize().into_bytes()))
    }

    /// The BLAKE3 hash of `data` (default 256-bit output) as 64 lowercase
    /// hex characters.
    ///
    /// `data` is a string (hashed as its UTF-8 bytes) or bytes.
    ///
    /// # Example
    /// ```python
    /// crypto.blake3("foo")
    /// # "04e0bb39f30b1a3feb89f536c93be15055482df748674b00d26e5a75777702e9"
    /// ```
    fn blake3<'v>(data: Value<'v>) -> anyhow::Result<String> {
        let data = str_or_bytes("crypto.blake3", data)?;
        Ok(blake3::hash(data).to_hex().to_string())
    }

    /// A deterministic id: the first `length` characters (1 to 64, default
    /// 8) of the SHA-256 hex digest of `seed`. The alphabet is `0-9a-f`.
    ///
    /// `seed` is a string (its UTF-8 bytes) or bytes; `length` an int.
    ///
    /// # Example
    /// ```python
    /// crypto.stable_id("my-xr-name")             # "e1756622"
    /// crypto.stable_id("my-xr-name", length=12)  # "e1756622" plus 4 more hex digits
    /// ```
    fn stable_id<'v>(seed: Value<'v>, length: Option<Value<'v>>) -> anyhow::Result<String> {
        let seed = str_or_bytes("crypto.stable_id", seed)?;
        let length = stable_id_length(length)?;
        let mut id = sha256_hex(seed);
        id.truncate(length);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use crate::testing::{assert_eval, assert_fails, eval};

    #[test]
    fn crypto_is_a_module_listing_its_members() {
        assert_eval("type(crypto)", json!("module"));
        assert_eval("str(crypto)", json!("<module \"crypto\">"));
        assert_eval(
            "dir(crypto)",
            json!([
                "blake3",
                "hmac_sha256",
                "md5",
                "sha1",
                "sha256",
                "sha512",
                "stable_id"
            ]),
        );
        assert_fails("crypto.sha384('x')", "sha384");
    }

    #[test]
    fn sha256_matches_the_spec_and_nist_vectors() {
        assert_eval(
            "crypto.sha256('hello world')",
            json!("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"),
        );
        assert_eval(
            "crypto.sha256('abc')",
            json!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        );
        assert_eval(
            "crypto.sha256('')",
            json!("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        );
        assert_eval(
            "crypto.sha256('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')",
            json!("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        );
    }

    #[test]
    fn sha512_matches_the_nist_vectors() {
        assert_eval(
            "crypto.sha512('abc')",
            json!(
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
                 2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
            ),
        );
        assert_eval(
            "crypto.sha512('')",
            json!(
                "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce\
                 47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
            ),
        );
        assert_eval("len(crypto.sha512('x'))", json!(128));
    }

    #[test]
    fn sha1_matches_the_spec_and_nist_vectors() {
        assert_eval(
            "crypto.sha1('hello world')",
            json!("2aae6c35c94fcfb415dbe95f408b9ce91ee846ed"),
        );
        assert_eval(
            "crypto.sha1('abc')",
            json!("a9993e364706816aba3e25717850c26c9cd0d89d"),
        );
        assert_eval(
            "crypto.sha1('')",
            json!("da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        );
    }

    #[test]
    fn md5_matches_the_spec_and_rfc_1321_vectors() {
        assert_eval(
            "crypto.md5('hello world')",
            json!("5eb63bbbe01eeed093cb22bb8f5acdc3"),
        );
        assert_eval("crypto.md5('')", json!("d41d8cd98f00b204e9800998ecf8427e"));
        assert_eval(
            "crypto.md5('abc')",
            json!("900150983cd24fb0d6963f7d28e17f72"),
        );
        assert_eval(
            "crypto.md5('message digest')",
            json!("f96b697d7cb7938d525a2f31aaf161d0"),
        );
    }

    #[test]
    fn hmac_sha256_matches_the_spec_and_rfc_4231_vectors() {
        assert_eval(
            "crypto.hmac_sha256('secret', 'hello')",
            json!("88aab3ede8d3adf94d26ab90d3bafd4a2083070c3bcce9c014ee04a443847c0b"),
        );
        // RFC 4231 test case 2.
        assert_eval(
            "crypto.hmac_sha256('Jefe', 'what do ya want for nothing?')",
            json!("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        );
        // RFC 4231 test case 1: a 20-byte key of 0x0b.
        assert_eval(
            "crypto.hmac_sha256(b'\\x0b' * 20, 'Hi There')",
            json!("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        );
        // RFC 4231 test case 6: a key longer than the block size is hashed first.
        assert_eval(
            "crypto.hmac_sha256(b'\\xaa' * 131, 'Test Using Larger Than Block-Size Key - Hash Key First')",
            json!("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        );
        assert_eval(
            "crypto.hmac_sha256('', '')",
            json!("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"),
        );
    }

    #[test]
    fn blake3_matches_the_spec_and_the_empty_input_vector() {
        assert_eval(
            "crypto.blake3('foo')",
            json!("04e0bb39f30b1a3feb89f536c93be15055482df748674b00d26e5a75777702e9"),
        );
        assert_eval(
            "crypto.blake3('')",
            json!("af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
        );
    }

    #[test]
    fn stable_id_is_a_prefix_of_the_sha256_hex_digest() {
        assert_eval("crypto.stable_id('my-xr-name')", json!("e1756622"));
        assert_eval("crypto.stable_id('check', length=8)", json!("20f65c28"));
        assert_eval("crypto.stable_id('my-xr', 5)", json!("9d53f"));
        assert_eval(
            "crypto.stable_id('My_Test Resource!', length=5)",
            json!("860d1"),
        );
        assert_eval("crypto.stable_id(seed='check')", json!("20f65c28"));
        assert_eval(
            "crypto.stable_id('x', length=64) == crypto.sha256('x')",
            json!(true),
        );
        assert_eval("len(crypto.stable_id('x', length=1))", json!(1));
        assert_eval(
            "crypto.stable_id(b'my-xr-name') == crypto.stable_id('my-xr-name')",
            json!(true),
        );
    }

    #[test]
    fn stable_id_rejects_lengths_outside_1_to_64() {
        for (length, shown) in [
            ("0", "0"),
            ("65", "65"),
            ("-1", "-1"),
            ("1 << 70", "1180591620717411303424"),
        ] {
            assert_fails(
                &format!("crypto.stable_id('x', length={length})"),
                &format!("crypto.stable_id: length must be between 1 and 64, got {shown}"),
            );
        }
    }

    #[test]
    fn stable_id_length_must_be_an_int() {
        for (length, ty) in [
            ("True", "bool"),
            ("8.0", "float"),
            ("'8'", "string"),
            ("None", "NoneType"),
        ] {
            assert_fails(
                &format!("crypto.stable_id('x', length={length})"),
                &format!("crypto.stable_id: for parameter length: got {ty}, want int"),
            );
        }
    }

    #[test]
    fn str_and_bytes_of_the_same_text_hash_alike() {
        for f in ["sha256", "sha512", "sha1", "md5", "blake3"] {
            assert_eval(
                &format!("crypto.{f}('héllo') == crypto.{f}(b'h\\xc3\\xa9llo')"),
                json!(true),
            );
            assert_eval(
                &format!("crypto.{f}(data='a') == crypto.{f}('a')"),
                json!(true),
            );
        }
        assert_eval(
            "crypto.hmac_sha256(b'secret', message=b'hello') == crypto.hmac_sha256('secret', 'hello')",
            json!(true),
        );
    }

    #[test]
    fn arguments_other_than_str_or_bytes_are_rejected() {
        for f in ["sha256", "sha512", "sha1", "md5", "blake3", "stable_id"] {
            assert_fails(
                &format!("crypto.{f}(1)"),
                &format!("crypto.{f}: got int, want string or bytes"),
            );
            assert_fails(
                &format!("crypto.{f}(None)"),
                &format!("crypto.{f}: got NoneType, want string or bytes"),
            );
        }
        assert_fails(
            "crypto.hmac_sha256(['k'], 'm')",
            "crypto.hmac_sha256: got list, want string or bytes",
        );
        assert_fails(
            "crypto.hmac_sha256('k', {})",
            "crypto.hmac_sha256: got dict, want string or bytes",
        );
    }

    #[test]
    fn wrong_argument_counts_are_errors() {
        assert_fails("crypto.sha256()", "data");
        assert_fails("crypto.sha256('a', 'b')", "positional");
        assert_fails("crypto.hmac_sha256('k')", "message");
        assert_fails("crypto.sha256('a', text='a')", "text");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn stable_id_is_always_a_hex_prefix_of_sha256(seed in "\\PC{0,40}", length in 1..=64usize) {
            let literal = serde_json::to_string(&seed).unwrap();
            let id = eval(&format!("crypto.stable_id({literal}, length={length})")).unwrap();
            let full = eval(&format!("crypto.sha256({literal})")).unwrap();
            let (id, full) = (id.as_str().unwrap().to_owned(), full.as_str().unwrap().to_owned());
            prop_assert_eq!(id.len(), length);
            prop_assert!(full.starts_with(&id));
            prop_assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }
}
