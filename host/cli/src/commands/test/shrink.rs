//! Smaller versions of an input that broke a tool, to find the least input that still breaks
//! it the same way: properties removed, arrays and strings cut, numbers moved toward zero.
//! Each candidate changes one place; the caller keeps the first that still fails and starts
//! again from it (a greedy search, bounded by the caller's budget).

use serde_json::{Value, json};

/// How many entries of an array or object get candidates of their own (the rest are cut in
/// halves only), so one huge value does not make thousands of candidates.
const PER_CONTAINER: usize = 8;

/// How deep inside a value candidates of its own are made: below, a value shrinks only by
/// losing its outer levels (a deep value would otherwise make a whole copy per level).
const MAX_DEPTH: usize = 12;

/// One-step simplifications of `v`, the boldest first.
pub fn candidates(v: &Value) -> Vec<Value> {
    candidates_at(v, 0)
}

fn candidates_at(v: &Value, depth: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let inner = depth < MAX_DEPTH;
    match v {
        Value::Null => {}
        Value::Bool(b) => {
            if *b {
                out.push(json!(false));
            }
        }
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.extend(toward_zero(i128::from(i)).into_iter().map(int_json));
            } else if let Some(u) = n.as_u64() {
                out.extend(toward_zero(i128::from(u)).into_iter().map(int_json));
            } else if let Some(f) = n.as_f64() {
                for c in [0.0, f.trunc(), f / 2.0] {
                    if c != f
                        && let Some(n) = serde_json::Number::from_f64(c)
                    {
                        out.push(Value::Number(n));
                    }
                }
            }
        }
        Value::String(s) => {
            let chars: Vec<char> = s.chars().collect();
            let n = chars.len();
            let mut lengths: Vec<usize> = std::iter::once(0).chain(steps(n)).collect();
            lengths.dedup();
            for len in lengths {
                if len < n {
                    out.push(Value::String(chars[..len].iter().collect()));
                }
            }
            if n > 1 {
                out.push(Value::String(chars[n / 2..].iter().collect()));
                out.push(Value::String(chars[1..].iter().collect()));
            }
        }
        Value::Array(items) => {
            let n = items.len();
            if n > 0 {
                out.push(json!([]));
                for len in steps(n) {
                    out.push(Value::Array(items[..len].to_vec()));
                }
                if n > 1 {
                    out.push(Value::Array(items[n / 2..].to_vec()));
                }
                for i in 0..n.min(PER_CONTAINER) {
                    let mut fewer = items.clone();
                    fewer.remove(i);
                    out.push(Value::Array(fewer));
                }
                // An item in place of the array: a nested value loses a level.
                if let Some(Value::Array(inner)) = items.first() {
                    out.push(Value::Array(inner.clone()));
                }
                for i in 0..if inner { n.min(PER_CONTAINER) } else { 0 } {
                    for c in candidates_at(&items[i], depth + 1) {
                        let mut changed = items.clone();
                        changed[i] = c;
                        out.push(Value::Array(changed));
                    }
                }
            }
        }
        Value::Object(map) => {
            for key in map.keys().take(PER_CONTAINER) {
                let mut fewer = map.clone();
                fewer.remove(key);
                out.push(Value::Object(fewer));
            }
            for (key, value) in map.iter().take(if inner { PER_CONTAINER } else { 0 }) {
                for c in candidates_at(value, depth + 1) {
                    let mut changed = map.clone();
                    changed.insert(key.clone(), c);
                    out.push(Value::Object(changed));
                }
            }
        }
    }
    // A candidate equal to the value would be accepted forever.
    out.retain(|c| c != v);
    out
}

/// Lengths between 0 and `n`, from half-way up to `n - 1`: n/2, 3n/4, 7n/8, …, n-1.
fn steps(n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut gap = n / 2;
    while gap > 0 {
        out.push(n - gap);
        gap /= 2;
    }
    out.dedup();
    out
}

/// Integers between 0 and `i`, the boldest first: 0, then `i` with half the distance removed,
/// a quarter, …, one.
fn toward_zero(i: i128) -> Vec<i128> {
    let mut out = Vec::new();
    if i == 0 {
        return out;
    }
    out.push(0);
    let mut gap = i.abs() / 2;
    while gap > 0 {
        out.push(i - gap * i.signum());
        gap /= 2;
    }
    if i < 0 {
        out.push(-i);
    }
    out.dedup();
    out
}

fn int_json(i: i128) -> Value {
    i64::try_from(i).map(Value::from).or_else(|_| u64::try_from(i).map(Value::from)).unwrap_or(json!(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The greedy search the command runs, with a predicate in place of a tool.
    fn shrink(mut v: Value, fails: impl Fn(&Value) -> bool) -> Value {
        'outer: loop {
            for c in candidates(&v) {
                if fails(&c) {
                    v = c;
                    continue 'outer;
                }
            }
            return v;
        }
    }

    #[test]
    fn a_threshold_is_found_exactly() {
        let fails = |v: &Value| v["depth"].as_i64().is_some_and(|d| d >= 41_234);
        let least = shrink(json!({"depth": 1_000_000_000, "name": "x".repeat(500)}), fails);
        assert_eq!(least, json!({"depth": 41_234}));
    }

    #[test]
    fn strings_and_nesting_shrink_to_what_matters() {
        let fails = |v: &Value| v["text"].as_str().is_some_and(|s| s.matches('(').count() >= 300);
        let least = shrink(json!({"text": "(".repeat(20_000), "other": [1, 2, 3]}), fails);
        assert_eq!(least, json!({"text": "(".repeat(300)}));

        fn depth(v: &Value) -> usize {
            match v {
                Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
                _ => 0,
            }
        }
        let nested = (0..30).fold(json!([]), |inner, _| json!([inner, 7]));
        let least = shrink(json!({"tree": nested}), |v| depth(&v["tree"]) >= 10);
        assert_eq!(depth(&least["tree"]), 10);
        assert_eq!(least.to_string().matches('7').count(), 0, "items beside the nesting go: {least}");
    }
}
