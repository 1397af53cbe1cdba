//! Inputs made from a tool's own JSON Schema: typical values, edge values (bounds, empty and
//! huge strings, deep nesting, strange characters) and near misses (one change away from a
//! valid input). The schema is read as draft 2020-12 as far as generation needs (`$ref` within
//! the document, `allOf`/`anyOf`/`oneOf`, `enum`, `const`, types, bounds, lengths, `items`,
//! `prefixItems`, `properties`, `required`, `additionalProperties`); what it cannot aim at
//! (`pattern`, `not`, `if`) it leaves to the validator, which sorts every candidate before
//! use, so a generated input is called valid only when the schema itself says so.

use serde_json::{Map, Number, Value, json};

/// SplitMix64: a seed must give the same inputs in every toolhost build and on every machine
/// (a seed in a CI log reproduces the run), which a general-purpose generator whose stream may
/// change between versions does not promise.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// What kind of value to aim for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Ordinary values, small, inside every bound.
    Typical,
    /// The values tools mishandle: bounds, empties, extremes, deep nesting, odd characters.
    Edge,
}

/// How deep `$ref`s and nested values may go before generation keeps to the smallest value.
const MAX_DEPTH: usize = 8;

/// Strings tools mishandle: empties, paths that climb out, control and bidi characters,
/// format directives, deeply nested brackets for recursive parsers.
fn edge_strings() -> Vec<String> {
    vec![
        String::new(),
        " ".into(),
        ".".into(),
        "/".into(),
        "../../../../etc/passwd".into(),
        "/etc/passwd".into(),
        "*".into(),
        "**/*".into(),
        "[".into(),
        "\\".into(),
        "%s%n%x".into(),
        "\0".into(),
        "\u{202e}txt.exe".into(),
        "é😀\u{fffd}".into(),
        "-1".into(),
        "null".into(),
        "\n".repeat(2000),
        "(".repeat(20_000),
        "[".repeat(20_000),
        "{".repeat(20_000),
        "a/".repeat(2000),
        "x".repeat(100_000),
    ]
}

/// Makes values for one schema document.
pub struct Generator {
    root: Value,
    pub rng: Rng,
    /// Bytes the input being made may still take: inputs stay well under the host's input
    /// limit (1 MiB by default), so that each is worth calling and cheap to make.
    budget: usize,
}

/// What one input may take, roughly, in bytes of JSON.
const INPUT_BUDGET: usize = 256 * 1024;

impl Generator {
    pub fn new(root: &Value, seed: u64) -> Self {
        Generator { root: root.clone(), rng: Rng::new(seed), budget: INPUT_BUDGET }
    }

    /// A value for the root schema.
    pub fn input(&mut self, flavor: Flavor) -> Value {
        self.budget = INPUT_BUDGET;
        let root = self.root.clone();
        self.value(&root, flavor, 0)
    }

    /// The schema at a local reference (`#/$defs/X`), if it resolves.
    fn resolve(&self, reference: &str) -> Option<Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(&percent_decode(pointer)).cloned()
    }

    /// `schema` with its `$ref` and `allOf` folded in, and one branch of `anyOf`/`oneOf` chosen:
    /// one flat set of keywords to generate from.
    fn flatten(&mut self, schema: &Value, depth: usize) -> Map<String, Value> {
        let Some(obj) = schema.as_object() else {
            // `true` (anything) or `false` (nothing: whatever is made fails the validator).
            return Map::new();
        };
        let mut out = Map::new();
        if depth < MAX_DEPTH {
            if let Some(target) = obj.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)) {
                let flat = self.flatten(&target, depth + 1);
                merge(&mut out, flat);
            }
            if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
                for s in all {
                    let flat = self.flatten(s, depth + 1);
                    merge(&mut out, flat);
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(branches) = obj.get(key).and_then(Value::as_array).filter(|b| !b.is_empty()) {
                    let branch = self.rng.pick(branches).clone();
                    let flat = self.flatten(&branch, depth + 1);
                    merge(&mut out, flat);
                }
            }
        }
        let own: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "$ref" | "allOf" | "anyOf" | "oneOf"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        merge(&mut out, own);
        out
    }

    pub fn value(&mut self, schema: &Value, flavor: Flavor, depth: usize) -> Value {
        // Past the budget, only small values: the edge is met where the budget allowed it.
        let flavor = if self.budget == 0 { Flavor::Typical } else { flavor };
        let s = self.flatten(schema, depth);
        if let Some(c) = s.get("const") {
            return c.clone();
        }
        if let Some(options) = s.get("enum").and_then(Value::as_array).filter(|o| !o.is_empty()) {
            return self.rng.pick(options).clone();
        }
        // Examples and defaults are values the author meant: use them now and then.
        if flavor == Flavor::Typical && self.rng.one_in(4) {
            if let Some(e) = s.get("examples").and_then(Value::as_array).filter(|e| !e.is_empty()) {
                return self.rng.pick(e).clone();
            }
            if let Some(d) = s.get("default") {
                return d.clone();
            }
        }
        let ty = self.choose_type(&s, depth);
        match ty.as_str() {
            "null" => Value::Null,
            "boolean" => Value::Bool(self.rng.one_in(2)),
            "integer" => self.integer(&s, flavor),
            "number" => self.number(&s, flavor),
            "string" => Value::String(self.string(&s, flavor)),
            "array" => self.array(&s, flavor, depth),
            _ => self.object(&s, flavor, depth),
        }
    }

    /// The type to make: one of those the schema allows, or, with none given, the one its
    /// keywords imply (anything, when they imply nothing).
    fn choose_type(&mut self, s: &Map<String, Value>, depth: usize) -> String {
        let listed: Vec<String> = match s.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(String::from).collect(),
            _ => Vec::new(),
        };
        if !listed.is_empty() {
            // Deep down, prefer what ends the recursion.
            if depth >= MAX_DEPTH && listed.iter().any(|t| t == "null") {
                return "null".into();
            }
            return self.rng.pick(&listed).clone();
        }
        const IMPLIED: [(&str, &str); 12] = [
            ("properties", "object"),
            ("required", "object"),
            ("additionalProperties", "object"),
            ("items", "array"),
            ("prefixItems", "array"),
            ("minItems", "array"),
            ("minLength", "string"),
            ("maxLength", "string"),
            ("pattern", "string"),
            ("format", "string"),
            ("minimum", "number"),
            ("maximum", "number"),
        ];
        if let Some((_, t)) = IMPLIED.iter().find(|(k, _)| s.contains_key(*k)) {
            return (*t).into();
        }
        if depth >= MAX_DEPTH {
            return "null".into();
        }
        // Anything goes: at the edge, deep nesting is what breaks recursive code.
        let any = ["null", "boolean", "integer", "number", "string", "array", "object"];
        (*self.rng.pick(&any)).into()
    }

    fn integer(&mut self, s: &Map<String, Value>, flavor: Flavor) -> Value {
        let (lo, hi) = int_bounds(s);
        let v: i128 = match flavor {
            Flavor::Typical => {
                let a = lo.unwrap_or(0).max(-50);
                let b = hi.unwrap_or(100).min(a + 1000);
                if a > b { lo.or(hi).unwrap_or(0) } else { a + i128::from(self.rng.below((b - a + 1) as u64)) }
            }
            Flavor::Edge => {
                let mut edges: Vec<i128> =
                    vec![0, -1, 1, 255, 65_536, i128::from(i32::MAX), 1_000_000_000, i128::from(i64::MAX)];
                edges.extend(lo.iter().flat_map(|l| [*l, *l + 1]));
                edges.extend(hi.iter().flat_map(|h| [*h, *h - 1]));
                edges.retain(|v| lo.is_none_or(|l| *v >= l) && hi.is_none_or(|h| *v <= h));
                if edges.is_empty() { lo.or(hi).unwrap_or(0) } else { *self.rng.pick(&edges) }
            }
        };
        let v = match s.get("multipleOf").and_then(Value::as_i64).filter(|m| *m > 0) {
            Some(m) => v - v.rem_euclid(i128::from(m)),
            None => v,
        };
        int_value(v)
    }

    fn number(&mut self, s: &Map<String, Value>, flavor: Flavor) -> Value {
        let lo = s.get("minimum").or(s.get("exclusiveMinimum")).and_then(Value::as_f64);
        let hi = s.get("maximum").or(s.get("exclusiveMaximum")).and_then(Value::as_f64);
        let v = match flavor {
            Flavor::Typical => {
                let a = lo.unwrap_or(0.0);
                let b = hi.unwrap_or(a + 100.0);
                a + (b - a) * (self.rng.below(1000) as f64 / 1000.0)
            }
            Flavor::Edge => {
                let mut edges = vec![0.0, -0.5, 1e-300, 1e300, -1e300, 1.5, f64::from(i32::MAX) + 0.5];
                edges.extend(lo);
                edges.extend(hi);
                edges.retain(|v| lo.is_none_or(|l| *v >= l) && hi.is_none_or(|h| *v <= h));
                if edges.is_empty() { lo.or(hi).unwrap_or(0.0) } else { *self.rng.pick(&edges) }
            }
        };
        Number::from_f64(v).map_or(Value::from(0), Value::Number)
    }

    fn string(&mut self, s: &Map<String, Value>, flavor: Flavor) -> String {
        let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = s.get("maxLength").and_then(Value::as_u64).map(|m| m as usize);
        if let Some(sample) = s.get("format").and_then(Value::as_str).and_then(format_sample)
            && (flavor == Flavor::Typical || self.rng.one_in(2))
        {
            return sample.to_string();
        }
        let raw = match flavor {
            Flavor::Typical => {
                const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 ._-/";
                let len = min.max(1) + self.rng.below(12) as usize;
                (0..len).map(|_| *self.rng.pick(ALPHABET) as char).collect()
            }
            Flavor::Edge => {
                let mut edges = edge_strings();
                if let Some(max) = max {
                    edges.push("z".repeat(max.min(200_000)));
                }
                self.rng.pick(&edges).clone()
            }
        };
        let s = fit_length(raw, min, max);
        self.budget = self.budget.saturating_sub(s.len());
        s
    }

    fn array(&mut self, s: &Map<String, Value>, flavor: Flavor, depth: usize) -> Value {
        let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = s.get("maxItems").and_then(Value::as_u64).map(|m| m as usize);
        let prefix: Vec<Value> = s.get("prefixItems").and_then(Value::as_array).cloned().unwrap_or_default();
        let items: Value = s.get("items").cloned().unwrap_or(Value::Bool(true));
        let count = if depth >= MAX_DEPTH {
            min
        } else {
            match flavor {
                Flavor::Typical => min + self.rng.below(4) as usize,
                Flavor::Edge => *self.rng.pick(&[min, min + 1, min + 200, max.unwrap_or(min + 1000)]),
            }
        };
        let count = max.map_or(count, |m| count.min(m)).max(min);
        let count = if self.budget == 0 { min } else { count };
        // An array of anything, at the edge: nest it deep rather than wide, since recursive
        // code is what a deep value breaks (within the nesting JSON parsers accept).
        if flavor == Flavor::Edge && items == Value::Bool(true) && prefix.is_empty() && self.rng.one_in(3) {
            return nested(100);
        }
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            if self.budget == 0 && i >= min {
                break;
            }
            let schema = prefix.get(i).unwrap_or(&items).clone();
            out.push(self.value(&schema, flavor, depth + 1));
            self.budget = self.budget.saturating_sub(2);
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true)) {
            let mut seen = std::collections::HashSet::new();
            out.retain(|v| seen.insert(v.to_string()));
        }
        Value::Array(out)
    }

    fn object(&mut self, s: &Map<String, Value>, flavor: Flavor, depth: usize) -> Value {
        let properties = s.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let required: Vec<String> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default();
        // At the edge, either every optional property or none; otherwise each half the time.
        let optional = match flavor {
            Flavor::Edge => Some(self.rng.one_in(2)),
            Flavor::Typical => None,
        };
        let mut out = Map::new();
        for (name, sub) in &properties {
            let wanted =
                required.contains(name) || (depth < MAX_DEPTH && optional.unwrap_or_else(|| self.rng.one_in(2)));
            if wanted {
                let v = self.value(sub, flavor, depth + 1);
                out.insert(name.clone(), v);
            }
        }
        for name in required {
            if !out.contains_key(&name) {
                let v = self.value(&Value::Bool(true), Flavor::Typical, depth + 1);
                out.insert(name, v);
            }
        }
        Value::Object(out)
    }
}

/// A near miss: `input` with one change that a schema usually refuses (a required property
/// gone, an unknown one added, a value of the wrong type, a bound passed by one).
pub fn near_miss(rng: &mut Rng, input: &Value) -> Value {
    let mut out = input.clone();
    let paths = leaf_paths(&out, String::new());
    match rng.below(4) {
        0 => {
            if let Some(obj) = out.as_object_mut()
                && !obj.is_empty()
            {
                let key = obj.keys().nth(rng.below(obj.len() as u64) as usize).cloned().unwrap_or_default();
                obj.remove(&key);
                return out;
            }
            out
        }
        1 => {
            if let Some(obj) = out.as_object_mut() {
                obj.insert("unexpected_property".into(), json!(1));
            }
            out
        }
        _ => {
            let Some(path) = (!paths.is_empty()).then(|| rng.pick(&paths).clone()) else {
                return json!([]);
            };
            if let Some(leaf) = out.pointer_mut(&path) {
                *leaf = match leaf {
                    Value::String(s) => {
                        if rng.one_in(2) {
                            json!(s.len())
                        } else {
                            Value::String(format!("{s}{}", "x".repeat(64)))
                        }
                    }
                    Value::Number(n) => match n.as_i64() {
                        Some(i) if rng.one_in(2) => json!(i.saturating_add(1)),
                        Some(i) => json!(i.saturating_sub(1)),
                        None => json!(n.to_string()),
                    },
                    Value::Bool(b) => json!(b.to_string()),
                    Value::Null => json!({}),
                    Value::Array(_) => json!({}),
                    Value::Object(_) => json!([]),
                };
            }
            out
        }
    }
}

/// JSON pointers to every leaf and empty container of `v`.
fn leaf_paths(v: &Value, at: String) -> Vec<String> {
    match v {
        Value::Object(m) if !m.is_empty() => m
            .iter()
            .flat_map(|(k, v)| leaf_paths(v, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"))))
            .collect(),
        Value::Array(a) if !a.is_empty() => {
            a.iter().enumerate().flat_map(|(i, v)| leaf_paths(v, format!("{at}/{i}"))).collect()
        }
        _ => vec![at],
    }
}

/// `[[[…]]]`, `depth` levels deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!([]), |inner, _| json!([inner]))
}

fn int_value(v: i128) -> Value {
    i64::try_from(v).map(Value::from).or_else(|_| u64::try_from(v).map(Value::from)).unwrap_or(Value::from(0))
}

/// The inclusive integer bounds a schema sets, if any.
fn int_bounds(s: &Map<String, Value>) -> (Option<i128>, Option<i128>) {
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    let lo = match (num("minimum"), num("exclusiveMinimum")) {
        (Some(m), _) => Some(m.ceil() as i128),
        (None, Some(m)) => Some(m.floor() as i128 + 1),
        _ => None,
    };
    let hi = match (num("maximum"), num("exclusiveMaximum")) {
        (Some(m), _) => Some(m.floor() as i128),
        (None, Some(m)) => Some(m.ceil() as i128 - 1),
        _ => None,
    };
    (lo, hi)
}

/// A well-formed value for the string formats tools commonly declare.
fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2026-01-02T03:04:05Z",
        "date" => "2026-01-02",
        "time" => "03:04:05Z",
        "email" => "someone@example.com",
        "uri" | "url" | "iri" => "https://example.com/a?b=c",
        "uri-reference" | "iri-reference" => "/a/b",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "uuid" => "123e4567-e89b-12d3-a456-426614174000",
        "regex" => "^a+$",
        _ => return None,
    })
}

/// `s` cut or padded (with `a`) to a length in characters within `min..=max`.
fn fit_length(s: String, min: usize, max: Option<usize>) -> String {
    let len = s.chars().count();
    let mut s = match max {
        Some(max) if len > max => s.chars().take(max).collect(),
        _ => s,
    };
    let len = s.chars().count();
    if len < min {
        s.extend(std::iter::repeat_n('a', min - len));
    }
    s
}

/// Keywords of `from` added to `into`; where both have `properties`, their union; where both
/// have `required`, both lists.
fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        match (k.as_str(), into.get_mut(&k), v) {
            ("properties", Some(Value::Object(a)), Value::Object(b)) => a.extend(b),
            ("required", Some(Value::Array(a)), Value::Array(b)) => a.extend(b),
            (_, _, v) => {
                into.insert(k, v);
            }
        }
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs_and_bounds_are_kept() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 3, "maximum": 9},
                "s": {"type": "string", "minLength": 2, "maxLength": 5},
                "e": {"$ref": "#/$defs/E"}
            },
            "required": ["n", "s", "e"],
            "$defs": {"E": {"enum": ["a", "b"]}}
        });
        let validator = jsonschema::validator_for(&schema).unwrap();
        let run = |seed| {
            let mut g = Generator::new(&schema, seed);
            (0..50).map(|i| g.input(if i % 2 == 0 { Flavor::Typical } else { Flavor::Edge })).collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        for v in &a {
            assert!(validator.is_valid(v), "{v} breaks its schema");
        }
        let edges: Vec<i64> = a.iter().filter_map(|v| v["n"].as_i64()).collect();
        assert!(edges.contains(&3) && edges.contains(&9), "bounds are among the edge values: {edges:?}");
    }

    #[test]
    fn near_misses_are_usually_refused() {
        let schema = json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 5}},
            "required": ["path", "limit"],
            "additionalProperties": false
        });
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut rng = Rng::new(1);
        let input = json!({"path": "a", "limit": 5});
        let refused = (0..100).filter(|_| !validator.is_valid(&near_miss(&mut rng, &input))).count();
        assert!(refused > 60, "{refused} of 100 near misses refused");
    }
}
