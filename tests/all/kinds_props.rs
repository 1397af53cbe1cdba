//! Generated inputs through a real function component: values of the WIT types round-trip
//! exactly (JSON → component values → the guest → back), and any JSON at all, given to any
//! function, gets exactly one answer: a schema refusal or the function's, never a host error,
//! and never a conversion refusal after the schema accepted (the derived schema and the
//! conversion agree).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use toolhost::{OutcomeKind, Runtime, Session, ToolSource};
use toolhost_tests::{call, engine, guests, workspace};

fn cases(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(default);
    Config { cases, failure_persistence: None, ..Config::default() }
}

fn runtime(tokio: &tokio::runtime::Runtime, ws: &std::path::Path) -> Runtime {
    let mut rt = Runtime::builder()
        .permission_mode(toolhost::policy::Mode::Bypass)
        .engine(engine())
        .workspace(ws)
        .build()
        .expect("runtime");
    for r in tokio.block_on(rt.load_tools(ToolSource::bytes("functions.wasm", guests::WIT_FUNCTIONS))) {
        r.expect("a function");
    }
    rt
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", "[a-z ]{0,8}", Just(String::new()), Just("é🦀\u{0}\"\\".to_string())]
}

fn person() -> impl Strategy<Value = Value> {
    let pet = (text(), prop_oneof![Just("cat"), Just("dog"), Just("fish")])
        .prop_map(|(name, species)| json!({"name": name, "species": species}));
    (text(), any::<u8>(), proptest::option::of(text()), text(), text(), proptest::option::of(text()), prop::collection::vec(pet, 0..4))
        .prop_map(|(name, age, email, street, city, zip, pets)| {
            json!({"name": name, "age": age, "email": email, "address": {"street": street, "city": city, "zip": zip}, "pets": pets})
        })
}

#[test]
fn generated_values_round_trip_exactly() {
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = workspace();
    let rt = runtime(&tokio, ws.path());
    let session = Session::new();
    let ints =
        (any::<i8>(), any::<i16>(), any::<i32>(), any::<i64>(), any::<u8>(), any::<u16>(), any::<u32>(), any::<u64>())
            .prop_map(|(a, b, c, d, e, f, g, h)| json!([a, b, c, d, e, f, g, h]));
    let nested = prop_oneof![Just(json!(null)), Just(json!({"some": null})), text().prop_map(|t| json!({"some": t})),];
    let flags = prop::sample::subsequence(vec!["read", "write", "execute"], 0..=3);
    let mut runner = TestRunner::new(cases(32));
    let outcome = runner.run(&(person(), ints, nested, flags, any::<char>()), |(p, ints, nested, flags, c)| {
        let answer = |tool: &str, input: Value| {
            let r = tokio.block_on(call(&rt, &session, tool, input.clone()));
            if r.is_error {
                return Err(TestCaseError::fail(format!("{tool} {input}: {}", r.text())));
            }
            serde_json::from_str::<Value>(&r.text()).map_err(|e| TestCaseError::fail(format!("{tool}: {e}")))
        };
        prop_assert_eq!(answer("roundtrip-record", json!({"p": p}))?, p);
        let args: serde_json::Map<String, Value> = ["a", "b", "c", "d", "e", "f", "g", "h"]
            .iter()
            .map(|k| k.to_string())
            .zip(ints.as_array().unwrap().iter().cloned())
            .collect();
        prop_assert_eq!(answer("ints", Value::Object(args))?, ints);
        prop_assert_eq!(answer("echo-nested-option", json!({"v": nested}))?, nested);
        let back = answer("echo-permissions", json!({"p": flags}))?;
        let mut back: Vec<&str> = back.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let mut want = flags.clone();
        back.sort_unstable();
        want.sort_unstable();
        prop_assert_eq!(back, want);
        prop_assert_eq!(answer("char-info", json!({"c": c.to_string()}))?, json!([c.to_string(), c as u32]));
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        prop_oneof![Just("circle"), Just("dot"), Just("red"), Just("read"), Just("é"), Just("")].prop_map(Value::from),
        ".{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        let keys = prop_oneof![
            Just("p"),
            Just("s"),
            Just("c"),
            Just("v"),
            Just("text"),
            Just("name"),
            Just("age"),
            Just("pets"),
            Just("circle"),
            Just("some"),
            Just("ok"),
            Just("err"),
            Just("address"),
            Just("city"),
            Just("street"),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys.prop_map(str::to_string), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn any_json_to_any_function_gets_one_answer_and_the_schema_and_the_conversion_agree() {
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ws = workspace();
    let rt = runtime(&tokio, ws.path());
    let session = Session::new();
    // Every function but the ones that touch files or trap on purpose.
    let tools: Vec<String> = rt
        .tools()
        .map(|t| t.info.name.clone())
        .filter(|n| !matches!(n.as_str(), "read-file" | "write-file" | "boom"))
        .collect();
    let (answered, refused) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    let mut runner = TestRunner::new(cases(96));
    let outcome = runner.run(&(prop::sample::select(tools), any_json(), any_json()), |(tool, param, whole)| {
        // Half the cases: the value under the tool's first parameter; half: the whole input.
        let first =
            rt.tool(&tool).unwrap().info.input_schema["properties"].as_object().and_then(|p| p.keys().next().cloned());
        for input in [first.map_or(json!({}), |k| json!({k: param})), whole] {
            let r = tokio.block_on(call(&rt, &session, &tool, input.clone()));
            prop_assert!(
                !matches!(
                    r.outcome,
                    OutcomeKind::HostError | OutcomeKind::Trap | OutcomeKind::Panic | OutcomeKind::InvalidInput
                ),
                "{} {}: {:?} {}",
                tool,
                input,
                r.outcome,
                r.text()
            );
            if r.outcome == OutcomeKind::SchemaError {
                refused.set(refused.get() + 1)
            } else {
                answered.set(answered.get() + 1)
            }
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    assert!(
        answered.get() > 0 && refused.get() > 0,
        "answered {}, refused {}: the property tests one side only",
        answered.get(),
        refused.get()
    );
}
