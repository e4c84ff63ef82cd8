//! Parsing and formatting of one PMI-1 line: `cmd=<name> key=value ...`.

use super::PmiError;

/// Longest line accepted, newline included. Hydra's limits (key 64, value
/// 1024, kvsname 256) make the longest legal `put` about 1.4 KB; an abort
/// message may be longer, so leave generous room.
pub const MAX_LINE: usize = 4096;

/// One parsed line: the command name and its fields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub cmd: String,
    pub fields: Vec<(String, String)>,
}

impl Line {
    /// A line with no fields yet.
    pub fn new(cmd: &str) -> Self {
        Self {
            cmd: cmd.to_string(),
            fields: Vec::new(),
        }
    }

    /// Appends a field (builder style).
    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    /// The first value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or an error naming the missing field.
    pub fn require(&self, key: &'static str) -> Result<&str, PmiError> {
        self.get(key).ok_or_else(|| PmiError::MissingField {
            cmd: self.cmd.clone(),
            field: key,
        })
    }

    /// The value of `key` as an integer.
    pub fn require_i32(&self, key: &'static str) -> Result<i32, PmiError> {
        let v = self.require(key)?;
        v.trim().parse().map_err(|_| PmiError::BadNumber {
            field: key,
            value: v.to_string(),
        })
    }

    /// The wire form, ending in `\n`.
    pub fn format(&self) -> String {
        let mut s = String::with_capacity(16 + self.fields.len() * 16);
        s.push_str("cmd=");
        s.push_str(&self.cmd);
        for (k, v) in &self.fields {
            s.push(' ');
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s.push('\n');
        s
    }
}

/// Parses one line (with or without its trailing newline). Never panics.
///
/// Fields are split on spaces and at the first `=`. A word without `=`
/// continues the previous value (joined by one space), so that free-text
/// fields such as an abort message survive; Hydra would cut them short.
pub fn parse_line(bytes: &[u8]) -> Result<Line, PmiError> {
    if bytes.len() > MAX_LINE {
        return Err(PmiError::LineTooLong {
            len: bytes.len(),
            max: MAX_LINE,
        });
    }
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|_| PmiError::NotUtf8)?;
    let mut words = text.split([' ', '\t']).filter(|w| !w.is_empty());
    let first = words.next().ok_or(PmiError::EmptyLine)?;
    let cmd = match first.split_once('=') {
        Some(("cmd", name)) if !name.is_empty() => name,
        _ => return Err(PmiError::MissingCmd),
    };
    let mut line = Line::new(cmd);
    for word in words {
        match word.split_once('=') {
            Some(("", _)) => return Err(PmiError::BadField(word.to_string())),
            Some((k, v)) => line.fields.push((k.to_string(), v.to_string())),
            None => match line.fields.last_mut() {
                Some((_, v)) => {
                    v.push(' ');
                    v.push_str(word);
                }
                None => return Err(PmiError::BadField(word.to_string())),
            },
        }
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_put() {
        let l = parse_line(b"cmd=put kvsname=K key=A value=B\n").unwrap();
        assert_eq!(l.cmd, "put");
        assert_eq!(l.get("kvsname"), Some("K"));
        assert_eq!(l.get("key"), Some("A"));
        assert_eq!(l.get("value"), Some("B"));
        assert_eq!(l.get("nope"), None);
    }

    #[test]
    fn value_keeps_everything_after_first_equals() {
        let l = parse_line(b"cmd=get_result rc=0 value=(vector,(0,1,3)) x=a=b").unwrap();
        assert_eq!(l.get("value"), Some("(vector,(0,1,3))"));
        assert_eq!(l.get("x"), Some("a=b"));
    }

    #[test]
    fn empty_value_and_extra_spaces() {
        let l = parse_line(b"  cmd=put   key=k  value=\r\n").unwrap();
        assert_eq!(l.get("key"), Some("k"));
        assert_eq!(l.get("value"), Some(""));
    }

    #[test]
    fn words_without_equals_continue_the_value() {
        let l = parse_line(b"cmd=abort exitcode=3 message=it went wrong\n").unwrap();
        assert_eq!(l.get("message"), Some("it went wrong"));
        assert_eq!(l.require_i32("exitcode").unwrap(), 3);
    }

    #[test]
    fn rejects_malformed() {
        assert!(matches!(parse_line(b""), Err(PmiError::EmptyLine)));
        assert!(matches!(parse_line(b"   \n"), Err(PmiError::EmptyLine)));
        assert!(matches!(
            parse_line(b"put key=a"),
            Err(PmiError::MissingCmd)
        ));
        assert!(matches!(
            parse_line(b"cmd= key=a"),
            Err(PmiError::MissingCmd)
        ));
        assert!(matches!(
            parse_line(b"key=a cmd=put"),
            Err(PmiError::MissingCmd)
        ));
        assert!(matches!(
            parse_line(b"cmd=put =a"),
            Err(PmiError::BadField(_))
        ));
        assert!(matches!(
            parse_line(b"cmd=put stray"),
            Err(PmiError::BadField(_))
        ));
        assert!(matches!(
            parse_line(b"cmd=put key=\xff"),
            Err(PmiError::NotUtf8)
        ));
        let long = vec![b'a'; MAX_LINE + 1];
        assert!(matches!(
            parse_line(&long),
            Err(PmiError::LineTooLong { .. })
        ));
    }

    #[test]
    fn format_round_trips() {
        let l = Line::new("put")
            .with("kvsname", "kvs_1")
            .with("key", "a")
            .with("value", 12);
        assert_eq!(l.format(), "cmd=put kvsname=kvs_1 key=a value=12\n");
        assert_eq!(parse_line(l.format().as_bytes()).unwrap(), l);
    }

    #[test]
    fn require_reports_field() {
        let l = parse_line(b"cmd=init pmi_version=x").unwrap();
        assert!(matches!(
            l.require("nope"),
            Err(PmiError::MissingField { field: "nope", .. })
        ));
        assert!(matches!(
            l.require_i32("pmi_version"),
            Err(PmiError::BadNumber { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = parse_line(&bytes);
        }

        #[test]
        fn round_trip_of_safe_fields(
            cmd in "[a-z_]{1,12}",
            fields in proptest::collection::vec(("[a-zA-Z_][a-zA-Z0-9_-]{0,10}", "[!-~&&[^=]]{0,20}"), 0..6),
        ) {
            let mut l = Line::new(&cmd);
            for (k, v) in &fields {
                l = l.with(k, v);
            }
            proptest::prop_assert_eq!(parse_line(l.format().as_bytes()).unwrap(), l);
        }
    }
}
