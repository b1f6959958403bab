//! Binding a builtin's arguments as go.starlark.net's `UnpackArgs` and
//! `UnpackPositionalArgs` bind them, with their error texts, for builtins
//! whose Go signatures starlark-rust's binding words differently.

use anyhow::anyhow;
use starlark::values::Value;
use starlark::values::dict::DictRef;
use starlark::values::tuple::UnpackTuple;

use super::quote::go_quote;
use super::spell::nearest;
use super::types::go_type;

/// The arguments of one call, bound the way go.starlark.net's
/// `UnpackArgs`/`UnpackPositionalArgs` bind them, with their error texts.
pub struct GoArgs<'v> {
    name: &'static str,
    positional: Vec<Value<'v>>,
    named: Vec<(String, Value<'v>)>,
}

impl<'v> GoArgs<'v> {
    /// The arguments of a call of the builtin `name`.
    pub fn new(name: &'static str, args: UnpackTuple<Value<'v>>, kwargs: DictRef<'v>) -> Self {
        let named = kwargs
            .iter()
            .map(|(k, v)| (k.unpack_str().unwrap_or_default().to_owned(), v))
            .collect();
        GoArgs {
            name,
            positional: args.items,
            named,
        }
    }

    /// The same call without its keyword arguments (those bound already).
    #[must_use]
    pub fn positional_only(&self) -> GoArgs<'v> {
        GoArgs {
            name: self.name,
            positional: self.positional.clone(),
            named: Vec::new(),
        }
    }

    /// The number of positional arguments.
    pub fn positional_len(&self) -> usize {
        self.positional.len()
    }

    /// `UnpackPositionalArgs(name, args, kwargs, min, max)`: no keywords,
    /// between `min` and `max` positional arguments.
    pub fn positional(&self, min: usize, max: usize) -> anyhow::Result<&[Value<'v>]> {
        let name = self.name;
        if !self.named.is_empty() {
            return Err(anyhow!("{name}: unexpected keyword arguments"));
        }
        let n = self.positional.len();
        if n < min {
            let at_least = if min < max { "at least " } else { "" };
            return Err(anyhow!("{name}: got {n} arguments, want {at_least}{min}"));
        }
        if n > max {
            let at_most = if max > min { "at most " } else { "" };
            return Err(anyhow!("{name}: got {n} arguments, want {at_most}{max}"));
        }
        Ok(&self.positional)
    }

    /// `UnpackArgs(name, args, kwargs, params...)`: each parameter by
    /// position or keyword; a trailing `?` marks it optional. Types are
    /// checked by the caller, in order, through `checks`, which is called
    /// with the parameter index and value as soon as each is bound (so a
    /// bad type reports before a later unknown keyword, as in Go).
    pub fn bind(
        &self,
        params: &[&str],
        positional_allowed: bool,
        mut check: impl FnMut(usize, Value<'v>) -> Result<(), String>,
    ) -> anyhow::Result<Vec<Option<Value<'v>>>> {
        let name = self.name;
        let names: Vec<&str> = params.iter().map(|p| p.trim_end_matches('?')).collect();
        let mut bound: Vec<Option<Value<'v>>> = vec![None; params.len()];
        let positional: &[Value<'v>] = if positional_allowed {
            &self.positional
        } else {
            &[]
        };
        if positional.len() > params.len() {
            return Err(anyhow!(
                "{name}: got {} arguments, want at most {}",
                positional.len(),
                params.len()
            ));
        }
        for (i, v) in positional.iter().enumerate() {
            bound[i] = Some(*v);
            check(i, *v).map_err(|e| anyhow!("{name}: for parameter {}: {e}", names[i]))?;
        }
        for (key, v) in &self.named {
            let Some(i) = names.iter().position(|n| n == key) else {
                // go.starlark.net offers a hint drawn from the first half of
                // the parameter names only (its loop steps by two).
                let candidates = &names[..params.len().div_ceil(2)];
                return Err(match nearest(key, candidates) {
                    Some(hint) => anyhow!(
                        "{name}: unexpected keyword argument {} (did you mean {hint}?)",
                        go_quote(key)
                    ),
                    None => anyhow!("{name}: unexpected keyword argument {}", go_quote(key)),
                });
            };
            if bound[i].is_some() {
                return Err(anyhow!(
                    "{name}: got multiple values for keyword argument {}",
                    go_quote(key)
                ));
            }
            bound[i] = Some(*v);
            check(i, *v).map_err(|e| anyhow!("{name}: for parameter {}: {e}", go_quote(key)))?;
        }
        for (i, p) in params.iter().enumerate() {
            if p.ends_with('?') {
                break;
            }
            if bound[i].is_none() {
                return Err(anyhow!("{name}: missing argument for {p}"));
            }
        }
        Ok(bound)
    }
}

/// A str argument, or Go's "got T, want string".
pub fn want_string(v: Value) -> Result<(), String> {
    match v.unpack_str() {
        Some(_) => Ok(()),
        None => Err(format!("got {}, want string", go_type(v))),
    }
}
