//! JSON to component values and back, by the rules in [`super::wit_schema`]. The input was
//! checked against the schema already; these checks stand on their own anyway (a schema
//! extended in the config, a range JSON Schema cannot say), and each error names the field.

use serde_json::{Map, Value};
use std::fmt;
use wasmtime::component::Val;
use wasmtime::component::types::Type;

/// A value that does not fit its type, and where it is (a JSON pointer into the input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueError {
    /// Where, as a JSON pointer (`/person/tags/2`); empty for the whole input.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "" => write!(f, "the input {}", self.message),
            path => write!(f, "{path} {}", self.message),
        }
    }
}

/// The arguments of a function taking `params`, from the input object.
pub(crate) fn params_from_json(params: &[(String, Type)], input: &Value) -> Result<Vec<Val>, ValueError> {
    let Value::Object(fields) = input else { return Err(error("", format!("must be an object, not {}", kind(input)))) };
    if let Some(unknown) = fields.keys().find(|k| !params.iter().any(|(name, _)| name == *k)) {
        return Err(error(&pointer("", unknown), "is not a parameter of this function".into()));
    }
    params.iter().map(|(name, ty)| field(ty, fields.get(name), &pointer("", name))).collect()
}

/// A record field or parameter: a missing `option` is `none`; anything else must be there.
fn field(ty: &Type, value: Option<&Value>, path: &str) -> Result<Val, ValueError> {
    match (value, ty) {
        (Some(v), _) => from_json(ty, v, path),
        (None, Type::Option(_)) => Ok(Val::Option(None)),
        (None, _) => Err(error(path, "is required".into())),
    }
}

/// The value of type `ty` that `value` stands for.
pub(crate) fn from_json(ty: &Type, value: &Value, path: &str) -> Result<Val, ValueError> {
    let wrong = || error(path, format!("must be {}, not {}", expected(ty), kind(value)));
    Ok(match ty {
        Type::Bool => Val::Bool(value.as_bool().ok_or_else(wrong)?),
        Type::S8 => Val::S8(integer(value, path, ty)?),
        Type::U8 => Val::U8(integer(value, path, ty)?),
        Type::S16 => Val::S16(integer(value, path, ty)?),
        Type::U16 => Val::U16(integer(value, path, ty)?),
        Type::S32 => Val::S32(integer(value, path, ty)?),
        Type::U32 => Val::U32(integer(value, path, ty)?),
        Type::S64 => Val::S64(integer(value, path, ty)?),
        Type::U64 => Val::U64(integer(value, path, ty)?),
        Type::Float64 => Val::Float64(value.as_f64().ok_or_else(wrong)?),
        Type::Float32 => {
            let x = value.as_f64().ok_or_else(wrong)?;
            // Rounding to the nearest f32 is expected; leaving its range is not.
            if x.abs() > f64::from(f32::MAX) {
                return Err(error(path, format!("{x} is outside the range of a 32-bit float")));
            }
            Val::Float32(x as f32)
        }
        Type::Char => {
            let s = value.as_str().ok_or_else(wrong)?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => {
                    return Err(error(
                        path,
                        format!("must be exactly one character, not {} characters", s.chars().count()),
                    ));
                }
            }
        }
        Type::String => Val::String(value.as_str().ok_or_else(wrong)?.to_string()),
        Type::List(l) => {
            let items = value.as_array().ok_or_else(wrong)?;
            Val::List(elements(&l.ty(), items, path)?)
        }
        Type::FixedLengthList(l) => {
            let items = value.as_array().ok_or_else(wrong)?;
            if items.len() != l.len() as usize {
                return Err(error(path, format!("must have exactly {} items, not {}", l.len(), items.len())));
            }
            Val::FixedLengthList(elements(&l.ty(), items, path)?)
        }
        Type::Map(m) => {
            let (key_ty, value_ty) = (m.key(), m.value());
            match (&key_ty, value) {
                (Type::String, Value::Object(entries)) => Val::Map(
                    entries
                        .iter()
                        .map(|(k, v)| Ok((Val::String(k.clone()), from_json(&value_ty, v, &pointer(path, k))?)))
                        .collect::<Result<_, ValueError>>()?,
                ),
                (_, Value::Array(pairs)) => Val::Map(
                    pairs
                        .iter()
                        .enumerate()
                        .map(|(i, pair)| {
                            let at = pointer(path, &i.to_string());
                            match pair.as_array().map(Vec::as_slice) {
                                Some([k, v]) => Ok((
                                    from_json(&key_ty, k, &pointer(&at, "0"))?,
                                    from_json(&value_ty, v, &pointer(&at, "1"))?,
                                )),
                                _ => Err(error(&at, format!("must be a [key, value] pair, not {}", kind(pair)))),
                            }
                        })
                        .collect::<Result<_, ValueError>>()?,
                ),
                _ => return Err(wrong()),
            }
        }
        Type::Record(r) => {
            let fields = value.as_object().ok_or_else(wrong)?;
            if let Some(unknown) = fields.keys().find(|k| !r.fields().any(|f| f.name == k.as_str())) {
                let names: Vec<&str> = r.fields().map(|f| f.name).collect();
                return Err(error(&pointer(path, unknown), format!("is not a field (fields: {})", names.join(", "))));
            }
            Val::Record(
                r.fields()
                    .map(|f| Ok((f.name.to_string(), field(&f.ty, fields.get(f.name), &pointer(path, f.name))?)))
                    .collect::<Result<_, ValueError>>()?,
            )
        }
        Type::Tuple(t) => {
            let items = value.as_array().ok_or_else(wrong)?;
            if items.len() != t.types().len() {
                return Err(error(path, format!("must have exactly {} items, not {}", t.types().len(), items.len())));
            }
            Val::Tuple(
                t.types()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (ty, v))| from_json(&ty, v, &pointer(path, &i.to_string())))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Enum(e) => {
            let name = value.as_str().ok_or_else(wrong)?;
            if !e.names().any(|n| n == name) {
                return Err(error(path, format!("must be one of {}, not {name:?}", quoted(e.names()))));
            }
            Val::Enum(name.to_string())
        }
        Type::Flags(f) => {
            let items = value.as_array().ok_or_else(wrong)?;
            let mut set: Vec<String> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let at = pointer(path, &i.to_string());
                let name =
                    item.as_str().ok_or_else(|| error(&at, format!("must be a flag name, not {}", kind(item))))?;
                if !f.names().any(|n| n == name) {
                    return Err(error(&at, format!("must be one of {}, not {name:?}", quoted(f.names()))));
                }
                if set.iter().any(|s| s == name) {
                    return Err(error(&at, format!("repeats the flag {name:?}")));
                }
                set.push(name.to_string());
            }
            Val::Flags(set)
        }
        Type::Variant(v) => {
            let (name, payload) = one_key(value, path).ok_or_else(wrong)?;
            let Some(case) = v.cases().find(|c| c.name == name) else {
                return Err(error(
                    path,
                    format!("must be one of the cases {}, not {name:?}", quoted(v.cases().map(|c| c.name))),
                ));
            };
            let at = pointer(path, name);
            let payload = match (&case.ty, payload) {
                (None, None | Some(Value::Null)) => None,
                (None, Some(_)) => return Err(error(&at, format!("takes no value: write the case as \"{name}\""))),
                (Some(ty), Some(p)) => Some(Box::new(from_json(ty, p, &at)?)),
                (Some(_), None) => {
                    return Err(error(path, format!("case {name:?} needs a value: write {{\"{name}\": …}}")));
                }
            };
            Val::Variant(name.to_string(), payload)
        }
        Type::Option(o) => match value {
            Value::Null => Val::Option(None),
            some => {
                let inner = o.ty();
                let some = match &inner {
                    // `option<option<T>>`: the inner value is wrapped, so `null` stays unambiguous.
                    Type::Option(_) => match one_key(some, path) {
                        Some(("some", Some(v))) => v,
                        _ => return Err(error(path, format!("must be null or {{\"some\": …}}, not {}", kind(some)))),
                    },
                    _ => some,
                };
                Val::Option(Some(Box::new(from_json(&inner, some, path)?)))
            }
        },
        Type::Result(r) => {
            let side = |ty: Option<Type>, v: Option<&Value>, at: &str| -> Result<Option<Box<Val>>, ValueError> {
                match (ty, v) {
                    (None, None | Some(Value::Null)) => Ok(None),
                    (None, Some(_)) => Err(error(at, "takes no value: write null".into())),
                    (Some(ty), Some(v)) => Ok(Some(Box::new(from_json(&ty, v, at)?))),
                    (Some(_), None) => Err(error(at, "is required".into())),
                }
            };
            match one_key(value, path) {
                Some(("ok", v)) => Val::Result(Ok(side(r.ok(), v, &pointer(path, "ok"))?)),
                Some(("err", v)) => Val::Result(Err(side(r.err(), v, &pointer(path, "err"))?)),
                _ => return Err(error(path, format!("must be {{\"ok\": …}} or {{\"err\": …}}, not {}", kind(value)))),
            }
        }
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err(error(path, "has a type with no JSON form".into()));
        }
    })
}

/// The JSON form of a value.
pub(crate) fn to_json(val: &Val) -> Value {
    match val {
        Val::Bool(b) => Value::Bool(*b),
        Val::S8(n) => (*n).into(),
        Val::U8(n) => (*n).into(),
        Val::S16(n) => (*n).into(),
        Val::U16(n) => (*n).into(),
        Val::S32(n) => (*n).into(),
        Val::U32(n) => (*n).into(),
        Val::S64(n) => (*n).into(),
        Val::U64(n) => (*n).into(),
        Val::Float32(x) => float(f64::from(*x)),
        Val::Float64(x) => float(*x),
        Val::Char(c) => Value::String(c.to_string()),
        Val::String(s) => Value::String(s.clone()),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => items.iter().map(to_json).collect(),
        Val::Map(entries) => {
            if entries.iter().all(|(k, _)| matches!(k, Val::String(_))) {
                let mut object = Map::new();
                for (k, v) in entries {
                    if let Val::String(k) = k {
                        object.insert(k.clone(), to_json(v));
                    }
                }
                Value::Object(object)
            } else {
                entries.iter().map(|(k, v)| Value::Array(vec![to_json(k), to_json(v)])).collect()
            }
        }
        Val::Record(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        Val::Enum(name) => Value::String(name.clone()),
        Val::Flags(names) => names.iter().map(|n| Value::String(n.clone())).collect(),
        Val::Variant(name, None) => Value::String(name.clone()),
        Val::Variant(name, Some(payload)) => single(name, to_json(payload)),
        Val::Option(None) => Value::Null,
        Val::Option(Some(inner)) => match inner.as_ref() {
            Val::Option(_) => single("some", to_json(inner)),
            other => to_json(other),
        },
        Val::Result(Ok(v)) => single("ok", v.as_deref().map_or(Value::Null, to_json)),
        Val::Result(Err(v)) => single("err", v.as_deref().map_or(Value::Null, to_json)),
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => Value::String("<handle>".into()),
    }
}

fn elements(ty: &Type, items: &[Value], path: &str) -> Result<Vec<Val>, ValueError> {
    items.iter().enumerate().map(|(i, v)| from_json(ty, v, &pointer(path, &i.to_string()))).collect()
}

fn integer<T: TryFrom<i128>>(value: &Value, path: &str, ty: &Type) -> Result<T, ValueError> {
    let n = value
        .as_i64()
        .map(i128::from)
        .or_else(|| value.as_u64().map(i128::from))
        .or_else(|| value.as_f64().filter(|x| x.fract() == 0.0 && x.abs() < 1e19).map(|x| x as i128));
    let Some(n) = n else { return Err(error(path, format!("must be {}, not {}", expected(ty), kind(value)))) };
    T::try_from(n).map_err(|_| error(path, format!("{n} is outside the range of {}", expected(ty))))
}

/// `{"name": value}` (or the string `"name"`, a case with no value).
fn one_key<'v>(value: &'v Value, _path: &str) -> Option<(&'v str, Option<&'v Value>)> {
    match value {
        Value::String(name) => Some((name, None)),
        Value::Object(map) if map.len() == 1 => map.iter().next().map(|(k, v)| (k.as_str(), Some(v))),
        _ => None,
    }
}

fn single(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_string(), value);
    Value::Object(map)
}

fn float(x: f64) -> Value {
    serde_json::Number::from_f64(x).map(Value::Number).unwrap_or_else(|| {
        Value::String(
            if x.is_nan() {
                "NaN"
            } else if x > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            }
            .into(),
        )
    })
}

fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn error(path: &str, message: String) -> ValueError {
    ValueError { path: path.to_string(), message }
}

fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
}

/// What a value of `ty` is, for messages.
fn expected(ty: &Type) -> &'static str {
    match ty {
        Type::Bool => "a boolean",
        Type::S8 => "an integer from -128 to 127 (s8)",
        Type::U8 => "an integer from 0 to 255 (u8)",
        Type::S16 => "an integer from -32768 to 32767 (s16)",
        Type::U16 => "an integer from 0 to 65535 (u16)",
        Type::S32 => "a 32-bit signed integer (s32)",
        Type::U32 => "a 32-bit unsigned integer (u32)",
        Type::S64 => "a 64-bit signed integer (s64)",
        Type::U64 => "a 64-bit unsigned integer (u64)",
        Type::Float32 | Type::Float64 => "a number",
        Type::Char | Type::String => "a string",
        Type::List(_) | Type::FixedLengthList(_) | Type::Tuple(_) | Type::Flags(_) => "an array",
        Type::Map(_) | Type::Record(_) => "an object",
        Type::Enum(_) => "a case name",
        Type::Variant(_) => "a case name or {\"case\": value}",
        Type::Option(_) => "null or a value",
        Type::Result(_) => "{\"ok\": …} or {\"err\": …}",
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => "a handle",
    }
}

/// What a JSON value is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number with a fraction",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
