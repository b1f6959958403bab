//! What a script writes onto the XR and the response itself: status, XR
//! connection details and the response TTL.

use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::{DictMut, DictRef};
use starlark::values::none::NoneType;
use starlark::values::{Heap, Value};

use crate::builtins::context;
use crate::go::duration::parse_go_duration;
use crate::values::attr_dict::{AttrDict, Entries};

/// The largest whole number of seconds a duration can hold.
const MAX_TTL_SECONDS: i64 = 9_223_372_036;

#[starlark_module]
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    /// Adds connection details to the XR (later calls add and overwrite keys).
    ///
    /// # Example
    /// ```python
    /// set_connection_details({"endpoint": "db.example.com", "port": "5432"})
    /// ```
    fn set_connection_details<'v>(
        #[starlark(require = pos)] details: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        const FN: &str = "set_connection_details";
        let dict = DictRef::from_value(details).ok_or_else(|| {
            anyhow!(
                "{FN}: for parameter details: got {}, want dict",
                details.get_type()
            )
        })?;
        let mut entries = Vec::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            let key = k
                .unpack_str()
                .ok_or_else(|| anyhow!("{FN}: key must be string, got {}", k.get_type()))?;
            let value = v
                .unpack_str()
                .ok_or_else(|| anyhow!("{FN}: value must be string, got {}", v.get_type()))?;
            entries.push((key.to_owned(), value.as_bytes().to_vec()));
        }
        context(eval)?
            .effects
            .xr_connection_details
            .borrow_mut()
            .extend(entries);
        Ok(NoneType)
    }

    /// Writes `value` at `dxr["status"]` followed by the dotted `path`,
    /// creating intermediate dicts; siblings are kept. A `None` value
    /// writes nothing, so a value read from observed state that is not
    /// there yet needs no guard.
    ///
    /// # Returns
    /// `True` when it wrote the value (falsy values such as `0` or `""`
    /// are written), `False` for `None`.
    ///
    /// # Example
    /// ```python
    /// set_xr_status("atProvider.arn", "arn:aws:s3:::my-bucket")  # True
    /// set_xr_status("atProvider.id", None)  # False
    /// ```
    fn set_xr_status<'v>(
        path: &str,
        value: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<bool> {
        const FN: &str = "set_xr_status";
        if path.is_empty() {
            return Err(anyhow!("{FN}: path must not be empty"));
        }
        let segments: Vec<&str> = path.split('.').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(anyhow!("{FN}: malformed path {path:?}"));
        }
        if value.is_none() {
            return Ok(false);
        }
        let heap = eval.heap();
        let dxr = crate::builtins::observed::original_dxr(eval)?;
        let mut current = dxr;
        for segment in
            std::iter::once("status").chain(segments[..segments.len() - 1].iter().copied())
        {
            current = if let Some(next) = get_mapping(current, segment) {
                next
            } else {
                let fresh = heap.alloc(AttrDict::default());
                set_key(current, segment, fresh, heap)?;
                fresh
            };
        }
        let leaf = segments[segments.len() - 1];
        set_key(current, leaf, value, heap)?;
        Ok(true)
    }

    /// Sets the response TTL: a Go duration string (`"90s"`, `"5m"`) or
    /// whole seconds. `0` clears it: Crossplane 1 then calls again at its
    /// poll interval, Crossplane 2 only when something it watches changes.
    ///
    /// Without a call, the response carries 60 s, except that a run with
    /// `depends_on` and nothing held back carries none (as in the Go
    /// function). On Crossplane 2, the XR's watch circuit breaker drops changes
    /// while it is open after a burst: an XR whose spec changed then stays
    /// on the old spec (crossplane/crossplane#7703). A TTL requeues it
    /// regardless, so set one on XRs that change in bursts.
    ///
    /// # Example
    /// ```python
    /// set_response_ttl("5m")
    /// ```
    fn set_response_ttl<'v>(
        duration: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        const FN: &str = "set_response_ttl";
        let nanos = if let Some(s) = duration.unpack_str() {
            parse_go_duration(s).map_err(|e| anyhow!("{FN}: {e}"))?
        } else if duration.get_type() == "int" {
            let seconds: i64 = duration
                .to_str()
                .parse()
                .map_err(|_| anyhow!("{FN}: integer too large"))?;
            if seconds > MAX_TTL_SECONDS {
                return Err(anyhow!(
                    "{FN}: integer seconds {seconds} exceeds maximum ({MAX_TTL_SECONDS} ~= 292 years)"
                ));
            }
            seconds.saturating_mul(1_000_000_000)
        } else {
            return Err(anyhow!(
                "{FN}: got {}, want string or int",
                duration.get_type()
            ));
        };
        if nanos < 0 {
            return Err(anyhow!("{FN}: duration must be non-negative"));
        }
        context(eval)?.effects.response_ttl.set(Some(nanos));
        Ok(NoneType)
    }
}

/// The dict-like value under `key` of a dict-like `container`.
fn get_mapping<'v>(container: Value<'v>, key: &str) -> Option<Value<'v>> {
    let container = crate::values::schema::inner_dict(container).unwrap_or(container);
    let v = if let Some(e) = Entries::of(container) {
        e.get(key)?
    } else {
        DictRef::from_value(container)?.get_str(key)?
    };
    crate::values::mapping::is_mapping(v).then_some(v)
}

fn set_key<'v>(
    container: Value<'v>,
    key: &str,
    value: Value<'v>,
    heap: Heap<'v>,
) -> anyhow::Result<()> {
    if let Some(sd) = crate::values::schema::SchemaDict::from_value(container) {
        return sd.insert(heap.alloc(key), value);
    }
    if let Some(e) = Entries::of(container) {
        return e.with_mut(|m| {
            m.insert(key.to_owned(), value);
        });
    }
    let key = heap
        .alloc(key)
        .get_hashed()
        .map_err(starlark::Error::into_anyhow)?;
    DictMut::from_value(container)?
        .aref
        .insert_hashed(key, value);
    Ok(())
}
