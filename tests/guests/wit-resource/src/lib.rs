//! A function component whose interface uses a resource (`own<counter>`, `borrow<counter>`),
//! the one kind of WIT value that has no JSON form: a handle lives only as long as its
//! instance, and toolhost makes a fresh instance per call. Beside it are functions with plain
//! types, so a test can check what the host does with a component of which only some functions
//! can become tools (skip the others, and say so; not refuse the whole component).

wit_bindgen::generate!({
    inline: r#"
        /// A component with a resource among plain functions.
        package test:handles@0.1.0;

        /// A counter, as a resource.
        interface counters {
            /// A counter that starts at a value and counts up.
            resource counter {
                /// A counter at `start`.
                constructor(start: u32);
                /// Adds one and returns the new value.
                increment: func() -> u32;
            }

            /// A new counter at `start` (returns an owned handle).
            make-counter: func(start: u32) -> counter;

            /// The counter's value plus `n`, without changing it (takes a borrowed handle).
            peek-plus: func(c: borrow<counter>, n: u32) -> u32;

            /// `n` + 1: a function of this interface with plain types only.
            plain-increment: func(n: u32) -> u32;
        }

        world resource-user {
            /// Returns "plain": a top-level function with plain types only.
            export plain: func() -> string;

            export counters;
        }
    "#,
});

use exports::test::handles::counters::{self, CounterBorrow};
use std::cell::Cell;

struct Component;

/// The resource's representation.
struct Counter(Cell<u32>);

impl Guest for Component {
    fn plain() -> String {
        "plain".into()
    }
}

impl counters::Guest for Component {
    type Counter = Counter;

    fn make_counter(start: u32) -> counters::Counter {
        counters::Counter::new(Counter(Cell::new(start)))
    }

    fn peek_plus(c: CounterBorrow<'_>, n: u32) -> u32 {
        c.get::<Counter>().0.get().wrapping_add(n)
    }

    fn plain_increment(n: u32) -> u32 {
        n.wrapping_add(1)
    }
}

impl counters::GuestCounter for Counter {
    fn new(start: u32) -> Self {
        Counter(Cell::new(start))
    }

    fn increment(&self) -> u32 {
        self.0.set(self.0.get().wrapping_add(1));
        self.0.get()
    }
}

export!(Component);
