//! The JSON Schema of a component-model type: what a function component's tool accepts.
//!
//! One JSON form per type, the same in both directions ([`super::wit_value`] converts by the
//! same rules), chosen to be what a model writes without being told:
//!
//! | WIT | JSON |
//! |---|---|
//! | `bool`, `string` | boolean, string |
//! | `s8` … `u64` | integer within the type's range |
//! | `f32`, `f64` | number (a non-finite result is the string `NaN`, `Infinity` or `-Infinity`) |
//! | `char` | a string of one character |
//! | `list<T>`, `list<T, N>` | array (of exactly N) |
//! | `tuple<…>` | array of exactly that many, each its own type |
//! | `record` | object; every field required except `option` ones; no other keys |
//! | `option<T>` | `null` or the value; `{"some": value}` when T is itself an option |
//! | `enum` | one of the case names |
//! | `flags` | array of flag names, each at most once |
//! | `variant` | a case name for a case without payload, `{"case": payload}` otherwise |
//! | `result<T, E>` | `{"ok": value}` or `{"err": value}` (`null` for no payload) |
//! | `map<string, V>` | object; other keys: array of `[key, value]` pairs |
//!
//! Resources, futures, streams and error contexts have no JSON form: a function that takes or
//! returns one is refused at load ([`unsupported`]).

use serde_json::{Map, Value, json};
use wasmtime::component::types::Type;

/// The schema of a function's parameters: an object with one property per parameter, every
/// parameter required except `option` ones.
pub(crate) fn params_schema<'a>(params: impl IntoIterator<Item = (&'a str, Type)>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        if !matches!(ty, Type::Option(_)) {
            required.push(Value::from(name));
        }
        properties.insert(name.to_string(), schema(&ty));
    }
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The schema of a value of `ty`.
pub(crate) fn schema(ty: &Type) -> Value {
    match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::S8 => int(i8::MIN, i8::MAX),
        Type::U8 => int(u8::MIN, u8::MAX),
        Type::S16 => int(i16::MIN, i16::MAX),
        Type::U16 => int(u16::MIN, u16::MAX),
        Type::S32 => int(i32::MIN, i32::MAX),
        Type::U32 => int(u32::MIN, u32::MAX),
        Type::S64 => int(i64::MIN, i64::MAX),
        Type::U64 => int(u64::MIN, u64::MAX),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(l) => json!({"type": "array", "items": schema(&l.ty())}),
        Type::FixedLengthList(l) => {
            json!({"type": "array", "items": schema(&l.ty()), "minItems": l.len(), "maxItems": l.len()})
        }
        Type::Map(m) => match m.key() {
            Type::String => json!({"type": "object", "additionalProperties": schema(&m.value())}),
            key => json!({"type": "array", "items": tuple([schema(&key), schema(&m.value())])}),
        },
        Type::Record(r) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in r.fields() {
                if !matches!(field.ty, Type::Option(_)) {
                    required.push(Value::from(field.name));
                }
                properties.insert(field.name.to_string(), schema(&field.ty));
            }
            json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
        }
        Type::Tuple(t) => json!(tuple(t.types().map(|t| schema(&t)))),
        Type::Enum(e) => json!({"type": "string", "enum": e.names().collect::<Vec<_>>()}),
        Type::Flags(f) => {
            json!({"type": "array", "items": {"type": "string", "enum": f.names().collect::<Vec<_>>()}, "uniqueItems": true})
        }
        Type::Variant(v) => {
            let cases: Vec<Value> = v
                .cases()
                .map(|c| match &c.ty {
                    None => json!({"const": c.name}),
                    Some(ty) => tagged(c.name, schema(ty)),
                })
                .collect();
            json!({"oneOf": cases})
        }
        Type::Option(o) => {
            let inner = o.ty();
            let some = if matches!(inner, Type::Option(_)) { tagged("some", schema(&inner)) } else { schema(&inner) };
            json!({"anyOf": [some, {"type": "null"}]})
        }
        Type::Result(r) => {
            let side = |ty: Option<Type>| ty.map_or_else(|| json!({"type": "null"}), |t| schema(&t));
            json!({"oneOf": [tagged("ok", side(r.ok())), tagged("err", side(r.err()))]})
        }
        // Refused at load (`unsupported`); a schema that accepts nothing, should one get here.
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => json!(false),
    }
}

/// Why `ty` (or a type inside it) has no JSON form, if it has none.
pub(crate) fn unsupported(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Own(_) | Type::Borrow(_) => Some("a resource handle"),
        Type::Future(_) => Some("a future"),
        Type::Stream(_) => Some("a stream"),
        Type::ErrorContext => Some("an error context"),
        Type::List(l) => unsupported(&l.ty()),
        Type::FixedLengthList(l) => unsupported(&l.ty()),
        Type::Map(m) => unsupported(&m.key()).or_else(|| unsupported(&m.value())),
        Type::Record(r) => r.fields().find_map(|f| unsupported(&f.ty)),
        Type::Tuple(t) => t.types().find_map(|t| unsupported(&t)),
        Type::Variant(v) => v.cases().find_map(|c| c.ty.as_ref().and_then(unsupported)),
        Type::Option(o) => unsupported(&o.ty()),
        Type::Result(r) => r.ok().as_ref().and_then(unsupported).or_else(|| r.err().as_ref().and_then(unsupported)),
        _ => None,
    }
}

fn int<T: Into<Value>>(min: T, max: T) -> Value {
    json!({"type": "integer", "minimum": min.into(), "maximum": max.into()})
}

/// An array of exactly these, in order.
fn tuple(items: impl IntoIterator<Item = Value>) -> Value {
    let items: Vec<Value> = items.into_iter().collect();
    let n = items.len();
    json!({"type": "array", "prefixItems": items, "items": false, "minItems": n, "maxItems": n})
}

/// An object with exactly one key, `tag`, holding a value of `inner`.
fn tagged(tag: &str, inner: Value) -> Value {
    json!({"type": "object", "properties": {tag: inner}, "required": [tag], "additionalProperties": false})
}
