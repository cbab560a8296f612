//! `Interner`: what repeats across the objects of one cache is held once.
//!
//! The objects of one informer's cache repeat most of their strings: label and annotation keys, namespaces,
//! `generateName`s, creation times written in the same second, whole label sets of the pods of one ReplicaSet, the
//! keys of ConfigMaps made from one template, the `managedFields` entries one controller writes on every object it
//! owns. Decoded on their own, each object holds a copy of each. Decoded through an interner, each distinct value is
//! held once per cache, as an `Arc<str>` every object that has it shares.
//!
//! **Scope.** An interner belongs to one cache: the informer's reflector creates it when its thread starts and
//! [enters](Interner::enter) it on that thread, where every list page and watch event of the cache is decoded.
//! While entered, the `Deserialize` implementations of this crate's object model ([`ObjectMeta`](super::ObjectMeta),
//! [`StringMap`](super::StringMap), [`ManagedFields`](super::ManagedFields)) decode straight into the shared form:
//! a value already held is found from the borrowed text being decoded, and nothing is allocated for it. Decoded
//! anywhere else (no interner entered), the same types decode into values of their own; what is decoded is the same
//! either way. Nothing is process-global: when the reflector's thread ends, the interner goes with it; objects
//! still alive keep the values they share (each is an `Arc`), and nothing else.
//!
//! **No lock.** Only the thread that entered an interner uses it (it lives in that thread's thread-local); the
//! objects it produced are read by handlers and listers on other threads, which only clone and drop `Arc`s.
//!
//! **Hashing.** The tables hash with a fast word hash keyed by a random seed per interner ([`Seeded`]). Before
//! hashing, what a cache decodes in turn is compared with what was found last: the keys of the string maps of objects
//! made from one template ([`intern_recent`]), the `managedFields` list one controller writes on each object it owns
//! ([`find_list`]).
//!
//! **Bounded.** A value the table holds alone (every object that had it is gone) is garbage: the table is swept of
//! those whenever it has doubled since the last sweep, so it never holds more than about twice the distinct values
//! alive in the cache (plus [`SWEEP_MIN`]). Values longer than [`MAX_LEN`] are never interned.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use super::managed_fields::{ManagedFieldsEntry, SameEntries};

/// Longest value interned, in bytes: longer ones are kept as values of their own (a `managedFields` set of a huge
/// object, a ConfigMap's data) — they seldom repeat, and hashing them costs.
pub(crate) const MAX_LEN: usize = 16 * 1024;

/// The table is never swept below this many values.
pub(crate) const SWEEP_MIN: usize = 4096;

/// Texts [`intern_recent`] remembers.
const RECENT: usize = 4;

/// The values one cache shares (see the module docs).
pub(crate) struct Interner {
    /// Every value interned and not yet swept. Invariant: no two equal values; each at most `MAX_LEN` bytes.
    strings: HashSet<Arc<str>, Seeded>,
    /// The text the last [`SharedText`] of each family and length was coded against (see [`shared_text`]).
    bases: HashMap<(Arc<str>, usize), Arc<str>, Seeded>,
    /// Lists of `managedFields` entries (see [`intern_list`]).
    entry_lists: HashSet<SameEntries, Seeded>,
    /// The JSON text of `managedFields` lists decoded more than once, and the list it decodes to (one of
    /// `entry_lists`): a list sent again byte for byte is found here without being decoded (see [`find_list`]).
    /// Invariant: each text at most `MAX_LEN` bytes.
    raw_lists: HashMap<Arc<str>, SameEntries, Seeded>,
    /// The entry of `raw_lists` [`find_list`] found last: compared before the table is hashed into (the objects
    /// of one controller, decoded in turn, send the same list).
    last_list: Option<(Arc<str>, SameEntries)>,
    /// The tables are swept once they hold this many values together: twice what the last sweep kept, at least
    /// `SWEEP_MIN`.
    sweep_at: usize,
    /// Sweeps so far.
    sweeps: usize,
    /// The last texts [`intern_recent`] returned, latest first: recognised before anything is written or hashed.
    /// Invariant: each is one of `strings`.
    recent: [Option<Arc<str>>; RECENT],
    /// Texts [`intern_recent`] found in `recent`.
    #[cfg(test)]
    recent_hits: usize,
}

thread_local! {
    /// The interner entered on this thread, if any (see [`Interner::enter`]).
    static CURRENT: RefCell<Option<Interner>> = const { RefCell::new(None) };
}

/// While alive, decodes on this thread share values through the interner it entered; dropping it drops the
/// interner (the values alive objects hold stay with them).
///
/// Not `Send`: it belongs to the thread that entered.
#[must_use = "the interner is left when the guard is dropped"]
pub(crate) struct InternScope {
    /// The interner that was entered before this one on the thread (put back on drop).
    outer: Option<Interner>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for InternScope {
    fn drop(&mut self) {
        let outer = self.outer.take();
        // `try_with`: during thread teardown the thread-local may be gone already.
        let _ = CURRENT.try_with(|c| {
            let mine = c.replace(outer);
            drop(mine);
        });
    }
}

impl std::fmt::Debug for InternScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InternScope").finish_non_exhaustive()
    }
}

/// The interner's hash: a multiply-rotate over 8 bytes at a time (std's SipHash cost a tenth of an informer's sync in
/// hashing the texts it interns), keyed by a random seed per interner, so that which values collide cannot be known
/// in advance from the outside (the table is also bounded, see the module docs).
#[derive(Clone)]
pub(crate) struct Seeded(u64);

impl Seeded {
    fn new() -> Self {
        Seeded(std::collections::hash_map::RandomState::new().hash_one(0x6b75_6265_u64) | 1)
    }
}

impl BuildHasher for Seeded {
    type Hasher = WordHasher;

    fn build_hasher(&self) -> WordHasher {
        WordHasher(self.0)
    }
}

/// The hasher of [`Seeded`].
pub(crate) struct WordHasher(u64);

const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

impl WordHasher {
    fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(MULTIPLIER).rotate_left(29);
    }
}

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        let mut w = [0; 8];
        w[..rest.len()].copy_from_slice(rest);
        // The length goes in with the last word, so that texts differing only by trailing zero bytes differ.
        self.word(u64::from_le_bytes(w) ^ ((bytes.len() as u64) << 56));
    }

    fn write_u8(&mut self, i: u8) {
        self.word(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.word(i as u64);
    }

    fn finish(&self) -> u64 {
        // A last mix, so that the low bits (which pick the bucket) depend on every word.
        let h = self.0 ^ (self.0 >> 32);
        h.wrapping_mul(MULTIPLIER) ^ (h >> 29)
    }
}

impl Interner {
    fn new() -> Self {
        let seed = Seeded::new();
        Interner {
            strings: HashSet::with_hasher(seed.clone()),
            bases: HashMap::with_hasher(seed.clone()),
            entry_lists: HashSet::with_hasher(seed.clone()),
            raw_lists: HashMap::with_hasher(seed),
            sweep_at: SWEEP_MIN,
            sweeps: 0,
            last_list: None,
            recent: Default::default(),
            #[cfg(test)]
            recent_hits: 0,
        }
    }

    /// Values in the tables.
    fn len(&self) -> usize {
        self.strings.len() + self.entry_lists.len() + self.bases.len() + self.raw_lists.len()
    }

    /// Enters a new, empty interner on this thread (a cache's reflector does this when its thread starts): until
    /// the returned guard drops, this crate's object types decoded on this thread share their repeated values
    /// through it. An interner entered before is put back when the guard drops.
    pub(crate) fn enter() -> InternScope {
        let outer = CURRENT.with(|c| c.replace(Some(Interner::new())));
        InternScope {
            outer,
            _not_send: std::marker::PhantomData,
        }
    }

    /// The shared value equal to `s`, interned now if it is new.
    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(found) = self.strings.get(s) {
            return found.clone();
        }
        if self.len() >= self.sweep_at {
            self.sweep();
        }
        let new: Arc<str> = Arc::from(s);
        self.strings.insert(new.clone());
        new
    }

    /// Drops the values no object holds any more, and sets the next sweep at twice what is left.
    fn sweep(&mut self) {
        // Forgotten, so that what only they hold is swept now.
        self.recent = Default::default();
        self.last_list = None;
        // A count of 1 is the table's own reference: nobody else can clone it (only this thread reads the table),
        // so it stays garbage. A count read as higher while another thread drops its reference is swept next time.
        // A base only this map holds (and the table) is dropped with its family's key.
        self.bases.retain(|_, base| Arc::strong_count(base) > 2);
        // A list is held by `entry_lists` and by each of its texts in `raw_lists`: garbage when nothing else holds it.
        let mut texts: HashMap<*const ManagedFieldsEntry, usize> = HashMap::new();
        for l in self.raw_lists.values() {
            *texts.entry(l.0.as_ptr()).or_default() += 1;
        }
        self.raw_lists
            .retain(|_, l| Arc::strong_count(&l.0) > 1 + texts.get(&l.0.as_ptr()).copied().unwrap_or(0));
        self.strings.retain(|s| Arc::strong_count(s) > 1);
        self.entry_lists.retain(|l| Arc::strong_count(&l.0) > 1);
        // Counting every table: a threshold from one table alone would sweep at each insert once the others hold
        // more than it (quadratic).
        self.sweep_at = (2 * self.len()).max(SWEEP_MIN);
        self.sweeps += 1;
        if self.strings.capacity() > 4 * self.sweep_at {
            self.strings.shrink_to(self.sweep_at);
        }
    }
}

/// `s` as an `Arc<str>`: the shared one when an interner is entered on this thread and `s` is short enough, else a
/// new one.
pub(crate) fn intern(s: &str) -> Arc<str> {
    if s.len() <= MAX_LEN
        && let Ok(Some(shared)) = CURRENT.try_with(|c| c.borrow_mut().as_mut().map(|i| i.intern(s)))
    {
        return shared;
    }
    Arc::from(s)
}

/// The shared text `is_it` accepts among the few this function returned last (found without writing or hashing it),
/// else the text `text` writes, interned. Outside a scope, `text`'s text as a new value.
///
/// For texts that recur one after the other and that `is_it` recognises from their parts at less cost than writing
/// and hashing them: the keys of the string maps of objects made from one template, decoded in turn. `is_it` must
/// accept only the text `text` would write.
pub(crate) fn intern_recent<'a>(is_it: impl Fn(&str) -> bool, text: impl FnOnce() -> &'a str) -> Arc<str> {
    let found = CURRENT.try_with(|c| c.borrow_mut().as_mut().and_then(|i| i.find_recent(is_it)));
    if let Ok(Some(found)) = found {
        return found;
    }
    let text = text();
    if text.len() <= MAX_LEN
        && let Ok(Some(shared)) = CURRENT.try_with(|c| {
            c.borrow_mut().as_mut().map(|i| {
                let shared = i.intern(text);
                i.recent.rotate_right(1);
                i.recent[0] = Some(shared.clone());
                shared
            })
        })
    {
        return shared;
    }
    Arc::from(text)
}

impl Interner {
    /// The text of `recent` that `is_it` accepts, moved to the front.
    fn find_recent(&mut self, is_it: impl Fn(&str) -> bool) -> Option<Arc<str>> {
        let at = self.recent.iter().position(|r| r.as_deref().is_some_and(&is_it))?;
        self.recent[..=at].rotate_right(1);
        #[cfg(test)]
        {
            self.recent_hits += 1;
        }
        self.recent[0].clone()
    }
}

/// `text` coded against a text of the same `family` (and length) decoded before: sharing all but the bytes between the
/// first and the last difference. Outside a scope, or when too much differs, `text` is whole (and interned).
///
/// This is for texts that recur with small, local differences — a controller's `managedFields` entry on each pod of
/// a ReplicaSet differs by the name of the pod's token volume, the kubelet's by the pod's IP — where interning whole
/// texts shares nothing. `family` is an interned value telling which texts are alike (the entry's manager,
/// operation, version and subresource).
pub(crate) fn shared_text(family: &Arc<str>, text: &str) -> SharedText {
    let coded = CURRENT
        .try_with(|c| c.borrow_mut().as_mut().map(|i| i.shared_text(family, text)))
        .ok()
        .flatten();
    coded.unwrap_or_else(|| SharedText::whole(Arc::from(text)))
}

impl Interner {
    fn shared_text(&mut self, family: &Arc<str>, text: &str) -> SharedText {
        if text.len() > MAX_LEN {
            return SharedText::whole(Arc::from(text));
        }
        if let Some(found) = self.strings.get(text) {
            return SharedText::whole(found.clone());
        }
        let key = (family.clone(), text.len());
        if let Some(base) = self.bases.get(&key)
            && let Some(coded) = SharedText::against(base, text)
        {
            return coded;
        }
        let whole = self.intern(text);
        self.bases.insert(key, whole.clone());
        SharedText::whole(whole)
    }
}

/// Step of the comparisons below: equal runs are compared this many bytes at a time (one `memcmp` each).
const RUN: usize = 32;

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + RUN <= n && a[i..i + RUN] == b[i..i + RUN] {
        i += RUN;
    }
    i + a[i..n].iter().zip(&b[i..n]).take_while(|(x, y)| x == y).count()
}

/// Length of the longest common suffix of `a` and `b`.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + RUN <= n && a[n - i - RUN..n - i] == b[n - i - RUN..n - i] {
        i += RUN;
    }
    i + a[..n - i]
        .iter()
        .rev()
        .zip(b[..n - i].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// A text held as a shared base with one run of bytes of its own: `base[..prefix] + middle + base[base.len() -
/// suffix..]` (see [`shared_text`]).
#[derive(Clone)]
pub(crate) struct SharedText {
    base: Arc<str>,
    /// Invariants: `prefix + suffix <= base.len()`; both fall on character boundaries of `base`.
    prefix: u32,
    suffix: u32,
    middle: Box<str>,
}

impl SharedText {
    /// `base` itself.
    pub(crate) fn whole(base: Arc<str>) -> SharedText {
        let prefix = base.len() as u32;
        SharedText {
            base,
            prefix,
            suffix: 0,
            middle: Box::default(),
        }
    }

    /// `text` coded against `base`, when at most a quarter of it differs.
    fn against(base: &Arc<str>, text: &str) -> Option<SharedText> {
        let (b, t) = (base.as_bytes(), text.as_bytes());
        let mut prefix = common_prefix(b, t);
        while !text.is_char_boundary(prefix) {
            prefix -= 1;
        }
        let room = b.len().min(t.len()) - prefix;
        let mut suffix = common_suffix(&b[b.len() - room..], &t[t.len() - room..]);
        while !text.is_char_boundary(t.len() - suffix) {
            suffix -= 1;
        }
        let middle = &text[prefix..text.len() - suffix];
        // Equal bytes end (and start) on the same character boundaries in both texts.
        (middle.len() <= text.len() / 4 && u32::try_from(b.len()).is_ok()).then(|| SharedText {
            base: base.clone(),
            prefix: prefix as u32,
            suffix: suffix as u32,
            middle: middle.into(),
        })
    }

    /// The text's three parts.
    fn parts(&self) -> [&str; 3] {
        let b = &*self.base;
        [
            &b[..self.prefix as usize],
            &self.middle,
            &b[b.len() - self.suffix as usize..],
        ]
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.prefix as usize + self.middle.len() + self.suffix as usize
    }

    /// The text: borrowed when it is its base, else put together.
    pub(crate) fn get(&self) -> Cow<'_, str> {
        match self.parts() {
            [whole, "", ""] => Cow::Borrowed(whole),
            parts => Cow::Owned(parts.concat()),
        }
    }

    /// True when the text is its base, with nothing of its own.
    pub(crate) fn is_whole(&self) -> bool {
        self.middle.is_empty() && self.suffix == 0 && self.prefix as usize == self.base.len()
    }

    /// True when both are the same base with the same run of their own (equal texts, found without reading the
    /// base).
    pub(crate) fn same_parts(&self, other: &SharedText) -> bool {
        Arc::ptr_eq(&self.base, &other.base)
            && (self.prefix, self.suffix) == (other.prefix, other.suffix)
            && self.middle == other.middle
    }

    /// Hashes what [`same_parts`](Self::same_parts) compares.
    pub(crate) fn hash_parts<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        std::ptr::hash(Arc::as_ptr(&self.base), h);
        (self.prefix, self.suffix, &*self.middle).hash(h);
    }

    /// The base this text is coded against (to tell whether two texts share one).
    #[cfg(test)]
    pub(crate) fn base(&self) -> &Arc<str> {
        &self.base
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .parts()
                .iter()
                .flat_map(|p| p.bytes())
                .eq(other.parts().iter().flat_map(|p| p.bytes()))
    }
}

impl Eq for SharedText {}

impl std::hash::Hash for SharedText {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        for p in self.parts() {
            h.write(p.as_bytes());
        }
        h.write_u8(0xff);
    }
}

/// The list of entries decoded before from exactly `text` (a `managedFields` list's JSON), when an interner is
/// entered on this thread and that text was decoded more than once in it.
pub(crate) fn find_list(text: &str) -> Option<SameEntries> {
    if text.len() > MAX_LEN {
        return None;
    }
    CURRENT
        .try_with(|c| c.borrow_mut().as_mut().and_then(|i| i.find_list(text)))
        .ok()
        .flatten()
}

impl Interner {
    fn find_list(&mut self, text: &str) -> Option<SameEntries> {
        if let Some((last, list)) = &self.last_list
            && **last == *text
        {
            return Some(list.clone());
        }
        let (last, list) = self.raw_lists.get_key_value(text)?;
        self.last_list = Some((last.clone(), list.clone()));
        Some(list.clone())
    }
}

/// `value`, or the equal list of entries shared before, when an interner is entered on this thread. `text`, the JSON
/// `value` was decoded from, is remembered for [`find_list`] when an equal list was decoded before: a list that
/// repeats is found from its text the next time; one that does not (an object's own) costs no copy of its text.
pub(crate) fn intern_list(value: SameEntries, text: Option<&str>) -> SameEntries {
    let shared = CURRENT.try_with(|c| {
        c.borrow_mut().as_mut().map(|i| {
            if let Some(found) = i.entry_lists.get(&value).cloned() {
                if let Some(text) = text.filter(|t| t.len() <= MAX_LEN && !i.raw_lists.contains_key(*t)) {
                    if i.len() >= i.sweep_at {
                        // Keeps `found`, held here.
                        i.sweep();
                    }
                    i.raw_lists.insert(text.into(), found.clone());
                }
                return found;
            }
            if i.len() >= i.sweep_at {
                i.sweep();
            }
            i.entry_lists.insert(value.clone());
            value.clone()
        })
    });
    match shared {
        Ok(Some(v)) => v,
        _ => value,
    }
}

#[cfg(test)]
pub(crate) fn raw_lists_len() -> usize {
    CURRENT.with(|c| c.borrow().as_ref().map_or(0, |i| i.raw_lists.len()))
}

/// True when an interner is entered on this thread.
#[cfg(test)]
pub(crate) fn active() -> bool {
    CURRENT.try_with(|c| c.borrow().is_some()).unwrap_or(false)
}

#[cfg(test)]
pub(crate) fn sweeps() -> usize {
    CURRENT.with(|c| c.borrow().as_ref().map_or(0, |i| i.sweeps))
}

#[cfg(test)]
pub(crate) fn recent_hits() -> usize {
    CURRENT.with(|c| c.borrow().as_ref().map_or(0, |i| i.recent_hits))
}

#[cfg(test)]
pub(crate) fn table_len() -> usize {
    CURRENT.with(|c| c.borrow().as_ref().map_or(0, |i| i.strings.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_are_shared_only_inside_a_scope() {
        let a = intern("team-07");
        let b = intern("team-07");
        assert!(!Arc::ptr_eq(&a, &b), "no interner entered: values of their own");
        assert!(!active());
        let scope = Interner::enter();
        assert!(active());
        let c = intern("team-07");
        let d = intern(&String::from("team-07"));
        assert!(Arc::ptr_eq(&c, &d));
        assert_eq!(&*c, "team-07");
        drop(scope);
        assert!(!active());
        assert_eq!(&*c, "team-07", "values outlive their interner");
        assert_eq!(Arc::strong_count(&c), 2, "the interner's own reference went with it");
    }

    #[test]
    fn scopes_nest_and_restore_the_outer_interner() {
        let _outer = Interner::enter();
        let a = intern("x");
        {
            let _inner = Interner::enter();
            let b = intern("x");
            assert!(!Arc::ptr_eq(&a, &b), "a new interner is empty");
        }
        assert!(Arc::ptr_eq(&a, &intern("x")), "the outer one is back");
    }

    #[test]
    fn long_values_are_not_interned() {
        let _scope = Interner::enter();
        let long = "x".repeat(MAX_LEN + 1);
        assert!(!Arc::ptr_eq(&intern(&long), &intern(&long)));
        assert_eq!(table_len(), 0);
    }

    #[test]
    fn the_table_is_swept_of_values_nobody_holds() {
        let _scope = Interner::enter();
        let kept: Vec<Arc<str>> = (0..100).map(|i| intern(&format!("kept-{i}"))).collect();
        // Values interned and dropped at once: garbage the sweeps must bound.
        for i in 0..10 * SWEEP_MIN {
            drop(intern(&format!("garbage-{i}")));
            assert!(table_len() <= 2 * (kept.len() + 1) + SWEEP_MIN, "{}", table_len());
        }
        for (i, k) in kept.iter().enumerate() {
            assert!(
                Arc::ptr_eq(k, &intern(&format!("kept-{i}"))),
                "values alive survive sweeps"
            );
        }
    }

    #[test]
    fn recent_texts_are_the_tables_and_swept_with_it() {
        let a = intern_recent(|t| t == "keys-a", || "keys-a");
        assert!(
            !Arc::ptr_eq(&a, &intern_recent(|t| t == "keys-a", || "keys-a")),
            "outside a scope: new values"
        );
        let _scope = Interner::enter();
        let a = intern_recent(|t| t == "keys-a", || "keys-a");
        assert_eq!(recent_hits(), 0);
        let again = intern_recent(|t| t == "keys-a", || unreachable!("found without writing it"));
        assert!(Arc::ptr_eq(&a, &again) && Arc::ptr_eq(&a, &intern("keys-a")));
        assert_eq!(recent_hits(), 1);
        // Pushed out by as many other texts: written again, and found in the table.
        let others: Vec<String> = (0..RECENT).map(|i| format!("keys-{i}")).collect();
        for o in &others {
            let _ = intern_recent(|t| t == o, || o);
        }
        let b = intern_recent(|t| t == "keys-a", || "keys-a");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(recent_hits(), 1);
        // What only the table and the recent texts hold is garbage to a sweep.
        let gone = Arc::downgrade(&a);
        drop((a, again, b));
        for i in 0..2 * SWEEP_MIN {
            drop(intern(&format!("garbage-{i}")));
        }
        assert!(sweeps() > 0 && gone.upgrade().is_none(), "swept");
    }

    #[test]
    fn lists_are_found_by_their_whole_text() {
        use crate::object::ObjectMeta;
        let list = |manager: &str| {
            format!(
                r#"[{{"manager":"{manager}","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{}}}}}}]"#
            )
        };
        let decode = |l: &str| {
            let meta: ObjectMeta = serde_json::from_str(&format!(r#"{{"name":"x","managedFields":{l}}}"#)).unwrap();
            meta.managed_fields.unwrap().to_json()
        };
        let _scope = Interner::enter();
        // Texts of one length, and one a prefix of the other: each decodes to its own list, in any order.
        let texts = [
            list("helm-a"),
            list("helm-b"),
            list("helm"),
            list("helm-a").replace("v1", "v2"),
        ];
        let want: Vec<_> = texts
            .iter()
            .map(|t| serde_json::from_str::<serde_json::Value>(t).unwrap())
            .collect();
        for order in [
            [0, 0, 1, 1, 2, 2, 3, 3],
            [0, 1, 0, 2, 3, 1, 3, 2],
            [3, 3, 0, 0, 1, 2, 1, 0],
        ] {
            for i in order {
                let got: serde_json::Value = serde_json::from_str(&decode(&texts[i])).unwrap();
                assert_eq!(got, want[i], "{}", texts[i]);
            }
        }
        assert_eq!(raw_lists_len(), texts.len(), "each found by its text");
    }

    #[test]
    fn texts_that_differ_locally_share_their_base() {
        let family = intern("kubelet");
        let a = r#"{"f:status":{"f:podIPs":{"k:{\"ip\":\"10.0.0.1\"}":{}}},"f:phase":{}}"#;
        let b = r#"{"f:status":{"f:podIPs":{"k:{\"ip\":\"10.0.0.2\"}":{}}},"f:phase":{}}"#;
        let c = r#"{"f:spec":{}}"#;
        let (x, y) = (shared_text(&family, a), shared_text(&family, b));
        assert!(
            !Arc::ptr_eq(x.base(), y.base()),
            "outside a scope, whole texts of their own"
        );
        let _scope = Interner::enter();
        let (sa, sb, sc) = (
            shared_text(&family, a),
            shared_text(&family, b),
            shared_text(&family, c),
        );
        assert_eq!((sa.get(), sb.get(), sc.get()), (a.into(), b.into(), c.into()));
        assert!(Arc::ptr_eq(sa.base(), sb.base()), "coded against the first");
        assert_eq!(&*sb.middle, "2");
        assert!(matches!(sa.get(), Cow::Borrowed(_)));
        assert!(sa != sb && sb == shared_text(&family, b) && sb == y);
        // Unicode: the differing run is cut on character boundaries.
        let (u, v) = ("{\"k\":\"\u{e9}t\u{e9}\"}", "{\"k\":\"\u{e8}t\u{e9}\"}");
        let (su, sv) = (shared_text(&family, u), shared_text(&family, v));
        assert_eq!((su.get(), sv.get()), (u.into(), v.into()));
        // Too different: a new base.
        let far = r#"{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{}}},"x":1}"#;
        assert!(!Arc::ptr_eq(shared_text(&family, far).base(), sa.base()));
    }

    #[test]
    fn common_runs_are_found_at_every_length() {
        for n in [0usize, 1, 31, 32, 33, 64, 100] {
            let a: Vec<u8> = (0..n as u8).collect();
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0xff;
                assert_eq!(common_prefix(&a, &b), at, "{n} {at}");
                assert_eq!(common_suffix(&a, &b), n - at - 1, "{n} {at}");
            }
            assert_eq!(common_prefix(&a, &a), n);
            assert_eq!(common_suffix(&a, &a[n / 2..]), n - n / 2);
        }
    }

    #[test]
    fn the_word_hash_tells_texts_apart() {
        let seed = Seeded::new();
        let h = |s: &str| seed.hash_one(s);
        assert_eq!(h("team-07"), h(&String::from("team-07")));
        let long = "x".repeat(100);
        let texts = ["", "a", "a\0", "team-07", "team-17", "12345678", "123456780", &long];
        let hashes: HashSet<u64> = texts.iter().map(|t| h(t)).collect();
        assert_eq!(hashes.len(), texts.len());
        assert_ne!(
            Seeded::new().hash_one("a"),
            Seeded::new().hash_one("a"),
            "a seed per interner"
        );
    }

    #[test]
    fn a_thread_has_its_own_interner() {
        let _scope = Interner::enter();
        let a = intern("ns");
        std::thread::spawn(move || {
            assert!(!active(), "not entered on this thread");
            assert!(!Arc::ptr_eq(&a, &intern("ns")));
        })
        .join()
        .unwrap();
    }
}
