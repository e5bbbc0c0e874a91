//! Values of a schema node, generated deterministically (seeded) for the equivalence checks:
//! what `self` can be in a request the schema admits, edge cases first — empty strings, lists
//! and maps, absent optional fields, duplicates, boundary lengths, unicode — and the literals
//! the rules compare with, so that their branches are taken.
//!
//! Sizes are bounded (list length, depth, total nodes), so generation always ends quickly.

use celcost_core::cel::eval::Val;
use celcost_core::cel::types::Type;
use celcost_core::schema::Schema;
use celcost_core::schema::decltype::{DeclKind, DeclType, escape};

/// Literals harvested from the rules (both the original and the rewrite), used as values.
#[derive(Clone, Debug, Default)]
pub struct Pools {
    pub strings: Vec<String>,
    pub ints: Vec<i64>,
    pub doubles: Vec<f64>,
    /// The field names the rules select (CEL-escaped). Fields no rule names are generated
    /// sparsely (required ones minimal, optional ones seldom); empty: every field is read.
    pub fields: Vec<String>,
}

/// How a case fills optional parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Required fields only, lists and maps as short as allowed, strings as short as allowed.
    Minimal,
    /// Every field, lists and maps as long as the generator goes.
    Full,
    /// Each optional part with some probability.
    Random,
}

/// Limits of one generated value.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest list or map.
    pub max_len: usize,
    /// Nodes in one value; beyond, the rest is generated minimal.
    pub max_nodes: usize,
    /// Deepest nesting; beyond, minimal.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_len: 5,
            max_nodes: 400,
            max_depth: 12,
        }
    }
}

/// The longest `minLength` generated: a rule on strings that must be longer is not checked.
const MAX_MIN_LENGTH: usize = 4096;

/// Why a node cannot be generated (a type the interpreter has no value for, or a bound the
/// generator does not reach).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

pub struct Generator<'a> {
    rng: fastrand::Rng,
    pools: &'a Pools,
    limits: Limits,
    nodes: usize,
    /// Probability (percent) that an optional field is present in `Random` mode.
    presence: u32,
}

const ALPHABET: &[char] = &[
    'a', 'b', 'z', 'A', 'Z', '0', '9', '-', '_', '.', '/', ':', '*', ' ', 'é', 'ß', '日', '🙂',
    '\n',
];

impl<'a> Generator<'a> {
    pub fn new(seed: u64, pools: &'a Pools, limits: Limits) -> Self {
        Generator {
            rng: fastrand::Rng::with_seed(seed),
            pools,
            limits,
            nodes: 0,
            presence: 50,
        }
    }

    /// One value of the node; `case` picks the mode (0 minimal, 1 full, then random).
    pub fn value(
        &mut self,
        case: usize,
        schema: Option<&Schema>,
        decl: &DeclType,
    ) -> Result<Val, Unsupported> {
        self.nodes = 0;
        self.presence = [20, 50, 80, 95][case % 4];
        let mode = match case {
            0 => Mode::Minimal,
            1 => Mode::Full,
            _ => Mode::Random,
        };
        self.node(schema, decl, mode, 0, &[])
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.u32(0..100) < percent
    }

    /// `keys`: fields of an object that count as read (the keys of the list map it is in,
    /// which decide what the list may hold).
    fn node(
        &mut self,
        schema: Option<&Schema>,
        decl: &DeclType,
        mut mode: Mode,
        depth: usize,
        keys: &[String],
    ) -> Result<Val, Unsupported> {
        celcost_core::budget::charge(1);
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes || depth > self.limits.max_depth {
            mode = Mode::Minimal;
        }
        if depth > self.limits.max_depth * 4 {
            return Err(Unsupported("schema nests too deeply".into()));
        }
        if let Some(s) = schema {
            if s.nullable && mode == Mode::Random && self.chance(3) {
                return Ok(Val::Null);
            }
            if !s.enum_values.is_empty() && matches!(decl.kind, DeclKind::Scalar) {
                let i = self.rng.usize(0..s.enum_values.len());
                if let Some(v) = json_scalar(&s.enum_values[i], &decl.cel) {
                    return Ok(v);
                }
            }
        }
        match &decl.kind {
            DeclKind::Scalar => self.scalar(schema, &decl.cel, mode),
            DeclKind::List(elem) => {
                let item_schema = schema.and_then(|s| s.items.as_deref());
                let item_keys: Vec<String> = schema
                    .filter(|s| s.x_list_type.as_deref() == Some("map"))
                    .map(|s| s.x_list_map_keys.iter().filter_map(|k| escape(k)).collect())
                    .unwrap_or_default();
                let n = self.length(
                    schema.and_then(|s| s.min_items),
                    schema.and_then(|s| s.max_items),
                    mode,
                )?;
                let mut items: Vec<Val> = Vec::with_capacity(n);
                for i in 0..n {
                    let v = if i > 0 && mode != Mode::Minimal && self.chance(35) {
                        // A duplicate, whole or in its scalar fields.
                        let j = self.rng.usize(0..i);
                        let fresh = self.node(item_schema, elem, mode, depth + 1, &item_keys)?;
                        if self.chance(50) {
                            items[j].clone()
                        } else {
                            merge_scalars(fresh, &items[j], &mut self.rng)
                        }
                    } else {
                        self.node(item_schema, elem, mode, depth + 1, &item_keys)?
                    };
                    items.push(v);
                }
                if let Some(s) = schema {
                    dedupe_list_type(s, &mut items);
                }
                Ok(Val::List(items))
            }
            DeclKind::Map(_, val) => {
                let val_schema = schema.and_then(|s| s.additional_properties_schema());
                let n = self.length(
                    schema.and_then(|s| s.min_properties),
                    schema.and_then(|s| s.max_properties),
                    mode,
                )?;
                let mut entries: Vec<(Val, Val)> = Vec::with_capacity(n);
                let mut tries = 0;
                while entries.len() < n && tries < n * 4 + 4 {
                    tries += 1;
                    let k = self.string(None, mode)?;
                    if entries
                        .iter()
                        .any(|(x, _)| matches!(x, Val::String(s) if *s == k))
                    {
                        continue;
                    }
                    let v = self.node(val_schema, val, mode, depth + 1, &[])?;
                    entries.push((Val::String(k), v));
                }
                Ok(Val::Map(entries))
            }
            DeclKind::Object(fields) => {
                let mut entries = Vec::with_capacity(fields.len());
                for (name, ft) in fields {
                    let prop = schema.and_then(|s| property(s, name));
                    let required = prop.is_some_and(|(pname, p)| {
                        p.default.is_some()
                            || schema.is_some_and(|s| s.required.iter().any(|r| r == pname))
                    });
                    let read = self.pools.fields.is_empty()
                        || self.pools.fields.iter().any(|f| f == name)
                        || keys.iter().any(|k| k == name);
                    let present = required
                        || match mode {
                            Mode::Minimal => false,
                            Mode::Full if read => true,
                            Mode::Random if read => self.chance(self.presence),
                            _ => self.chance(10),
                        };
                    if !present {
                        continue;
                    }
                    let child_mode = if read { mode } else { Mode::Minimal };
                    match self.node(prop.map(|(_, p)| p), ft, child_mode, depth + 1, &[]) {
                        Ok(v) => entries.push((Val::String(name.clone()), v)),
                        // An optional field of a type without values here stays absent.
                        Err(e) if required => return Err(e),
                        Err(_) => {}
                    }
                }
                Ok(Val::Map(entries))
            }
        }
    }

    fn length(
        &mut self,
        min: Option<i64>,
        max: Option<i64>,
        mode: Mode,
    ) -> Result<usize, Unsupported> {
        let min = min.unwrap_or(0).max(0) as usize;
        let cap = self.limits.max_len.max(min);
        if min > 16 {
            return Err(Unsupported(format!("at least {min} items")));
        }
        let max = max.map_or(cap, |m| (m.max(0) as usize).min(cap));
        if max < min {
            return Err(Unsupported("no length fits".into()));
        }
        Ok(match mode {
            Mode::Minimal => min,
            Mode::Full => max,
            Mode::Random => self.rng.usize(min..=max),
        })
    }

    fn scalar(
        &mut self,
        schema: Option<&Schema>,
        t: &Type,
        mode: Mode,
    ) -> Result<Val, Unsupported> {
        Ok(match t {
            Type::String => Val::String(self.string(schema, mode)?),
            Type::Int => Val::Int(self.int(schema, mode)),
            Type::Double => Val::Double(self.double(schema, mode)),
            Type::Bool => Val::Bool(mode != Mode::Minimal && self.chance(50)),
            Type::Bytes => {
                let n = if mode == Mode::Minimal {
                    0
                } else {
                    self.rng.usize(0..6)
                };
                Val::Bytes((0..n).map(|_| self.rng.u8(..)).collect())
            }
            Type::Dyn if schema.is_some_and(|s| s.x_int_or_string) => {
                if self.chance(50) {
                    Val::Int(self.int(None, mode))
                } else {
                    Val::String(self.string(schema, mode)?)
                }
            }
            other => return Err(Unsupported(format!("no values of type {other:?}"))),
        })
    }

    fn string(&mut self, schema: Option<&Schema>, mode: Mode) -> Result<String, Unsupported> {
        let min = schema.and_then(|s| s.min_length).unwrap_or(0).max(0) as usize;
        if min > MAX_MIN_LENGTH {
            return Err(Unsupported(format!("strings of at least {min} characters")));
        }
        let max = schema.and_then(|s| s.max_length).map(|m| m.max(0) as usize);
        let mut s = if mode == Mode::Minimal {
            String::new()
        } else {
            match self.rng.u32(0..100) {
                0..40 if !self.pools.strings.is_empty() => {
                    self.pools.strings[self.rng.usize(0..self.pools.strings.len())].clone()
                }
                40..65 if !self.pools.strings.is_empty() => {
                    let base =
                        self.pools.strings[self.rng.usize(0..self.pools.strings.len())].clone();
                    self.mutate(base)
                }
                65..72 => String::new(),
                72..80 => match max {
                    Some(m) if m <= 64 => "x".repeat(m),
                    _ => "long-".repeat(8),
                },
                _ => {
                    let n = self.rng.usize(1..8);
                    (0..n)
                        .map(|_| ALPHABET[self.rng.usize(0..ALPHABET.len())])
                        .collect()
                }
            }
        };
        if let Some(m) = max
            && s.chars().count() > m
        {
            s = s.chars().take(m).collect();
        }
        let n = s.chars().count();
        if n < min {
            s.extend(std::iter::repeat_n('a', min - n));
        }
        celcost_core::budget::charge(s.len() as u64 / 64);
        Ok(s)
    }

    fn mutate(&mut self, s: String) -> String {
        match self.rng.u32(0..6) {
            0 => format!("{s}x"),
            1 => format!("x{s}"),
            2 => s.to_uppercase(),
            3 => {
                let n = s.chars().count();
                s.chars().take(n.saturating_sub(1)).collect()
            }
            4 => format!("{s}\n"),
            _ => format!("{s}{s}"),
        }
    }

    fn int(&mut self, schema: Option<&Schema>, mode: Mode) -> i64 {
        let lo = schema.and_then(|s| s.minimum).map(|m| m.ceil() as i64);
        let hi = schema.and_then(|s| s.maximum).map(|m| m.floor() as i64);
        let v = if mode == Mode::Minimal {
            0
        } else {
            match self.rng.u32(0..100) {
                0..45 if !self.pools.ints.is_empty() => {
                    let base = self.pools.ints[self.rng.usize(0..self.pools.ints.len())];
                    base.saturating_add(self.rng.i64(-1..=1))
                }
                45..55 => lo.unwrap_or(-1),
                55..65 => hi.unwrap_or(i64::MAX),
                _ => self.rng.i64(-3..70),
            }
        };
        let v = lo.map_or(v, |l| v.max(l));
        hi.map_or(v, |h| v.min(h))
    }

    fn double(&mut self, schema: Option<&Schema>, mode: Mode) -> f64 {
        let lo = schema.and_then(|s| s.minimum);
        let hi = schema.and_then(|s| s.maximum);
        let v = if mode == Mode::Minimal {
            0.0
        } else {
            match self.rng.u32(0..100) {
                0..40 if !self.pools.doubles.is_empty() => {
                    self.pools.doubles[self.rng.usize(0..self.pools.doubles.len())]
                }
                40..60 if !self.pools.ints.is_empty() => {
                    self.pools.ints[self.rng.usize(0..self.pools.ints.len())] as f64
                }
                60..70 => 0.5,
                _ => self.rng.i64(-3..70) as f64 / 4.0,
            }
        };
        let v = lo.map_or(v, |l| v.max(l));
        hi.map_or(v, |h| v.min(h))
    }
}

/// The schema property whose CEL-escaped name is `escaped`.
fn property<'s>(s: &'s Schema, escaped: &str) -> Option<(&'s String, &'s Schema)> {
    s.properties
        .iter()
        .find(|(p, _)| escape(p).as_deref() == Some(escaped))
}

/// A scalar JSON value (an enum member) as a value of type `t`.
fn json_scalar(v: &serde_json::Value, t: &Type) -> Option<Val> {
    match (v, t) {
        (serde_json::Value::String(s), Type::String | Type::Dyn) => Some(Val::String(s.clone())),
        (serde_json::Value::Number(n), Type::Int | Type::Dyn) => n.as_i64().map(Val::Int),
        (serde_json::Value::Number(n), Type::Double) => n.as_f64().map(Val::Double),
        (serde_json::Value::Bool(b), Type::Bool) => Some(Val::Bool(*b)),
        _ => None,
    }
}

/// `fresh` with some of `from`'s scalar fields (so that keys collide while the rest differs).
fn merge_scalars(fresh: Val, from: &Val, rng: &mut fastrand::Rng) -> Val {
    match (fresh, from) {
        (Val::Map(mut entries), Val::Map(src)) => {
            for (k, v) in src {
                if matches!(v, Val::List(_) | Val::Map(_)) || !rng.bool() {
                    continue;
                }
                if let Some(e) = entries.iter_mut().find(|(k2, _)| k2 == k) {
                    e.1 = v.clone();
                } else {
                    entries.push((k.clone(), v.clone()));
                }
            }
            Val::Map(entries)
        }
        (fresh, _) => fresh,
    }
}

/// Removes what a `set` or `map` list type forbids (duplicates, by value or by key), so that
/// the value is one the API server admits.
fn dedupe_list_type(s: &Schema, items: &mut Vec<Val>) {
    match s.x_list_type.as_deref() {
        Some("set") => {
            let mut kept: Vec<Val> = Vec::new();
            for v in items.drain(..) {
                if !kept.iter().any(|k| k.same(&v)) {
                    kept.push(v);
                }
            }
            *items = kept;
        }
        Some("map") => {
            let keys: Vec<String> = s.x_list_map_keys.iter().filter_map(|k| escape(k)).collect();
            let key_of =
                |v: &Val| -> Vec<Option<Val>> { keys.iter().map(|k| v.get(k).cloned()).collect() };
            let mut kept: Vec<Val> = Vec::new();
            for v in items.drain(..) {
                let kv = key_of(&v);
                if !kept.iter().any(|k| same_key(&key_of(k), &kv)) {
                    kept.push(v);
                }
            }
            *items = kept;
        }
        _ => {}
    }
}

/// Whether two key tuples are equal.
pub fn same_key(a: &[Option<Val>], b: &[Option<Val>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => x.same(y),
            (None, None) => true,
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use celcost_core::cel::minor::NEWEST_MINOR;
    use celcost_core::schema::decltype::schema_decl_type;

    #[test]
    fn values_follow_the_schema_and_are_deterministic() {
        let schema = Schema::from_json(
            &serde_json::json!({
                "type": "array", "maxItems": 4,
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string", "maxLength": 3},
                    "port": {"type": "integer", "minimum": 1, "maximum": 10},
                    "kind": {"type": "string", "enum": ["A", "B"]}
                }}
            }),
            "x",
        )
        .expect("schema");
        let decl = schema_decl_type(&schema, false, NEWEST_MINOR, "selfType").expect("type");
        let pools = Pools {
            strings: vec!["abcd".into()],
            ints: vec![5],
            ..Pools::default()
        };
        let gen_all = || {
            let mut g = Generator::new(7, &pools, Limits::default());
            (0..50)
                .map(|i| g.value(i, Some(&schema), &decl).expect("generates"))
                .collect::<Vec<_>>()
        };
        let a = gen_all();
        assert_eq!(a, gen_all());
        assert_eq!(a[0], Val::List(vec![]));
        let mut dup = false;
        for v in &a {
            let Val::List(items) = v else { panic!() };
            assert!(items.len() <= 4);
            for it in items {
                let Some(Val::String(n)) = it.get("name") else {
                    panic!("name is required")
                };
                assert!(n.chars().count() <= 3);
                if let Some(Val::Int(p)) = it.get("port") {
                    assert!((1..=10).contains(p));
                }
                if let Some(k) = it.get("kind") {
                    assert!(matches!(k, Val::String(s) if s == "A" || s == "B"));
                }
            }
            dup |= items
                .iter()
                .enumerate()
                .any(|(i, x)| items[..i].iter().any(|y| y.get("name") == x.get("name")));
        }
        assert!(dup, "some lists have duplicate names");
    }
}
