//! `--set`, `--set-string`, `--set-json` and `--set-file` parsing with the rules and messages of
//! Helm's `pkg/strvals`: `a.b=c` paths, `a[0]` list indexes (at most 65536), `{x,y}` lists,
//! `\` escapes, typed values (`true`, `false`, `null`, int64 without leading zeros), at most 30
//! nested names, and Go's panic texts where Helm's type assertions fail on existing values.

use serde_json::{Map, Value};

use crate::util::go_quote;

/// Largest list index `a[i]=` accepts.
pub const MAX_INDEX: i64 = 65536;
/// Deepest `a.b.c` nesting accepted.
pub const MAX_NESTED_NAME_LEVEL: usize = 30;

/// How a value's text becomes a value.
pub enum Reader<'a> {
    /// `--set`: typed (`true`, `null`, int64...).
    Typed,
    /// `--set-string`: always a string.
    String,
    /// `--set-json`: the text after `=` is one JSON value.
    Json,
    /// `--set-file`: the text names a file whose content is the (string) value.
    File(&'a dyn Fn(&str) -> Result<Value, String>),
    /// `--set-literal`: no escapes, no `,` separator; the value is the rest of the text.
    Literal,
}

/// Parses `s` into `dest` (Helm's `ParseInto`, `ParseIntoString`, `ParseJSON`,
/// `ParseIntoFile`, chosen by `reader`).
pub fn parse_into(
    s: &str,
    dest: &mut Map<String, Value>,
    reader: Reader<'_>,
) -> Result<(), String> {
    let mut p = Parser {
        chars: s.chars().collect(),
        pos: 0,
        reader,
    };
    loop {
        match p.key(dest, 0) {
            Ok(()) => continue,
            Err(Stop::Eof) => return Ok(()),
            Err(Stop::Err(e)) => return Err(e),
        }
    }
}

/// A parse step's failure: the end of input (which ends parsing successfully where Helm's
/// `io.EOF` does) or an error message.
enum Stop {
    Eof,
    Err(String),
}

impl From<String> for Stop {
    fn from(s: String) -> Self {
        Stop::Err(s)
    }
}

/// Go's type name of a decoded value, for the interface-conversion panic texts.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn conversion_panic(found: &Value, want: &str) -> Stop {
    Stop::Err(format!(
        "unable to parse key: interface conversion: interface {{}} is {}, not {want}",
        go_type(found)
    ))
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    reader: Reader<'a>,
}

impl Parser<'_> {
    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    /// Runes up to one of `stop` (consumed), with `\x` giving `x`; `Eof` at the end of input
    /// along with what was read.
    fn runes_until(&mut self, stop: &[char]) -> (String, Option<char>) {
        let literal = matches!(self.reader, Reader::Literal);
        let mut v = String::new();
        loop {
            match self.read() {
                None => return (v, None),
                Some(c) if stop.contains(&c) => return (v, Some(c)),
                Some('\\') if !literal => match self.read() {
                    None => return (v, None),
                    Some(n) => v.push(n),
                },
                Some(c) => v.push(c),
            }
        }
    }

    fn typed(&self, rs: &str) -> Result<Value, String> {
        match &self.reader {
            Reader::Typed => Ok(typed_val(rs)),
            Reader::String | Reader::Json | Reader::Literal => Ok(Value::String(rs.to_string())),
            Reader::File(read) => read(rs),
        }
    }

    fn key(&mut self, data: &mut Map<String, Value>, mut level: usize) -> Result<(), Stop> {
        let literal = matches!(self.reader, Reader::Literal);
        let stop: &[char] = if literal {
            &['=', '[', '.']
        } else {
            &['=', '[', ',', '.']
        };
        let (k, last) = self.runes_until(stop);
        match last {
            None => {
                if k.is_empty() {
                    return Err(Stop::Eof);
                }
                Err(format!("key {} has no value", go_quote(&k)).into())
            }
            Some('[') => {
                let i = self.key_index()?;
                let list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Value::Array(l)) => l.clone(),
                    Some(other) => return Err(conversion_panic(other, "[]interface {}")),
                };
                let (list, result) = self.list_item(list, i, level);
                set(data, &k, list.map_or(Value::Null, Value::Array));
                result
            }
            Some('=') if literal => {
                let (rest, _) = self.runes_until(&[]);
                set(data, &k, Value::String(rest));
                Ok(())
            }
            Some('=') => {
                if matches!(self.reader, Reader::Json) {
                    return self.json_value(|v| {
                        set(data, &k, v);
                        Ok(())
                    });
                }
                match self.val_list() {
                    Ok(vl) => {
                        set(data, &k, Value::Array(vl));
                        Ok(())
                    }
                    Err(ListErr::Eof) => {
                        set(data, &k, Value::String(String::new()));
                        Err(Stop::Eof)
                    }
                    Err(ListErr::NotList) => {
                        let (rs, _) = self.runes_until(&[',']);
                        match self.typed(&rs) {
                            Ok(v) => {
                                set(data, &k, v);
                                Ok(())
                            }
                            Err(e) => {
                                set(data, &k, Value::Null);
                                Err(e.into())
                            }
                        }
                    }
                    Err(ListErr::Err(e)) => Err(e.into()),
                }
            }
            Some(',') => {
                set(data, &k, Value::String(String::new()));
                Err(format!("key {} has no value (cannot end with ,)", go_quote(&k)).into())
            }
            _ => {
                level += 1;
                if level > MAX_NESTED_NAME_LEVEL {
                    return Err(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )
                    .into());
                }
                let existed = data.contains_key(&k);
                let mut inner = match data.get_mut(&k) {
                    None => Map::new(),
                    Some(Value::Object(m)) => std::mem::take(m),
                    Some(other) => return Err(conversion_panic(other, "map[string]interface {}")),
                };
                let e = self.key(&mut inner, level);
                let empty = inner.is_empty();
                // Go mutates the existing map in place; put it back, or store a new non-empty one.
                if existed || !empty {
                    set(data, &k, Value::Object(inner));
                }
                if e.is_ok() && empty {
                    return Err(format!("key map {} has no value", go_quote(&k)).into());
                }
                e
            }
        }
    }

    /// `--set-json`'s value: empty (up to `,` or the end) is null, else one JSON value.
    fn json_value(&mut self, store: impl FnOnce(Value) -> Result<(), Stop>) -> Result<(), Stop> {
        if self.empty_val() {
            return store(Value::Null);
        }
        let rest: String = self.chars[self.pos..].iter().collect();
        let mut stream = serde_json::Deserializer::from_str(&rest).into_iter::<Value>();
        let v = match stream.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(e.to_string().into()),
            None => return Err("unexpected end of JSON input".to_string().into()),
        };
        let consumed = rest[..stream.byte_offset()].chars().count();
        self.pos += consumed;
        store(crate::yaml::floats(v))?;
        self.empty_val();
        Ok(())
    }

    fn empty_val(&mut self) -> bool {
        loop {
            match self.read() {
                None | Some(',') => return true,
                Some(c) if c.is_whitespace() => continue,
                Some(_) => {
                    self.unread();
                    return false;
                }
            }
        }
    }

    fn key_index(&mut self) -> Result<i64, Stop> {
        let (v, last) = self.runes_until(&[']']);
        if last.is_none() {
            return Err(Stop::Err("error parsing index: EOF".into()));
        }
        atoi(&v).map_err(|e| Stop::Err(format!("error parsing index: {e}")))
    }

    /// Helm's `listItem`: returns the list to store (None for Go's nil) and the outcome.
    fn list_item(
        &mut self,
        mut list: Vec<Value>,
        i: i64,
        level: usize,
    ) -> (Option<Vec<Value>>, Result<(), Stop>) {
        if i < 0 {
            return (
                Some(list),
                Err(format!("negative {i} index not allowed").into()),
            );
        }
        let (k, last) = self.runes_until(&['[', '.', '=']);
        if !k.is_empty() {
            return (
                Some(list),
                Err(format!("unexpected data at end of array index: {}", go_quote(&k)).into()),
            );
        }
        match last {
            None => (Some(list), Err(Stop::Eof)),
            Some('=') if matches!(self.reader, Reader::Literal) => {
                let (rest, _) = self.runes_until(&[]);
                let r = set_index(&mut list, i, Value::String(rest)).map_err(Stop::Err);
                (Some(list), r)
            }
            Some('=') => {
                if matches!(self.reader, Reader::Json) {
                    let mut stored = None;
                    let r = self.json_value(|v| {
                        stored = Some(v);
                        Ok(())
                    });
                    if let Some(v) = stored
                        && let Err(e) = set_index(&mut list, i, v)
                    {
                        return (Some(list), Err(e.into()));
                    }
                    return (Some(list), r);
                }
                let v = match self.val_list() {
                    Ok(vl) => Value::Array(vl),
                    Err(ListErr::Eof) => Value::String(String::new()),
                    Err(ListErr::NotList) => {
                        let (rs, _) = self.runes_until(&[',']);
                        match self.typed(&rs) {
                            Ok(v) => v,
                            Err(e) => return (Some(list), Err(e.into())),
                        }
                    }
                    Err(ListErr::Err(e)) => return (Some(list), Err(e.into())),
                };
                let r = set_index(&mut list, i, v).map_err(Stop::Err);
                (Some(list), r)
            }
            Some('[') => {
                let next = match self.key_index() {
                    Ok(n) => n,
                    Err(e) => return (Some(list), Err(e)),
                };
                let current = match list.get(i as usize) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(l)) => l.clone(),
                    Some(other) => {
                        let e = conversion_panic(other, "[]interface {}");
                        return (Some(list), Err(e));
                    }
                };
                let (inner, r) = self.list_item(current, next, level);
                if let Err(e) = r {
                    return (Some(list), Err(e));
                }
                let r = set_index(&mut list, i, inner.map_or(Value::Null, Value::Array))
                    .map_err(Stop::Err);
                (Some(list), r)
            }
            _ => {
                let mut inner = match list.get_mut(i as usize) {
                    Some(Value::Object(m)) => std::mem::take(m),
                    _ => Map::new(),
                };
                let r = self.key(&mut inner, level);
                if let Err(e) = r {
                    if let Some(slot) = list.get_mut(i as usize) {
                        *slot = Value::Object(inner);
                    }
                    return (Some(list), Err(e));
                }
                let r = set_index(&mut list, i, Value::Object(inner)).map_err(Stop::Err);
                (Some(list), r)
            }
        }
    }

    fn val_list(&mut self) -> Result<Vec<Value>, ListErr> {
        match self.read() {
            None => return Err(ListErr::Eof),
            Some('{') => {}
            Some(_) => {
                self.unread();
                return Err(ListErr::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last) = self.runes_until(&[',', '}']);
            match last {
                None => return Err(ListErr::Err("list must terminate with '}'".into())),
                Some('}') => {
                    if let Some(c) = self.read()
                        && c != ','
                    {
                        self.unread();
                    }
                    list.push(self.typed(&rs).map_err(ListErr::Err)?);
                    return Ok(list);
                }
                _ => list.push(self.typed(&rs).map_err(ListErr::Err)?),
            }
        }
    }
}

enum ListErr {
    Eof,
    NotList,
    Err(String),
}

fn set(data: &mut Map<String, Value>, key: &str, val: Value) {
    if key.is_empty() {
        return;
    }
    data.insert(key.to_string(), val);
}

fn set_index(list: &mut Vec<Value>, index: i64, val: Value) -> Result<(), String> {
    if index < 0 {
        return Err(format!("negative {index} index not allowed"));
    }
    if index > MAX_INDEX {
        return Err(format!(
            "index of {index} is greater than maximum supported index of {MAX_INDEX}"
        ));
    }
    let index = index as usize;
    if list.len() <= index {
        list.resize(index + 1, Value::Null);
    }
    list[index] = val;
    Ok(())
}

/// Go's `strconv.Atoi` with its error texts.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// Helm's `typedVal` for `--set`.
fn typed_val(val: &str) -> Value {
    if val.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if val.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if val.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    if val == "0" {
        return Value::from(0i64);
    }
    if !val.is_empty() && !val.starts_with('0') {
        let digits = val.strip_prefix(['+', '-']).unwrap_or(val);
        if !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && let Ok(i) = val.parse::<i64>()
        {
            return Value::from(i);
        }
    }
    Value::String(val.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set_(s: &str) -> Result<Value, String> {
        let mut m = Map::new();
        parse_into(s, &mut m, Reader::Typed)?;
        Ok(Value::Object(m))
    }

    #[test]
    fn typed_values_and_paths() {
        assert_eq!(
            set_("a.b=1,c=true,d=null,e=0,f=012,g=x\\,y").ok(),
            Some(json!({"a": {"b": 1}, "c": true, "d": null, "e": 0, "f": "012", "g": "x,y"}))
        );
        assert_eq!(set_("a[1]=x").ok(), Some(json!({"a": [null, "x"]})));
        assert_eq!(set_("a={x,y}").ok(), Some(json!({"a": ["x", "y"]})));
        assert_eq!(set_("a[0].b=1").ok(), Some(json!({"a": [{"b": 1}]})));
        assert_eq!(set_("a=").ok(), Some(json!({"a": ""})));
    }

    #[test]
    fn errors() {
        assert_eq!(set_("a").err(), Some("key \"a\" has no value".into()));
        assert_eq!(
            set_("a,b=1").err(),
            Some("key \"a\" has no value (cannot end with ,)".into())
        );
        assert_eq!(
            set_("a.=1").err(),
            Some("key map \"a\" has no value".into())
        );
        assert_eq!(
            set_("a[x]=1").err(),
            Some("error parsing index: strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            set_("a[70000]=1").err(),
            Some("index of 70000 is greater than maximum supported index of 65536".into())
        );
        assert_eq!(
            set_("a={x,y").err(),
            Some("list must terminate with '}'".into())
        );
        assert_eq!(
            set_("a=1,a.b=2").err(),
            Some("unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}".into())
        );
        let deep = (0..32)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(".")
            + "=1";
        assert_eq!(
            set_(&deep).err(),
            Some(
                "value name nested level is greater than maximum supported nested level of 30"
                    .into()
            )
        );
    }

    #[test]
    fn json_values() {
        let mut m = Map::new();
        parse_into("a={\"b\":[1,2]},c=", &mut m, Reader::Json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Value::Object(m), json!({"a": {"b": [1.0, 2.0]}, "c": null}));
    }
}
