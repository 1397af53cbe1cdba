//! A function component (world `test:functions/functions`, in `wit/functions.wit`): plain
//! functions at the top level and in two exported interfaces instead of toolhost's
//! `toolhost:tool/tool`. Together they use every component-model value type in parameters and
//! results, so the host's WIT-to-JSON-Schema mapping and its value conversions can be tested
//! both ways. Every function is deterministic; the WIT's doc comments say exactly what each
//! returns.

mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "functions",
    });

    use super::Functions;
    export!(Functions);
}

use bindings::exports::test::functions::kinds::{
    self, Address, Color, Permissions, Person, Pet, Point, Shape, Species,
};
use bindings::exports::test::functions::other;

struct Functions;

impl bindings::Guest for Functions {
    fn echo(text: String) -> String {
        text
    }

    fn add(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }

    fn divide(a: f64, b: f64) -> Result<f64, String> {
        if b == 0.0 { Err("division by zero".into()) } else { Ok(a / b) }
    }

    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))
    }

    fn write_file(path: String, contents: String) -> Result<u64, String> {
        match std::fs::write(&path, contents.as_bytes()) {
            Ok(()) => Ok(contents.len() as u64),
            Err(e) => Err(format!("{path}: {e}")),
        }
    }

    fn get_env(key: String) -> Option<String> {
        std::env::var(key).ok()
    }

    fn fail() -> Result<String, String> {
        Err("this function always fails".into())
    }

    fn boom() -> String {
        panic!("boom: this function always panics")
    }

    fn nothing() {}
}

impl kinds::Guest for Functions {
    fn roundtrip_record(p: Person) -> Person {
        p
    }

    fn greet(p: Person) -> String {
        let pets = if p.pets.is_empty() {
            "no pets".to_string()
        } else {
            let list: Vec<String> =
                p.pets.iter().map(|pet| format!("{} ({})", pet.name, species_name(pet.species))).collect();
            format!("{} pet(s): {}", p.pets.len(), list.join(", "))
        };
        let email = p.email.map(|e| format!("; email {e}")).unwrap_or_default();
        format!("{} ({}) from {}, {pets}{email}", p.name, p.age, p.address.city)
    }

    fn make_person(name: String, age: u8) -> Person {
        Person {
            name,
            age,
            email: None,
            address: Address { street: "1 Main St".into(), city: "Springfield".into(), zip: None },
            pets: vec![Pet { name: "Tom".into(), species: Species::Cat }],
        }
    }

    fn next_color(c: Color) -> Color {
        match c {
            Color::Red => Color::Green,
            Color::Green => Color::Blue,
            Color::Blue => Color::Red,
        }
    }

    fn describe_shape(s: Shape) -> String {
        match s {
            Shape::Circle(r) => format!("circle r={r}"),
            Shape::Rectangle((w, h)) => format!("rectangle {w}x{h}"),
            Shape::Polygon(points) => format!("polygon of {} points", points.len()),
            Shape::Dot => "dot".into(),
        }
    }

    fn scale_shape(s: Shape, factor: f64) -> Shape {
        match s {
            Shape::Circle(r) => Shape::Circle(r * factor),
            Shape::Rectangle((w, h)) => Shape::Rectangle((w * factor, h * factor)),
            Shape::Polygon(points) => {
                Shape::Polygon(points.into_iter().map(|p| Point { x: p.x * factor, y: p.y * factor }).collect())
            }
            Shape::Dot => Shape::Dot,
        }
    }

    fn echo_permissions(p: Permissions) -> Permissions {
        p
    }

    fn describe_permissions(p: Permissions) -> String {
        // `bits()`: wit-bindgen without its `bitflags` feature has no `contains`.
        let bit = |flag: Permissions, c: char| if p.bits() & flag.bits() != 0 { c } else { '-' };
        [bit(Permissions::READ, 'r'), bit(Permissions::WRITE, 'w'), bit(Permissions::EXECUTE, 'x')]
            .into_iter()
            .collect()
    }

    fn swap(pair: (String, u32)) -> (u32, String) {
        (pair.1, pair.0)
    }

    #[allow(clippy::too_many_arguments, reason = "the signature is the WIT's, one parameter per integer type")]
    fn ints(a: i8, b: i16, c: i32, d: i64, e: u8, f: u16, g: u32, h: u64) -> (i8, i16, i32, i64, u8, u16, u32, u64) {
        (a, b, c, d, e, f, g, h)
    }

    fn floats(a: f32, b: f64) -> (f32, f64) {
        (a, b)
    }

    fn char_info(c: char) -> (char, u32) {
        (c, u32::from(c))
    }

    fn negate(b: bool) -> bool {
        !b
    }

    fn reverse_bytes(mut data: Vec<u8>) -> Vec<u8> {
        data.reverse();
        data
    }

    fn sort_words(mut words: Vec<String>) -> Vec<String> {
        words.sort();
        words.dedup();
        words
    }

    fn count_chars(text: String) -> Vec<(char, u32)> {
        let mut counts: Vec<(char, u32)> = Vec::new();
        for c in text.chars() {
            match counts.iter_mut().find(|(seen, _)| *seen == c) {
                Some((_, n)) => *n += 1,
                None => counts.push((c, 1)),
            }
        }
        counts
    }

    fn echo_nested_option(v: Option<Option<String>>) -> Option<Option<String>> {
        v
    }

    fn describe_nested_option(v: Option<Option<String>>) -> String {
        match v {
            None => "none".into(),
            Some(None) => "some(none)".into(),
            Some(Some(text)) => format!("some(some({text}))"),
        }
    }

    fn find_pet(p: Person, name: String) -> Option<Pet> {
        p.pets.into_iter().find(|pet| pet.name == name)
    }

    fn check(ok: bool) -> Result<(), ()> {
        if ok { Ok(()) } else { Err(()) }
    }

    fn validate_name(name: String) -> Result<(), String> {
        if name.is_empty() { Err("name is empty".into()) } else { Ok(()) }
    }

    fn parse_number(text: String) -> Result<u32, ()> {
        text.parse().map_err(|_| ())
    }
}

impl other::Guest for Functions {
    fn echo(text: String) -> String {
        text.chars().rev().collect()
    }
}

fn species_name(s: Species) -> &'static str {
    match s {
        Species::Cat => "cat",
        Species::Dog => "dog",
        Species::Fish => "fish",
    }
}
