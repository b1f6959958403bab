//! `load()` from inline modules, mounted directories and the embedded
//! standard library: the module behaviours that need no registry
//! (docs/modules.md).

use crate::common;

use function_starlark::function::StarlarkFunction;
use serde_json::{Value, json};

fn run_spec(spec: Value, request_yaml: &str) -> Value {
    run_spec_on(&common::function(), &spec, request_yaml)
}

/// `function`'s answer to a request with input `spec`.
fn run_spec_on(function: &StarlarkFunction, spec: &Value, request_yaml: &str) -> Value {
    let mut req = common::request(request_yaml);
    req.input = Some(common::to_struct(&json!({ "spec": spec })));
    common::json(&common::handle(function, req))
}

fn run_modules(source: &str, modules: Value) -> Value {
    run_spec(
        json!({"source": source, "modules": modules}),
        "meta: {tag: t}",
    )
}

fn status(rsp: &Value) -> &Value {
    assert!(
        common::fatal(rsp).is_none(),
        "unexpected failure: {:?}",
        common::fatal(rsp)
    );
    &rsp["desired"]["composite"]["resource"]["status"]
}

#[test]
fn an_inline_module_is_loaded_by_name() {
    // A module given in `spec.modules` is found by its file name.
    let rsp = run_modules(
        "load('helpers.star', 'f')\ndxr['status'] = {'v': f(2)}\n",
        json!({"helpers.star": "def f(x):\n    return x * 21\n"}),
    );
    assert_eq!(status(&rsp)["v"], 42.0);
}

#[test]
fn inline_modules_win_over_directories_and_directories_are_searched_in_order() {
    // A module in both directories comes from the first; one only in the second is
    // found there; an inline module of the same name wins over both.
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    std::fs::write(d1.path().join("h.star"), "who = 'dir1'\n").unwrap();
    std::fs::write(d2.path().join("h.star"), "who = 'dir2'\n").unwrap();
    std::fs::write(d2.path().join("only2.star"), "who = 'only in dir2'\n").unwrap();
    let paths = json!([d1.path(), d2.path()]);
    let rsp = run_spec(
        json!({"source": "load('h.star', 'who')\ndxr['status'] = {'v': who}\n", "modulePaths": paths}),
        "meta: {tag: t}",
    );
    assert_eq!(status(&rsp)["v"], "dir1");
    let rsp = run_spec(
        json!({"source": "load('only2.star', 'who')\ndxr['status'] = {'v': who}\n", "modulePaths": paths}),
        "meta: {tag: t}",
    );
    assert_eq!(status(&rsp)["v"], "only in dir2");
    let rsp = run_spec(
        json!({
            "source": "load('h.star', 'who')\ndxr['status'] = {'v': who}\n",
            "modulePaths": paths,
            "modules": {"h.star": "who = 'inline'\n"},
        }),
        "meta: {tag: t}",
    );
    assert_eq!(status(&rsp)["v"], "inline");
}

#[test]
fn a_missing_module_names_every_place_searched() {
    // The error names the inline modules and every directory searched.
    let d1 = tempfile::tempdir().unwrap();
    let rsp = run_spec(
        json!({"source": "load('nope.star', 'x')\n", "modulePaths": [d1.path()]}),
        "meta: {tag: t}",
    );
    let msg = common::fatal(&rsp).expect("a failure");
    assert!(msg.contains("cannot load nope.star"), "{msg}");
    assert!(
        msg.contains("not found") && msg.contains("inline modules"),
        "{msg}"
    );
    assert!(msg.contains(&d1.path().display().to_string()), "{msg}");
}

#[test]
fn local_names_must_be_flat_star_files_that_are_not_tests() {
    // A local name that is not an inline key cannot contain a path
    // separator, must end in `.star` and cannot name a test file; `./` is
    // for files beside a mounted script (or an OCI module), and `../` for
    // nobody.
    for (target, fragment) in [
        (
            "lib/h.star",
            "module name \"lib/h.star\" must not contain path separators",
        ),
        ("helpers", ".star"),
        (
            "h_test.star",
            "module name \"h_test.star\" is a test file and cannot be loaded as a module",
        ),
        (
            "./x.star",
            "relative load \"./x.star\" requires a filesystem-sourced module; inline modules have no directory context. Use a flat module name or move to a ConfigMap",
        ),
        ("./sub/x.star", "requires a filesystem-sourced module"),
        (
            "../x.star",
            "relative load \"../x.star\" rejected: path must not escape the caller's directory",
        ),
    ] {
        let rsp = run_modules(&format!("load('{target}', 'x')\n"), json!({}));
        let msg = common::fatal(&rsp).expect("a failure");
        assert!(msg.contains(fragment), "{target}: {msg}");
    }
}

/// Inline modules keyed by paths load each other by key; a module two
/// others load (a diamond) runs once; flat keys live beside them.
#[test]
fn path_keyed_inline_modules_load_each_other_by_key() {
    let modules = json!({
        "lib/config.star": "PREFIX = 'acme'\nENV = 'production'\nruns = []\nruns.append(1)\ndef vpc_cidr():\n    return '10.0.0.0/16'\n",
        "lib/naming.star": "load('lib/config.star', 'PREFIX', 'ENV')\ndef resource_name(name, env = ENV):\n    return '%s-%s-%s' % (PREFIX, name, env)\n",
        "lib/tags.star": "load('lib/config.star', 'ENV', 'runs')\nload('lib/naming.star', 'resource_name')\ndef standard_tags(name):\n    return {'Name': resource_name(name), 'env': ENV, 'team': 'platform', 'managed-by': 'crossplane', 'runs': str(len(runs))}\n",
        "shared.star": "SHARED = True\n",
    });
    let rsp = run_modules(
        "load('lib/naming.star', 'resource_name')\nload('lib/tags.star', 'standard_tags')\nload('lib/config.star', 'vpc_cidr')\nload('shared.star', 'SHARED')\ntags = standard_tags('api')\ndxr['status'] = {'prod': resource_name('database', 'prod'), 'bundled': resource_name('database'), 'cidr': vpc_cidr(), 'name': tags['Name'], 'runs': tags['runs'], 'shared': SHARED}\n",
        modules,
    );
    assert_eq!(
        status(&rsp),
        &json!({
            "prod": "acme-database-prod",
            "bundled": "acme-database-production",
            "cidr": "10.0.0.0/16",
            "name": "acme-api-production",
            "runs": "1",
            "shared": true,
        })
    );
}

/// A mounted script runs under its path, and loads files beside it with
/// `./`: a sibling, a star import, a chain through a subdirectory.
#[test]
fn a_mounted_script_loads_files_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let cm = dir.path().join("relative-load-scripts");
    std::fs::create_dir_all(cm.join("lib")).unwrap();
    std::fs::write(
        cm.join("main.star"),
        "load('./helper.star', 'greet', 'chain')\nload('./utils.star', '*')\ndxr['status'] = {'greet': greet('e2e'), 'compute': compute(), 'chain': chain()}\n",
    )
    .unwrap();
    std::fs::write(
        cm.join("helper.star"),
        "load('./lib/deep.star', 'deep')\ndef greet(name):\n    return 'hello, ' + name\ndef chain():\n    return deep()\n",
    )
    .unwrap();
    std::fs::write(cm.join("utils.star"), "def compute():\n    return 42\n").unwrap();
    std::fs::write(
        cm.join("lib/deep.star"),
        "load('./../utils.star', 'compute')\ndef deep():\n    return 99\n",
    )
    .unwrap();
    let f = mounted_function(dir.path());
    let spec = json!({"scriptConfigRef": {"name": "relative-load-scripts", "key": "main.star"}});
    let rsp = run_spec_on(&f, &spec, "meta: {tag: t}");
    let msg = common::fatal(&rsp).unwrap_or_default();
    // `./../` leaves the caller's directory however it is written.
    assert!(
        msg.contains("relative load \"./../utils.star\" rejected: path must not escape the caller's directory"),
        "{msg}"
    );
    std::fs::write(cm.join("lib/deep.star"), "def deep():\n    return 99\n").unwrap();
    let rsp = run_spec_on(&f, &spec, "meta: {tag: t}");
    assert_eq!(
        status(&rsp),
        &json!({"greet": "hello, e2e", "compute": 42.0, "chain": 99.0})
    );
    // A missing file says where it was looked for, from which caller; a
    // failing module is named by its path.
    std::fs::write(cm.join("main.star"), "load('./nope.star', 'x')\n").unwrap();
    let msg = common::fatal(&run_spec_on(&f, &spec, "meta: {tag: t}")).unwrap_or_default();
    let missing = cm.join("nope.star").display().to_string();
    assert!(
        msg.contains(&format!(
            "module \"./nope.star\" not found; resolved to {missing} from caller main.star"
        )),
        "{msg}"
    );
    std::fs::write(cm.join("main.star"), "load('./bad.star', 'x')\n").unwrap();
    std::fs::write(cm.join("bad.star"), "x = 1 // 0\n").unwrap();
    let msg = common::fatal(&run_spec_on(&f, &spec, "meta: {tag: t}")).unwrap_or_default();
    let bad = cm.join("bad.star").display().to_string();
    assert!(msg.contains(&format!("error in module {bad}")), "{msg}");
    std::fs::write(cm.join("main.star"), "load('./x_test.star', 'x')\n").unwrap();
    let msg = common::fatal(&run_spec_on(&f, &spec, "meta: {tag: t}")).unwrap_or_default();
    assert!(
        msg.contains("relative load \"./x_test.star\" rejected: test files (*_test.star) cannot be loaded as modules"),
        "{msg}"
    );
}

/// A function whose mounted scripts are under `dir`.
fn mounted_function(dir: &std::path::Path) -> StarlarkFunction {
    let settings = function_starlark::input::Settings {
        scripts_dir: dir.to_path_buf(),
        env: Box::new(|_| None),
    };
    StarlarkFunction::new(
        std::sync::Arc::new(function_starlark::runner::Runtime::new(
            function_starlark::limits::Limits::default(),
            64,
        )),
        settings,
        function_starlark::metrics::Metrics::default(),
    )
}

#[test]
fn a_module_runs_once_per_request_and_failures_are_shared() {
    // `a.star` and `b.star` both load `counter.star`, which runs once: both see the
    // same value.
    let modules = json!({
        "counter.star": "calls = []\ncalls.append(1)\nvalue = {'n': len(calls)}\n",
        "a.star": "load('counter.star', 'value')\na_value = value\n",
        "b.star": "load('counter.star', 'value')\nb_value = value\n",
    });
    let rsp = run_modules(
        "load('a.star', 'a_value')\nload('b.star', 'b_value')\ndxr['status'] = {'same': a_value == b_value, 'n': a_value['n']}\n",
        modules,
    );
    assert_eq!(status(&rsp)["same"], true);
    assert_eq!(status(&rsp)["n"], 1.0);
}

#[test]
fn load_cycles_are_reported() {
    // A cycle of two modules, and a module that loads itself.
    let rsp = run_modules(
        "load('a.star', 'x')\n",
        json!({"a.star": "load('b.star', 'y')\nx = y\n", "b.star": "load('a.star', 'x')\ny = x\n"}),
    );
    assert!(
        common::fatal(&rsp)
            .expect("a failure")
            .contains("cycle in load graph"),
        "{rsp}"
    );
    let rsp = run_modules(
        "load('a.star', 'x')\n",
        json!({"a.star": "load('a.star', 'x')\n"}),
    );
    assert!(
        common::fatal(&rsp).expect("a failure").contains("cycle"),
        "{rsp}"
    );
}

#[test]
fn transitive_loads_evaluate_in_order() {
    // The main script loads `a.star`, which loads `b.star`, which loads `c.star`: each
    // sees the values of the one it loads.
    let rsp = run_modules(
        "load('a.star', 'a_val')\ndxr['status'] = {'v': a_val}\n",
        json!({
            "a.star": "load('b.star', 'b_val')\na_val = b_val + 1\n",
            "b.star": "load('c.star', 'c_val')\nb_val = c_val + 1\n",
            "c.star": "c_val = 10\n",
        }),
    );
    assert_eq!(status(&rsp)["v"], 12.0);
}

#[test]
fn modules_see_the_request_globals_and_record_into_the_same_response() {
    // A module reads `oxr` and calls `Resource()`; the resource reaches the response.
    let rsp = run_spec(
        json!({
            "source": "load('lib.star', 'bucket', 'region')\nbucket('b1')\ndxr['status'] = {'region': region}\n",
            "modules": {"lib.star": "region = get(oxr, 'spec.region', 'none')\ndef bucket(name):\n    return Resource(name, {'apiVersion': 'v1', 'kind': 'B', 'spec': struct(r = region).r})\n"},
        }),
        "meta: {tag: t}\nobserved:\n  composite:\n    resource:\n      spec: {region: eu-west-1}\n",
    );
    assert_eq!(status(&rsp)["region"], "eu-west-1");
    assert_eq!(
        rsp["desired"]["resources"]["b1"]["resource"]["spec"],
        "eu-west-1"
    );
}

#[test]
fn modules_do_not_see_the_main_scripts_globals() {
    // A module that uses a global of the main script fails to compile.
    let rsp = run_modules(
        "secret = 1\nload('m.star', 'x')\n",
        json!({"m.star": "x = secret\n"}),
    );
    let msg = common::fatal(&rsp).expect("a failure");
    assert!(msg.contains("compiling module m.star"), "{msg}");
}

#[test]
fn a_module_has_its_own_step_budget_and_its_errors_name_it() {
    // An endless loop in a module hits the step limit, and a run-time error in a module
    // names the module and its line.
    let rsp = run_modules(
        "load('m.star', 'x')\n",
        json!({"m.star": "def spin():\n    while True:\n        pass\nspin()\nx = 1\n"}),
    );
    let msg = common::fatal(&rsp).expect("a failure");
    assert!(
        msg.contains("module m.star exceeded execution limit"),
        "{msg}"
    );
    let rsp = run_modules("load('m.star', 'x')\n", json!({"m.star": "x = {}['k']\n"}));
    let msg = common::fatal(&rsp).expect("a failure");
    assert!(
        msg.contains("error in module m.star") && msg.contains("m.star:1:"),
        "{msg}"
    );
}

#[test]
fn module_values_are_frozen_for_importers() {
    // Appending to a list imported from a module fails.
    let rsp = run_modules(
        "load('m.star', 'items')\nitems.append(2)\n",
        json!({"m.star": "items = [1]\n"}),
    );
    assert!(common::fatal(&rsp).is_some(), "{rsp}");
}

#[test]
fn private_and_missing_names_cannot_be_imported() {
    // A private name, a missing name, and a name the module itself loaded from another
    // module cannot be imported.
    let modules = json!({"m.star": "load('n.star', 'inner')\n_p = 1\npublic = inner\n", "n.star": "inner = 2\n"});
    for (name, fragment) in [("_p", "_p"), ("missing", "missing"), ("inner", "inner")] {
        let rsp = run_modules(&format!("load('m.star', '{name}')\n"), modules.clone());
        let msg = common::fatal(&rsp).expect("a failure");
        assert!(msg.contains(fragment), "{name}: {msg}");
    }
}

#[test]
fn star_imports_bind_every_public_name() {
    // `*` binds every public name, alongside explicit names too; private names stay
    // unbound; a module with only private names binds nothing.
    let modules = json!({"m.star": "a = 1\nb = 2\nc = 3\n_hidden = 4\n", "p.star": "_only = 1\n"});
    let rsp = run_modules(
        "load('m.star', '*')\ndxr['status'] = {'sum': a + b + c}\n",
        modules.clone(),
    );
    assert_eq!(status(&rsp)["sum"], 6.0);
    let rsp = run_modules(
        "load('m.star', 'a', '*')\ndxr['status'] = {'sum': a + b + c}\n",
        modules.clone(),
    );
    assert_eq!(status(&rsp)["sum"], 6.0);
    let rsp = run_modules(
        "load('m.star', '*')\ndxr['status'] = {'h': _hidden}\n",
        modules.clone(),
    );
    assert!(common::fatal(&rsp).is_some(), "{rsp}");
    let rsp = run_modules(
        "load('p.star', '*')\ndxr['status'] = {'ok': True}\n",
        modules,
    );
    assert_eq!(status(&rsp)["ok"], true);
}

#[test]
fn namespace_imports_bind_a_struct_per_module() {
    // Namespace imports of two modules that define the same name stay apart; a module
    // without public names gives an empty struct; one load can bind a namespace and `*`
    // at once.
    let modules = json!({
        "m1.star": "Account = 'one'\n",
        "m2.star": "Account = 'two'\n",
        "empty.star": "_x = 1\n",
        "m.star": "x = 5\n",
    });
    let rsp = run_modules(
        "load('m1.star', s1='*')\nload('m2.star', s2='*')\nload('empty.star', e='*')\nload(\n    'm.star',\n    ns='*',\n    '*',\n)\ndxr['status'] = {'a': s1.Account, 'b': s2.Account, 'e': type(e), 'x': x, 'nsx': ns.x}\n",
        modules,
    );
    let s = status(&rsp);
    assert_eq!(
        (s["a"].clone(), s["b"].clone()),
        (json!("one"), json!("two"))
    );
    assert_eq!(s["e"], "struct");
    assert_eq!((s["x"].clone(), s["nsx"].clone()), (json!(5.0), json!(5.0)));
}

#[test]
fn star_imports_work_transitively_and_report_cycles_and_missing_modules() {
    // Two modules star-importing one module both work; a cycle of star imports is
    // reported; a missing module fails while star imports are resolved.
    let rsp = run_modules(
        "load('a.star', 'fa')\nload('b.star', 'fb')\ndxr['status'] = {'v': fa() + fb()}\n",
        json!({
            "naming.star": "def base():\n    return 1\n",
            "a.star": "load('naming.star', '*')\ndef fa():\n    return base()\n",
            "b.star": "load('naming.star', '*')\ndef fb():\n    return base() + 1\n",
        }),
    );
    assert_eq!(status(&rsp)["v"], 3.0);
    let rsp = run_modules(
        "load('a.star', '*')\n",
        json!({"a.star": "load('b.star', '*')\n", "b.star": "load('a.star', '*')\n"}),
    );
    assert!(
        common::fatal(&rsp).expect("a failure").contains("cycle"),
        "{rsp}"
    );
    let rsp = run_modules("load('missing.star', '*')\n", json!({}));
    let msg = common::fatal(&rsp).expect("a failure");
    assert!(
        msg.starts_with("resolving star imports: resolving star import from"),
        "{msg}"
    );
}

#[test]
fn positions_after_a_multi_line_star_import_are_unchanged() {
    let rsp = run_modules(
        "load(\n    'm.star',\n    '*',\n)\nx = {}['k']\n",
        json!({"m.star": "a = 1\n"}),
    );
    let msg = common::fatal(&rsp).expect("a failure");
    assert!(msg.contains("composition.star:5:"), "{msg}");
}

#[test]
fn builtins_called_from_module_functions_write_the_request_but_module_code_cannot_write_dxr() {
    let rsp = run_modules(
        "load('lib.star', 'publish')\npublish('v1')\n",
        json!({"lib.star": "def publish(v):\n    set_xr_status('version', v)\n    set_condition('Published', 'True', 'Done', v)\n"}),
    );
    assert_eq!(status(&rsp)["version"], "v1");
    assert_eq!(rsp["conditions"][0]["type"], "Published");
    let rsp = run_modules(
        "load('lib.star', 'x')\n",
        json!({"lib.star": "dxr['status'] = {'a': 1}\nx = 1\n"}),
    );
    let msg = common::fatal(&rsp).expect("module code cannot write dxr");
    assert!(msg.contains("error in module lib.star"), "{msg}");
}

#[test]
fn a_module_may_export_assert() {
    // `assert` is renamed for the interpreter, which reserves it; the
    // renamed name must stay public so that `load` can import it.
    let modules = json!({
        "checks.star": "def _eq(a, b):\n    if a != b:\n        fail('not equal')\nassert = struct(eq = _eq)\n",
    });
    let rsp = run_modules(
        "load('checks.star', 'assert')\nassert.eq(1, 1)\ndxr['status'] = {'ok': True}\n",
        modules,
    );
    assert_eq!(status(&rsp), &json!({"ok": true}));
    let rsp = run_modules("sl__assert = 1\n", json!({}));
    assert!(
        common::fatal(&rsp).is_some_and(|m| m.contains("reserved identifier \"sl__assert\"")),
        "{:?}",
        common::fatal(&rsp)
    );
}

/// Two requests to one function (one runtime, so one module cache), whose
/// XRs differ in `spec.region`; the status each script wrote.
fn twice_on_one_function(spec: &Value) -> [Value; 2] {
    let function = common::function();
    ["eu-west-1", "us-east-2"].map(|region| {
        let rsp = run_spec_on(
            &function,
            spec,
            &format!(
                "observed:\n  composite:\n    resource:\n      apiVersion: example.org/v1\n      kind: XR\n      metadata: {{name: xr}}\n      spec: {{region: {region}}}\n"
            ),
        );
        status(&rsp).clone()
    })
}

#[test]
fn modules_kept_between_requests_never_show_an_earlier_request() {
    // reader.star reads the XR at its top level and in a function;
    // wrapper.star names nothing of the request but loads reader.star;
    // plain.star cannot see the request and is kept between requests.
    let spec = json!({
        "source": "load('reader.star', 'REGION', 'region')\nload('wrapper.star', 'WRAPPED')\nload('plain.star', 'twice')\ndxr['status'] = {'top': REGION, 'call': region(), 'wrapped': WRAPPED, 'plain': twice(21)}\n",
        "modules": {
            "reader.star": "REGION = oxr.spec.region\ndef region():\n    return oxr['spec']['region']\n",
            "wrapper.star": "load('reader.star', 'REGION')\nWRAPPED = 'in ' + REGION\n",
            "plain.star": "def twice(x):\n    return 2 * x\n",
        },
    });
    let [first, second] = twice_on_one_function(&spec);
    assert_eq!(
        first,
        json!({"top": "eu-west-1", "call": "eu-west-1", "wrapped": "in eu-west-1", "plain": 42.0})
    );
    assert_eq!(
        second,
        json!({"top": "us-east-2", "call": "us-east-2", "wrapped": "in us-east-2", "plain": 42.0})
    );
}

#[test]
fn a_module_whose_top_level_acts_acts_on_every_request() {
    // No request global is named, but the top level records into the
    // response: every request must get the resource and the condition.
    let spec = json!({
        "source": "load('acts.star', 'N')\ndxr['status'] = {'n': N}\n",
        "modules": {
            "acts.star": "Resource('cm', {'apiVersion': 'v1', 'kind': 'ConfigMap'})\nset_condition('Loaded', 'True', 'Loaded', 'acts.star ran')\nN = 1\n",
        },
    });
    let function = common::function();
    for _ in 0..2 {
        let rsp = run_spec_on(&function, &spec, "meta: {tag: t}");
        assert_eq!(status(&rsp)["n"], 1.0);
        assert!(
            rsp["desired"]["resources"]["cm"].is_object(),
            "the module's resource on every request: {rsp}"
        );
        assert_eq!(rsp["conditions"][0]["type"], "Loaded");
    }
}

#[test]
fn a_module_kept_between_requests_is_replaced_when_its_content_changes() {
    let function = common::function();
    for (body, want) in [("2 * x", 42.0), ("3 * x", 63.0), ("2 * x", 42.0)] {
        let spec = json!({
            "source": "load('m.star', 'f')\ndxr['status'] = {'v': f(21)}\n",
            "modules": {"m.star": format!("def f(x):\n    return {body}\n")},
        });
        let rsp = run_spec_on(&function, &spec, "meta: {tag: t}");
        assert_eq!(status(&rsp)["v"], want, "m.star returning {body}");
    }
}

/// Two star imports may bring the same name: the later one binds it, as a
/// later assignment would.
#[test]
fn a_later_star_import_rebinds_a_name() {
    let rsp = run_modules(
        "load('a.star', '*')\nload('b.star', '*')\ndxr['status'] = {'who': who}\n",
        json!({"a.star": "who = 'a'\n", "b.star": "who = 'b'\n"}),
    );
    assert_eq!(status(&rsp)["who"], "b");
}
