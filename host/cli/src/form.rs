//! A tool's question (`toolhost:session/session.elicit`) put to a person at the terminal: the
//! message with the asking tool's name, then each field of the form in turn, its default
//! offered, its choices numbered. The answer is checked against the form before it is sent;
//! an end of input cancels, and `!decline` at any prompt declines.

use crate::setup::printable;
use serde_json::{Map, Value};
use std::io::{BufRead, Write};
use toolhost::{Answer, Question};

/// How many times one field is asked before the form is cancelled.
const TRIES: usize = 5;

/// Put `question` to the person behind `input` / `out`.
pub fn fill(question: &Question, input: &mut impl BufRead, out: &mut impl Write) -> Answer {
    let _ = writeln!(out);
    say(out, &format!("toolhost: {}", question.shown()));
    say(
        out,
        "  (Enter keeps the [default]; `-` leaves an optional field empty; `!decline` refuses to answer; Ctrl-D cancels)",
    );
    let empty = Map::new();
    let fields = question.form.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let required: Vec<&str> = question
        .form
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut values = Map::new();
    for (name, field) in fields {
        match ask_field(name, field, required.contains(&name.as_str()), input, out) {
            Field::Value(v) => {
                values.insert(name.clone(), v);
            }
            Field::Omitted => {}
            Field::Decline => return Answer::Decline,
            Field::Cancel => return Answer::Cancel,
        }
    }
    let values = Value::Object(values);
    match question.check_answer(&values) {
        Ok(()) => match values {
            Value::Object(values) => Answer::Accept(values),
            _ => Answer::Cancel,
        },
        Err(why) => {
            say(out, &format!("  {why}: not sent"));
            Answer::Cancel
        }
    }
}

/// One line to the person: everything a tool wrote (names, titles, choices, defaults, and the
/// error messages that quote them) goes through here, made [`printable`], so that no part of
/// a form can write an escape sequence to the terminal.
fn say(out: &mut impl Write, line: &str) {
    let _ = writeln!(out, "{}", printable(line));
}

enum Field {
    Value(Value),
    Omitted,
    Decline,
    Cancel,
}

fn ask_field(name: &str, field: &Value, required: bool, input: &mut impl BufRead, out: &mut impl Write) -> Field {
    let text = |k: &str| field.get(k).and_then(Value::as_str);
    let kind = text("type").unwrap_or("string");
    let choices = choices(field);
    let label = text("title").unwrap_or(name);
    match text("description") {
        Some(d) => say(out, &format!("  {label} — {d}")),
        None => say(out, &format!("  {label}")),
    }
    if !choices.is_empty() {
        let listed: Vec<String> =
            choices.iter().enumerate().map(|(i, (_, shown))| format!("{}) {shown}", i + 1)).collect();
        say(out, &format!("    {}", listed.join("   ")));
        if kind == "array" {
            say(out, "    (several: numbers separated by commas)");
        }
    }
    let default = field.get("default");
    for _ in 0..TRIES {
        let shown_default = default.map(|d| format!(" [{}]", plain(d))).unwrap_or_default();
        let mark = if required { " (required)" } else { "" };
        let _ = write!(out, "{}", printable(&format!("  {name}{mark}{shown_default}: ")));
        let _ = out.flush();
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => return Field::Cancel,
            Ok(_) => {}
        }
        let line = line.trim();
        match line {
            "!decline" => return Field::Decline,
            "" => match default {
                Some(d) => return Field::Value(d.clone()),
                None if !required => return Field::Omitted,
                None => {
                    say(out, "    an answer is required");
                    continue;
                }
            },
            "-" if !required => return Field::Omitted,
            _ => {}
        }
        match parse(kind, &choices, line) {
            Ok(v) => return Field::Value(v),
            Err(why) => say(out, &format!("    {why}")),
        }
    }
    Field::Cancel
}

/// A field's choices, `(value, shown)`: `enum` (with `enumNames`), `oneOf` / `items.anyOf`
/// of `{const, title}`, or `items.enum`.
fn choices(field: &Value) -> Vec<(Value, String)> {
    let items = field.get("items").unwrap_or(&Value::Null);
    let listed = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    let titled = |list: Vec<Value>| -> Vec<(Value, String)> {
        list.into_iter()
            .filter_map(|c| {
                let value = c.get("const")?.clone();
                let shown = c.get("title").and_then(Value::as_str).map_or_else(|| plain(&value), str::to_string);
                Some((value, shown))
            })
            .collect()
    };
    let named = |values: Vec<Value>, names: Vec<Value>| -> Vec<(Value, String)> {
        values
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                let shown = names.get(i).and_then(Value::as_str).map_or_else(|| plain(&v), str::to_string);
                (v, shown)
            })
            .collect()
    };
    if let Some(one_of) = field.get("oneOf") {
        return titled(listed(Some(one_of)));
    }
    if let Some(any_of) = items.get("anyOf") {
        return titled(listed(Some(any_of)));
    }
    if field.get("enum").is_some() {
        return named(listed(field.get("enum")), listed(field.get("enumNames")));
    }
    named(listed(items.get("enum")), Vec::new())
}

/// `line` as a value of the field's type (or one of its choices, by number or value).
fn parse(kind: &str, choices: &[(Value, String)], line: &str) -> Result<Value, String> {
    let pick = |word: &str| -> Result<Value, String> {
        if let Ok(n) = word.parse::<usize>()
            && (1..=choices.len()).contains(&n)
        {
            return Ok(choices[n - 1].0.clone());
        }
        choices
            .iter()
            .find(|(v, shown)| plain(v) == word || shown == word)
            .map(|(v, _)| v.clone())
            .ok_or_else(|| format!("{word:?} is not one of the choices"))
    };
    match kind {
        "array" => line.split(',').map(str::trim).filter(|w| !w.is_empty()).map(pick).collect::<Result<_, _>>(),
        _ if !choices.is_empty() => pick(line),
        "integer" => line.parse::<i64>().map(Value::from).map_err(|_| format!("{line:?} is not a whole number")),
        "number" => line
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{line:?} is not a number")),
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer yes or no".to_string()),
        },
        _ => Ok(Value::String(line.to_string())),
    }
}

/// A value as a person reads it: strings without quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn question(form: Value) -> Question {
        Question::new("toolu_1", "Asker", "Tell me".into(), &form.to_string()).unwrap()
    }

    fn answer(form: Value, typed: &str) -> (Answer, String) {
        let mut out = Vec::new();
        let a = fill(&question(form), &mut typed.as_bytes(), &mut out);
        (a, String::from_utf8(out).unwrap())
    }

    #[test]
    fn each_field_is_asked_with_its_default_and_choices_and_typed() {
        let form = json!({"type": "object", "properties": {
            "age": {"type": "integer", "default": 30},
            "name": {"type": "string", "title": "Your name"},
            "status": {"type": "string", "enum": ["active", "inactive"], "enumNames": ["Active", "Gone"]},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}},
            "verified": {"type": "boolean"}
        }, "required": ["name"]});
        let (a, shown) = answer(form.clone(), "\nada\n2\n1, Beta\nyes\n");
        assert_eq!(
            a,
            Answer::Accept(
                json!({"age": 30, "name": "ada", "status": "inactive", "tags": ["a", "b"], "verified": true})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        assert!(shown.contains("Tool Asker asks: Tell me"), "{shown}");
        assert!(shown.contains("1) Active   2) Gone"), "{shown}");
        // A wrong type is asked again; an optional field may be left out; `!decline` declines.
        let (a, shown) = answer(form.clone(), "x\n31\nada\n-\n-\n-\n");
        assert_eq!(a, Answer::Accept(json!({"age": 31, "name": "ada"}).as_object().unwrap().clone()));
        assert!(shown.contains("\"x\" is not a whole number"), "{shown}");
        assert_eq!(answer(form.clone(), "\n!decline\n").0, Answer::Decline);
        // The end of input cancels; a required field is never left out.
        assert_eq!(answer(form.clone(), "\n").0, Answer::Cancel);
        let (a, shown) = answer(form, "\n\n");
        assert_eq!(a, Answer::Cancel);
        assert!(shown.contains("an answer is required"), "{shown}");
    }

    #[test]
    fn a_tools_text_cannot_write_escape_sequences_to_the_terminal() {
        let form = json!({"type": "object", "properties": {"x": {"type": "string", "description": "\u{1b}[2Jgone"}}});
        let (_, shown) = answer(form, "\n");
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(shown.contains("\\u{1b}[2Jgone"), "{shown}");
    }

    /// Text a hostile tool might write: any character, with escape sequences, C1 controls,
    /// carriage returns and bidirectional overrides made likely.
    fn hostile() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            3 => any::<char>(),
            1 => Just('\u{1b}'),
            1 => Just('\u{9b}'),
            1 => Just('\r'),
            1 => Just('\n'),
            1 => Just('\u{202e}'),
            1 => Just('\u{2066}'),
            1 => Just('['),
        ];
        prop::collection::vec(c, 0..10).prop_map(String::from_iter)
    }

    /// A form field of any kind a form may have, every text in it hostile.
    fn field() -> impl Strategy<Value = Value> {
        let kind =
            prop::sample::select(vec!["string", "integer", "number", "boolean", "enum", "oneOf", "many", "manyTitled"]);
        (kind, prop::option::of(hostile()), prop::option::of(hostile()), prop::option::of(hostile()), prop::collection::vec(hostile(), 1..4))
            .prop_map(|(kind, title, description, default, choices)| {
                let mut f = match kind {
                    "enum" => json!({"type": "string", "enum": choices.clone(), "enumNames": choices.iter().rev().collect::<Vec<_>>()}),
                    "oneOf" => json!({"type": "string", "oneOf": choices.iter().map(|c| json!({"const": c, "title": c})).collect::<Vec<_>>()}),
                    "many" => json!({"type": "array", "items": {"type": "string", "enum": choices}}),
                    "manyTitled" => json!({"type": "array", "items": {"anyOf": choices.iter().map(|c| json!({"const": c, "title": c})).collect::<Vec<_>>()}}),
                    other => json!({"type": other}),
                };
                if let Some(t) = title {
                    f["title"] = json!(t);
                }
                if let Some(d) = description {
                    f["description"] = json!(d);
                }
                if let Some(d) = default {
                    f["default"] = json!(d);
                }
                f
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever a tool puts in its form and whatever the person types, nothing reaches
        /// the terminal that could move the cursor or reorder text, and an accepted answer
        /// always fits the form.
        #[test]
        fn no_form_writes_control_characters_and_every_accepted_answer_fits(
            message in hostile().prop_filter("a message", |m| !m.trim().is_empty()),
            fields in prop::collection::btree_map(hostile(), field(), 1..5),
            required in prop::collection::vec(any::<bool>(), 5),
            typed in prop::collection::vec(prop_oneof![hostile(), Just(String::new()), Just("1".to_string()), Just("2, 1".to_string()), Just("-".to_string()), Just("yes".to_string()), Just("3.5".to_string()), Just("7".to_string())], 0..30),
        ) {
            let names: Vec<&String> = fields.keys().collect();
            let required: Vec<&String> = names.iter().zip(&required).filter(|(_, r)| **r).map(|(n, _)| *n).collect();
            let form = json!({"type": "object", "properties": fields, "required": required});
            let Ok(question) = Question::new("toolu_1", &message, message.clone(), &form.to_string()) else {
                return Ok(());
            };
            let typed: String = typed.iter().map(|l| format!("{}\n", l.replace('\n', " "))).collect();
            let mut out = Vec::new();
            let answer = fill(&question, &mut typed.as_bytes(), &mut out);
            let shown = String::from_utf8(out).unwrap();
            for c in shown.chars() {
                let unsafe_char = (c.is_control() && c != '\n' && c != '\t')
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
                prop_assert!(!unsafe_char, "{c:?} reached the terminal: {shown:?}");
            }
            if let Answer::Accept(values) = answer {
                prop_assert!(values.keys().all(|k| fields.contains_key(k)));
                prop_assert!(question.check_answer(&Value::Object(values)).is_ok());
            }
        }
    }
}
