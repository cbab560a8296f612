//! `Lending`: decoding with `managedFields` borrowed from the text being decoded, instead of copied.
//!
//! serde_json reads a JSON value as its text (`RawValue`) two ways: `&'de RawValue` borrows the text, which only its
//! deserializers over a text or a byte slice (`from_str`, `from_slice`) can lend; `Box<RawValue>` copies it, and
//! works with every serde_json deserializer (a reader, a `serde_json::Value`). A `Deserialize` cannot ask which
//! deserializer drives it (serde has no such query; serde_json's raw-value protocol is private), so the decoders of
//! this crate, which decode text they hold, say so: [`Lending::decode`] runs a decode with lending on, and
//! [`ObjectMeta`](super::ObjectMeta) then reads `managedFields` as `&RawValue`. Where a list could not be borrowed
//! (an object type whose `Deserialize` reads its metadata through another deserializer, a `serde_json::Value`), the
//! decode runs again without lending, and that decoder lends no more: the value and the errors are always what a
//! decode without lending gives. Outside such a decode (`serde_json::from_reader`, `from_value`, a user's own
//! `from_str`), nothing is borrowed.

use std::cell::Cell;

/// What the decode running on this thread allows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing is borrowed (any deserializer).
    Off,
    /// The decode reads from a text it lends: `managedFields` is borrowed.
    On,
    /// A `managedFields` could not be borrowed: the decode's result is dropped and the decode runs again without.
    Refused,
}

thread_local! {
    static STATE: Cell<State> = const { Cell::new(State::Off) };
}

/// True when the decode running on this thread reads from a text it lends (see the module docs).
pub(crate) fn lends() -> bool {
    STATE.try_with(|s| s.get() == State::On).unwrap_or(false)
}

/// Tells the decode running on this thread that a value could not be borrowed.
pub(crate) fn refuse() {
    let _ = STATE.try_with(|s| s.set(State::Refused));
}

/// A decoder's lending: on until a decode could not borrow (see the module docs).
#[derive(Debug)]
pub(crate) struct Lending {
    on: bool,
}

impl Default for Lending {
    fn default() -> Self {
        Lending { on: true }
    }
}

impl Lending {
    /// Lends for the decodes run while the guard lives, when this decoder still lends (nothing is moved through a
    /// closure: the hot path pays two thread-local accesses). After a decode, [`Lent::refused`] says whether its result
    /// must be dropped and the decode run again with [`Lending::plain`].
    pub(crate) fn enter(&self) -> Lent {
        let state = if self.on { State::On } else { State::Off };
        Lent {
            outer: STATE.try_with(|s| s.replace(state)).ok(),
        }
    }

    /// Runs `decode` — serde_json decoding a text or a byte slice — with `managedFields` borrowed from it; `None`
    /// when a list could not be borrowed, whatever `decode` returned (then decode again with [`Lending::plain`]).
    pub(crate) fn run<T>(&self, decode: impl FnOnce() -> T) -> Option<T> {
        let lent = self.enter();
        let out = decode();
        (!lent.refused()).then_some(out)
    }

    /// Runs `decode` without lending, after a lent decode was refused. When that succeeds, the object type reads its
    /// metadata through a deserializer that cannot lend: this decoder lends no more.
    pub(crate) fn plain<T, E>(&mut self, decode: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.on = false;
        let out = {
            let _plain = self.enter();
            decode()
        };
        // A decode that fails without lending too fails for its own reasons: lending may go on.
        self.on = out.is_err();
        out
    }

    /// True while this decoder lends.
    #[cfg(test)]
    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// [`run`](Lending::run), then [`plain`](Lending::plain) when that gave `None`.
    pub(crate) fn decode<T, E>(&mut self, mut decode: impl FnMut() -> Result<T, E>) -> Result<T, E> {
        match self.run(&mut decode) {
            Some(out) => out,
            None => self.plain(decode),
        }
    }
}

/// Lending on (or off) for the decodes on this thread while it lives; the state before is put back when it is
/// dropped, also when a `Deserialize` panics.
pub(crate) struct Lent {
    /// `None` in a thread's destructors, where the state is gone (and nothing is borrowed).
    outer: Option<State>,
}

impl Lent {
    /// True when a list could not be borrowed since the guard was made: the decode's result is to be dropped.
    pub(crate) fn refused(&self) -> bool {
        STATE.try_with(|s| s.get() == State::Refused).unwrap_or(false)
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(outer) = self.outer {
            let _ = STATE.try_with(|s| s.set(outer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectMeta;
    use serde::Deserialize;

    const META: &str = r#"{"name":"a","managedFields":[{"manager":"helm","operation":"Update","apiVersion":"v1","time":"2024-05-06T07:08:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}],"labels":{"x":"y"}}"#;

    #[test]
    fn text_and_slices_lend_readers_and_values_do_not_and_all_read_alike() {
        let plain: ObjectMeta = serde_json::from_str(META).unwrap();
        assert!(plain.managed_fields.is_some());
        let value: serde_json::Value = serde_json::from_str(META).unwrap();
        type Decode<'a> = Box<dyn Fn() -> serde_json::Result<ObjectMeta> + 'a>;
        let lent: [(&str, Decode<'_>); 2] = [
            ("from_str", Box::new(|| serde_json::from_str(META))),
            ("from_slice", Box::new(|| serde_json::from_slice(META.as_bytes()))),
        ];
        for (name, decode) in lent {
            let mut lending = Lending::default();
            assert_eq!(lending.run(&decode).unwrap().unwrap(), plain, "{name}");
            assert_eq!(lending.decode(&decode).unwrap(), plain, "{name}");
            assert!(lending.on, "{name}: still lends");
        }
        let copied: [(&str, Decode<'_>); 3] = [
            ("from_reader", Box::new(|| serde_json::from_reader(META.as_bytes()))),
            ("from_value", Box::new(|| serde_json::from_value(value.clone()))),
            ("&Value", Box::new(|| ObjectMeta::deserialize(&value))),
        ];
        for (name, decode) in copied {
            // Not lent: run says so, and the plain decode gives the value; the decoder lends no more.
            let mut lending = Lending::default();
            assert!(lending.run(&decode).is_none(), "{name}");
            assert!(lending.on);
            assert_eq!(lending.decode(&decode).unwrap(), plain, "{name}");
            assert!(!lending.on, "{name}: lends no more");
            assert_eq!(lending.run(&decode).unwrap().unwrap(), plain, "{name}");
            // Outside a lending decode, every deserializer reads as before.
            assert_eq!(decode().unwrap(), plain, "{name}");
        }
    }

    #[test]
    fn a_decode_that_fails_lent_gives_the_plain_error_and_keeps_lending() {
        // Malformed inside the list: lending fails there, and the plain decode gives its own error.
        let bad = r#"{"name":"a","managedFields":[{"manager":"helm"},]}"#;
        let plain = serde_json::from_str::<ObjectMeta>(bad).unwrap_err().to_string();
        let mut lending = Lending::default();
        let e = lending.decode(|| serde_json::from_str::<ObjectMeta>(bad)).unwrap_err();
        assert_eq!(e.to_string(), plain);
        assert!(lending.on, "a bad text is not a reason to stop lending");
        // The state of an enclosing decode is put back, also after a panic.
        assert!(!lends());
        let _ = std::panic::catch_unwind(|| Lending::default().run(|| panic!("in a Deserialize")));
        assert!(!lends());
        Lending::default().run(|| {
            assert!(lends());
            let mut inner = Lending::default();
            let _ = inner.plain(|| {
                assert!(!lends());
                Ok::<(), ()>(())
            });
            assert!(lends(), "put back");
        });
    }
}
