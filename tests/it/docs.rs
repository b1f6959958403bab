//! `docs/builtins.md` is generated from the builtins' doc comments; this
//! fails when the checked-in file drifts. `UPDATE_GOLDEN=1` rewrites it.

#[test]
fn the_builtins_reference_matches_the_doc_comments() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/builtins.md");
    let generated = function_starlark::docs::builtins_markdown();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &generated).expect("docs/builtins.md is writable");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/builtins.md is out of date with the builtins' doc comments; run UPDATE_GOLDEN=1 cargo test --test docs"
    );
}

/// What a call of `name` answered: its Fatal message, or "" when it ran.
fn answer(call: &str) -> String {
    let rsp = crate::common::run(&format!("r = {call}\n"), "{}");
    rsp.results
        .iter()
        .map(|r| r.message.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A call with `positional` arguments (all `None`) and `keywords`.
fn call(name: &str, positional: usize, keywords: &[&str]) -> String {
    let mut args: Vec<String> = vec!["None".to_owned(); positional];
    args.extend(keywords.iter().map(|k| format!("{k} = None")));
    format!("{name}({})", args.join(", "))
}

/// A parameter, not the `/` or `*` marker, `*rest` or `**kwargs`.
fn plain(p: &str) -> bool {
    p != "/" && !p.starts_with('*')
}

/// Every hand-bound builtin accepts what its documented signature says and
/// refuses what it does not: each named parameter by name, no unknown
/// keyword (unless `**`), no positional argument past the last positional
/// parameter (unless `*rest`), and no call without a required parameter.
#[test]
fn hand_bound_builtins_take_their_documented_signatures() {
    use function_starlark::builtins::signatures::SIGNATURES;
    for &(name, params) in SIGNATURES {
        let params: Vec<&str> = params.split(", ").collect();
        let slash = params.iter().position(|p| *p == "/");
        let star = params.iter().position(|p| p.starts_with('*'));
        let positional_only: Vec<&str> = params[..slash.unwrap_or(0)].to_vec();
        let required_positional = positional_only.iter().filter(|p| !p.contains('=')).count();
        let named: Vec<&str> = params[slash.map_or(0, |s| s + 1)..]
            .iter()
            .filter(|p| plain(p))
            .map(|p| p.split('=').next().unwrap_or(p))
            .collect();
        let positional_capacity = params[..star.unwrap_or(params.len())]
            .iter()
            .filter(|p| plain(p))
            .count();
        let rest = params
            .iter()
            .any(|p| p.starts_with('*') && !p.starts_with("**") && *p != "*");
        let any_keyword = params.iter().any(|p| p.starts_with("**"));
        let required = params.iter().filter(|p| plain(p)).any(|p| !p.contains('='));

        for keyword in &named {
            let said = answer(&call(name, required_positional, &[keyword]));
            assert!(
                !said.contains("unexpected keyword") && !said.contains("keyword arguments"),
                "{name} refuses its documented parameter {keyword}: {said}"
            );
        }
        if !any_keyword {
            let said = answer(&call(name, 0, &["zz_unknown"]));
            assert!(
                said.contains("keyword"),
                "{name} takes an undocumented keyword: {said:?}"
            );
        }
        if !rest {
            let said = answer(&call(name, positional_capacity + 1, &[]));
            assert!(
                said.contains("argument"),
                "{name} takes {} positional arguments, more than documented: {said:?}",
                positional_capacity + 1
            );
        }
        if required {
            let said = answer(&call(name, 0, &[]));
            assert!(
                said.contains("argument"),
                "{name} runs without its required parameters: {said:?}"
            );
        }
    }
}

/// No builtin is documented as `*args, **kwargs`: a builtin that binds by
/// hand has its line in `SIGNATURES`.
#[test]
fn no_builtin_is_documented_as_args_and_kwargs() {
    let docs = function_starlark::docs::builtins_markdown();
    assert!(
        !docs.contains("(*args, **kwargs)"),
        "a builtin lacks its documented signature"
    );
}

/// The `python` code blocks of `markdown`, with the heading each is under.
fn examples(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut block: Option<String> = None;
    for line in markdown.lines() {
        match &mut block {
            Some(code) if line == "```" => {
                out.push((heading.clone(), std::mem::take(code)));
                block = None;
            }
            Some(code) => {
                code.push_str(line);
                code.push('\n');
            }
            None if line == "```python" => block = Some(String::new()),
            None if line.starts_with('#') => line.clone_into(&mut heading),
            None => {}
        }
    }
    out
}

/// An example line `expr  # value` as a check that `expr` equals `value`,
/// when both halves are expressions; other lines as they are.
fn checked(line: &str) -> String {
    use starlark::syntax::{AstModule, Dialect};
    let Some((expr, value)) = line.split_once("  # ") else {
        return line.to_owned();
    };
    let check = format!(
        "if ({expr}) != ({value}):\n    fail(\"the example gives\", repr(({expr})), \"not\", repr(({value})))"
    );
    match AstModule::parse("example.star", check.clone(), &Dialect::Extended) {
        Ok(_) if !expr.trim_start().starts_with(char::is_uppercase) => check,
        _ => line.to_owned(),
    }
}

/// An observed XR the examples can read.
const EXAMPLE_XR: &str = r"
observed:
  composite:
    resource:
      apiVersion: example.org/v1
      kind: XNetwork
      metadata:
        name: net
        labels: {team: platform}
        annotations: {owner: ops}
      spec:
        parameters:
          region: eu-west-1
          config: '{}'
          cidr: 10.0.0.0/16
";

/// Every example in the builtins reference runs, and each line written as
/// `expr  # value` gives that value.
#[test]
fn the_reference_examples_run_and_give_what_they_say() {
    let markdown = function_starlark::docs::builtins_markdown();
    let mut failures = Vec::new();
    let examples = examples(&markdown);
    assert!(examples.len() > 50, "the reference has its examples");
    let mut checks = 0;
    for (heading, code) in examples {
        let script: String = code.lines().map(|l| checked(l) + "\n").collect();
        checks += script.matches("the example gives").count();
        let rsp = crate::common::run(&script, EXAMPLE_XR);
        let fatal: Vec<_> = rsp
            .results
            .iter()
            .filter(|r| r.severity == 1)
            .map(|r| r.message.clone())
            .collect();
        // `fail` and `fatal` show how a script stops.
        let stops = heading.starts_with("## `fail(") || heading.starts_with("## `fatal(");
        if stops {
            assert_eq!(fatal.len(), 1, "{heading} stops the script");
        } else if !fatal.is_empty() {
            failures.push(format!("{heading}\n{script}\n=> {}", fatal.join("\n")));
        }
    }
    assert!(
        checks >= 35,
        "the examples state their results ({checks} checked)"
    );
    assert!(
        failures.is_empty(),
        "{} examples fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
